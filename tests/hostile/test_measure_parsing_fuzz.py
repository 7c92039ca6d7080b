"""``measure``'s reading of server answers, fuzzed: it refuses or reads, never crashes.

Property tests over what a server sends: JSON (nesting checked without
recursion, against a naive recursive count), stream lines (split within their
caps as a naive split does), Retry-After values, error bodies, per-request
counts and /metrics expositions.
"""

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.measuring import measure as measuring
from goldenal.core.errors import ParseError
from goldenal.readers.vllm_bench import request_counts
from goldenal.measuring.measure import (MAX_JSON_DEPTH, ResponseLimit,
                                _impossible_counts, _json, _json_depth, _public_url,
                                _retry_after, _scrub, _server_message, _sse_lines)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from('ab"\\[]{}:, \n\u00b2'), max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet=st.sampled_from('k"[]{}\\'), max_size=4), inner,
                      max_size=4),
    max_leaves=40)


def naive_depth(value):
    if isinstance(value, list):
        return 1 + max(map(naive_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(naive_depth, value.values()), default=0)
    return 0


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_json_depth_is_the_nesting_a_recursive_count_gives(value):
    text = json.dumps(value)
    assert _json_depth(text) == naive_depth(value)
    assert _json(text, "http://x/y") == value


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_json_of_any_text_never_raises(text):
    got = _json(text)
    if got is not None:
        assert naive_depth(got) <= MAX_JSON_DEPTH


def test_deep_json_is_refused_naming_the_url_and_the_cap():
    deep = "[" * 100_000 + "]" * 100_000
    assert _json(deep) is None
    with pytest.raises(ResponseLimit, match=r"^http://h/v: JSON nested deeper than 64 levels"):
        _json(deep, "http://h/v")
    # brackets inside strings are not nesting
    assert _json(json.dumps(["[" * 1000])) == ["[" * 1000]
    assert _json_depth('["\\"[[[", {"a": [1]}]') == 3


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_retry_after_never_raises(value):
    got = _retry_after(value)
    assert got is None or got >= 0


@pytest.mark.parametrize("value", ["\u00b2", "\u0661\u0662", "\uff17", "1e3", "0x10",
                                   "Mon, 99 Foo 99999 99:99:99 GMT", "9" * 5000])
def test_odd_retry_after_values(value):
    got = _retry_after(value)
    assert got is None or got == float("inf")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_server_message_is_one_bounded_line(text):
    message = _server_message(text)
    assert "\n" not in message and len(message) <= 300


class _Response:
    def __init__(self, chunks, headers=None):
        self.chunks, self.headers = chunks, headers or {}

    async def aiter_raw(self):
        for chunk in self.chunks:
            yield chunk


def _lines(chunks):
    async def collect():
        return [line async for line in _sse_lines(_Response(chunks), "http://h/s")]

    return asyncio.run(collect())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\r", b"")), max_size=10))
def test_stream_lines_split_as_a_naive_split(chunks):
    data = b"".join(chunks)
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    assert _lines(chunks) == [line.decode("utf-8", "replace") for line in expected]


def test_stream_caps(monkeypatch):
    monkeypatch.setattr(measuring, "MAX_SSE_LINE_BYTES", 10)
    monkeypatch.setattr(measuring, "MAX_STREAM_BYTES", 40)
    assert _lines([b"0123456789\n", b"abc"]) == ["0123456789", "abc"]
    with pytest.raises(ResponseLimit, match="a line of the stream is longer than the cap of "
                                            "10 bytes"):
        _lines([b"01234", b"567890"])
    with pytest.raises(ResponseLimit, match="a line of the stream is longer"):
        _lines([b"x\n01234567890\n"])
    with pytest.raises(ResponseLimit, match="the stream is longer than the cap of 40 bytes"):
        _lines([b"012345678\n"] * 5)
    with pytest.raises(ResponseLimit, match="compressed"):
        asyncio.run(_sse_lines(_Response([], {"content-encoding": "br"}), "u").__anext__())


@settings(max_examples=300, deadline=None)
@given(k=st.integers(1, 6), data=st.data())
def test_counts_of_a_real_histogram_are_possible(k, data):
    hist = data.draw(st.lists(st.integers(0, 10 ** 6), min_size=k + 1, max_size=k + 1))
    steps = sum(hist)
    accepted = sum(i * h for i, h in enumerate(hist))
    per_pos = tuple(sum(hist[i + 1:]) for i in range(k))
    assert _impossible_counts(steps, k * steps, accepted, per_pos, k) is None
    assert request_counts({"num_spec_steps": steps, "num_draft_tokens": k * steps,
                           "num_accepted_draft_tokens": accepted,
                           "acceptance_histogram": hist}) == (steps, k * steps, accepted, per_pos)


@pytest.mark.parametrize("counts, why", [
    ((10, 30, 1_000_000, None), "1000000 accepted in 10 steps is more than K=3 per step"),
    ((10, 31, 5, None), "31 draft tokens in 10 steps is more than K=3 per step"),
    ((10, 4, 5, None), "5 accepted of 4 draft tokens"),
    ((10 ** 30, None, 0, None), f"steps {10 ** 30} is outside 0..2^63-1"),
    ((2 ** 300, None, 0, None), "steps about 2^300 is outside 0..2^63-1"),
    ((-1, None, 0, None), "steps -1 is outside 0..2^63-1"),
    ((10, None, 1.5, None), "accepted is '1.5', not an integer"),
    ((10, None, True, None), "accepted is 'True', not an integer"),
    ((10, None, 12, (5, 8, -1)), "accepted at position 2 -1 is outside 0..2^63-1"),
    ((10, None, 12, (5, 8, 5)), "per-position counts [5, 8, 5] increase"),
    ((10, None, 12, (11, 1, 0)), "11 accepted at position 0 in 10 steps"),
    ((10, None, 12, (6, 5, 0)), "per-position counts sum to 11, not 12 accepted"),
])
def test_impossible_counts_say_why(counts, why):
    assert _impossible_counts(*counts, 3) == why


@settings(max_examples=300, deadline=None)
@given(spec=st.dictionaries(st.sampled_from(
    ["num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "acceptance_histogram"]),
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10 ** 20), st.floats(), st.text(max_size=3),
              st.lists(st.one_of(st.integers(-2, 9), st.floats(), st.text(max_size=2)),
                       max_size=5))), k=st.integers(1, 4))
def test_engine_counts_and_their_check_never_raise_on_junk(spec, k):
    counts = request_counts(spec)
    if counts is not None:
        _impossible_counts(*counts, k)


@settings(max_examples=200, deadline=None)
@given(user=st.text(alphabet="abc:%", min_size=1, max_size=6),
       query=st.text(alphabet="tok=&x", min_size=1, max_size=8),
       port=st.integers(1, 65535), path=st.sampled_from(["", "/", "/v1", "/k{k}"]))
def test_public_urls_keep_no_secret(user, query, port, path):
    url = f"http://{user}@127.0.0.1:{port}{path}?{query}#frag"
    public = _public_url(url)
    assert public.startswith("http://127.0.0.1") and "@" not in public and "?" not in public
    assert "#" not in public
    assert _scrub(f"failed at {url}", url).count(query) == 0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_a_scrape_of_any_text_is_read_or_refused(text):
    from goldenal.readers.prometheus import Scrape

    try:
        Scrape("http://h/metrics", "vllm:spec_decode_num_drafts_total " + text)
    except ParseError:
        pass


def _record(i, steps, accepted, per_pos, *, attempts=1, status="ok", counts_from="engine",
            timings=None):
    from goldenal.measuring.measure import RequestRecord

    return RequestRecord(i, f"p{i}", status, attempts, drafts=steps,
                         draft_tokens=None if steps is None else 3 * steps, accepted=accepted,
                         accepted_per_position=per_pos, counts_from=counts_from,
                         timings=timings)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3)), min_size=1, max_size=6),
       st.integers(1, 4))
def test_requests_that_add_up_to_the_window_reconcile(rows, concurrency):
    from goldenal.measuring.measure import _reconcile

    records = [_record(i, s, min(a * s, 3 * s), None) for i, (s, a) in enumerate(rows)]
    steps = sum(r.drafts for r in records)
    accepted = sum(r.accepted for r in records)
    window = (steps, 3 * steps, accepted, None)
    assert _reconcile(records, window, 3, concurrency=concurrency, max_tokens=64) is None
    # beyond the noise either way: named with both figures
    high = (steps, 3 * steps, accepted + concurrency + 1, None)
    assert _reconcile(records, high, 3, concurrency=concurrency, max_tokens=64) == (
        f"the server contradicts itself: accepted tokens {accepted} by its per-request counts "
        f"(engine), {accepted + concurrency + 1} by its /metrics counters (beyond a counting "
        f"noise of {concurrency})")


def test_attempts_without_counts_may_only_add_to_the_window():
    from goldenal.measuring.measure import _reconcile

    records = [_record(0, 10, 20, (8, 7, 5), attempts=2),
               _record(1, None, None, None, status="failed", counts_from=None)]
    # a retried request and a failed one: up to 2 x 64 steps the requests do not report
    assert _reconcile(records, (10 + 1 + 128 + 1, None, 20, None), 3, concurrency=1,
                      max_tokens=64) == (
        "the server contradicts itself: steps 10 by its per-request counts (engine), 140 by "
        "its /metrics counters (beyond a counting noise of 1 and 2 attempt(s) without counts)")
    assert _reconcile(records, (10 + 1 + 128, None, 20 + 1 + 128, None), 3, concurrency=1,
                      max_tokens=64) is None
    assert _reconcile(records, (8, None, 20, None), 3, concurrency=1, max_tokens=64) == (
        "the server contradicts itself: steps 10 by its per-request counts (engine), 8 by its "
        "/metrics counters (beyond a counting noise of 1 and 2 attempt(s) without counts)")
    # per position, where both have them
    one = [_record(0, 10, 20, (8, 7, 5))]
    assert _reconcile(one, (10, 30, 20, (8, 5, 7)), 3, concurrency=1, max_tokens=64) == (
        "the server contradicts itself: accepted at position 1 7 by its per-request counts "
        "(engine), 5 by its /metrics counters (beyond a counting noise of 1)")
    # llama.cpp's timings: draft and accepted tokens
    timed = [_record(0, None, None, None, counts_from=None,
                     timings={"draft_n": 30, "draft_n_accepted": 20})]
    assert _reconcile(timed, (10, 30, 20, None), 3, concurrency=1, max_tokens=64) is None
    assert _reconcile(timed, (10, 40, 20, None), 3, concurrency=1, max_tokens=64) == (
        "the server contradicts itself: draft tokens (draft_n) 30 by its requests' timings, "
        "40 by its /metrics counters (beyond a counting noise of 3)")


def test_a_metrics_body_naming_the_families_too_often_is_refused():
    from goldenal.measuring.measure import MAX_SPEC_SERIES, _check_metrics

    line = 'vllm:spec_decode_num_drafts_total{engine="0"} 1\n'
    assert _check_metrics(line * MAX_SPEC_SERIES, "u") == line * MAX_SPEC_SERIES
    with pytest.raises(ResponseLimit, match=f"^http://h/metrics: {MAX_SPEC_SERIES + 1} "
                                            "speculative-decoding samples, past the cap of "
                                            f"{MAX_SPEC_SERIES}$"):
        _check_metrics(line * (MAX_SPEC_SERIES + 1), "http://h/metrics")


def test_scrub_blanks_user_password_and_query_values():
    assert _scrub("GET http://al:pw@h/?k=t0ken failed for al:pw (t0ken)",
                  "http://al:pw@h/", [("k", "t0ken")]) == \
        "GET http://***@h/?k=*** failed for *** (***)"


junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10 ** 20) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["choices", "delta", "content", "finish_reason", "usage", "timings",
                         "metrics", "speculative_decoding", "error", "code", "message",
                         "num_spec_steps", "num_accepted_draft_tokens",
                         "acceptance_histogram", "meta_info", "x"]), inner, max_size=4),
    max_leaves=25)


def _answer(status, content, headers=None):
    import httpx

    def handler(request):
        return httpx.Response(status, stream=httpx.ByteStream(content), headers=headers or [])

    return httpx.AsyncClient(base_url="http://u:pw@127.0.0.1:9",
                             transport=httpx.MockTransport(handler))


def _outcome(call, status, content, headers=None):
    from goldenal.measuring.measure import _Failed

    async def go():
        async with _answer(status, content, headers) as client:
            return await call(client, {"stream": True}, 5.0, "http://127.0.0.1:9")

    try:
        return asyncio.run(go())
    except (_Failed, ResponseLimit) as exc:
        assert "\n" not in str(exc) and "pw" not in str(exc)
        return exc


@settings(max_examples=100, deadline=None)
@given(events=st.lists(st.one_of(junk, st.just("[DONE]"), st.text(max_size=10)), max_size=6),
       status=st.sampled_from([200, 200, 200, 400, 429, 503]),
       retry_after=st.one_of(st.none(), st.text(max_size=6)))
def test_a_stream_of_junk_is_read_or_refused(events, status, retry_after):
    from goldenal.measuring.measure import _stream_once

    body = "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)
    # raw bytes, as a server may send them (UTF-8 in a header: "²" and the like)
    headers = [(b"retry-after", retry_after.encode("utf-8"))] if retry_after else None
    got = _outcome(_stream_once, status, body.encode(), headers)
    if isinstance(got, dict):
        assert got["usage"] is None or isinstance(got["usage"], dict)
        assert got["timings"] is None or isinstance(got["timings"], dict)
        counts = request_counts(got["spec"])
        if counts is not None:
            _impossible_counts(*counts, 3)


@settings(max_examples=100, deadline=None)
@given(doc=junk, status=st.sampled_from([200, 200, 500]))
def test_a_completion_of_junk_is_read_or_refused(doc, status):
    from goldenal.measuring.measure import _complete_once

    got = _outcome(_complete_once, status, json.dumps(doc).encode())
    assert isinstance(got, (dict, Exception))
    if isinstance(got, dict):
        assert got["meta_info"] is None or isinstance(got["meta_info"], dict)
