"""goldenal measure against a stub OpenAI-compatible server (tests/measure_stub.py).

The stub decides every request's speculative steps from its prompt, so each
AL below is the exact ratio of integers the stub's counters must give.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import goldenal
from goldenal.core.errors import ConflictError, CounterReset, ParseError, ServerError, UsageError
from goldenal.measuring.measure import MeasureError, load_prompts
from measure_stub import StubServer, counts, plan, write_prompts

TEXTS = [f"write a function that returns {i} squared" for i in range(12)]


@pytest.fixture
def prompts(tmp_path):
    return write_prompts(tmp_path / "prompts.jsonl", TEXTS, head="# a comment line\n")


@pytest.fixture
def server(request):
    engine, k, dp = getattr(request, "param", ("llamacpp", 3, 1))
    stub = StubServer(engine, k=k, dp=dp)
    try:
        yield stub
    finally:
        stub.stop()


def expected(texts, k):
    rows = [counts(t, k) for t in texts]
    steps = sum(r[0] for r in rows)
    accepted = sum(r[2] for r in rows)
    per_pos = tuple(sum(r[3][i] for r in rows) for i in range(k))
    return steps, accepted, per_pos


def run(server, out, prompts, **kw):
    args = dict(out=str(out), model="tiny-llama", draft="tiny-llama-draft", k=server.k,
                thinking="off", prompts=prompts, max_tokens=64, retry_delay=0.01)
    args.update(kw)
    return goldenal.measure(server.url, **args)


def _measure_cli(server, tmp_path, prompts, *extra):
    return _cli("measure", server.url, "--out", str(tmp_path / "run"), "--model", "m", "--k",
                "3", "--thinking", "off", "--prompts", prompts, *extra)


def test_llamacpp_detection_and_exact_counts_per_request(server, prompts, tmp_path):
    result = run(server, tmp_path / "run", prompts)
    assert result.server.engine == "llamacpp"
    assert result.server.detected_by == ("metrics prefix llamacpp",
                                         "/v1/models owned_by llamacpp", "/props", "/slots")
    assert result.server.version == "b1-stub"
    assert result.server.speculative == {"model_path": "/models/target.gguf", "total_slots": 1,
                                         "slots_speculative": [True]}
    cell, = result.cells
    steps, accepted, per_pos = expected(TEXTS, 3)
    assert (cell.drafts, cell.accepted, cell.accepted_per_position) == (steps, accepted, per_pos)
    assert cell.acceptance_length == 1 + accepted / steps
    assert cell.per_request
    for record, text in zip(cell.requests, TEXTS):
        d, t, a, pp = counts(text, 3)
        assert (record.drafts, record.draft_tokens, record.accepted) == (d, t, a)
        assert record.accepted_per_position == tuple(pp)
        assert record.timings["draft_n"] == t and record.timings["draft_n_accepted"] == a
    run_back = goldenal.load_run(tmp_path / "run")
    summary, = run_back.summary().cells
    assert (summary.steps, summary.accepted, summary.windows) == (steps, accepted, len(TEXTS))
    assert summary.engine == "llamacpp"
    assert run_back.identity["engine"] == {"name": "llamacpp", "version": "b1-stub"}
    assert run_back.warnings == () and run_back.complete
    frame = result.to_frame()
    assert list(frame["prompt"]) == [f"p{i}" for i in range(len(TEXTS))]
    assert frame["drafts"].sum() == steps


def test_paired_prompts_same_order_and_thinking_kwargs(server, prompts, tmp_path):
    run(server, tmp_path / "run", prompts, thinking="on", requests=5, seed=1000,
        ignore_eos=True)
    sent = [b["messages"][0]["content"] for b in server.requests_seen]
    assert sent == TEXTS[:5]
    assert [b["seed"] for b in server.requests_seen] == [1000, 1001, 1002, 1003, 1004]
    assert all(b["chat_template_kwargs"] == {"enable_thinking": True} and b["stream"]
               and b["max_tokens"] == 64 and b["ignore_eos"] for b in server.requests_seen)
    sampling = goldenal.load_run(tmp_path / "run").identity["sampling"]
    assert sampling == {"thinking_on": {"temperature": 0.0, "max_tokens": 64, "ignore_eos": True,
                                        "chat_template_kwargs": {"enable_thinking": True},
                                        "seed": "1000 + request index"}}


def test_other_traffic_makes_the_cell_inconsistent(server, prompts, tmp_path):
    """Counters moved by a request the requests' own timings do not know of: the cell
    is refused, naming both figures, and marked inconsistent in run.yaml."""
    import yaml

    import threading

    import httpx

    def other_client():
        httpx.post(server.url + "/v1/chat/completions", timeout=30, json={
            "messages": [{"role": "user", "content": "someone else"}]}).read()

    original = server.metrics_text
    calls = {"n": 0}

    def metrics_with_a_visitor():
        calls["n"] += 1
        if calls["n"] == 3:  # detection, first scrape, then inside request 0's window
            t = threading.Thread(target=other_client)
            t.start()
            t.join()
        return original()

    server.metrics_text = metrics_with_a_visitor
    with pytest.raises(MeasureError) as err:
        run(server, tmp_path / "run", prompts, requests=3)
    mine = sum(counts(t, 3)[1] for t in TEXTS[:3])
    visitor = counts("someone else", 3)[1]
    message = (f"the server contradicts itself: draft tokens (draft_n) {mine} by its "
               f"requests' timings, {mine + visitor} by its /metrics counters (beyond a "
               "counting noise of 3)")
    assert str(err.value) == (f"thinking off, K=3: {message}; the cell is recorded as "
                              f"inconsistent in {tmp_path / 'run' / 'run.yaml'} (fit --golden-dir "
                              "refuses it): measure it again with --replace")
    cell, = yaml.safe_load((tmp_path / "run" / "run.yaml").read_text())["cells"]
    assert cell["inconsistent"] == message


@pytest.mark.parametrize("server", [("vllm", 3, 2)], indirect=True)
def test_vllm_two_engines_summed(server, prompts, tmp_path):
    result = run(server, tmp_path / "run", prompts, concurrency=3)
    assert result.server.engine == "vllm"
    assert result.server.version == "0.20.1"
    assert result.server.detected_by[:2] == ("metrics prefix vllm", "/v1/models owned_by vllm")
    cell, = result.cells
    steps, accepted, per_pos = expected(TEXTS, 3)
    assert (cell.drafts, cell.accepted, cell.accepted_per_position) == (steps, accepted, per_pos)
    # concurrency 3: no per-request counts, the cell is the scrape pair
    assert not cell.per_request
    assert cell.files == ("metrics_off_k3_before.prom", "metrics_off_k3_after.prom")
    obs = goldenal.load_run(tmp_path / "run").observations()
    assert len(obs) == 1 and obs[0].extra["engines"] == 2
    assert (obs[0].drafts, obs[0].accepted) == (steps, accepted)


@pytest.mark.parametrize("server", [("vllm", 3, 1)], indirect=True)
def test_server_k_disagrees_is_refused_before_any_load(server, prompts, tmp_path):
    with pytest.raises(MeasureError, match=r"runs K=3 \(per-position counters on /metrics\), "
                                           r"not K=2"):
        run(server, tmp_path / "run", prompts, k=2)
    assert server.requests_seen == [] and not (tmp_path / "run").exists()


def test_llamacpp_speculative_settings_recorded_in_run_yaml(server, prompts, tmp_path):
    import yaml

    server.slots = [{"id": i, "n_ctx": 2048, "speculative": True, "is_processing": False}
                    for i in range(2)]
    run(server, tmp_path / "run", prompts, requests=2)
    doc = yaml.safe_load((tmp_path / "run" / "run.yaml").read_text())
    spec = {"model_path": "/models/target.gguf", "total_slots": 1,
            "slots_speculative": [True, True]}
    assert doc["measure"]["speculative"] == spec
    assert doc["cells"][0]["speculative"] == spec
    assert "&id" not in (tmp_path / "run" / "run.yaml").read_text()  # no YAML aliases
    served = json.loads((tmp_path / "run" / "server_off_k3.json").read_text())
    assert served["speculative"] == spec and served["responses"]["slots"] == server.slots


def test_llamacpp_without_slots_endpoint_records_what_props_says(server, prompts, tmp_path):
    server.slots = None  # llama-server --no-slots
    result = run(server, tmp_path / "run", prompts, requests=2)
    assert result.server.speculative == {"model_path": "/models/target.gguf", "total_slots": 1}
    assert result.server.detected_by[-1] == "/props"


def test_cli_llamacpp_without_speculative_decoding_is_refused_before_any_load(
        server, prompts, tmp_path):
    server.slots = [{"id": 0, "n_ctx": 4096, "speculative": False, "is_processing": False}]
    proc = _measure_cli(server, tmp_path, prompts)
    assert proc.returncode == 1
    assert proc.stderr == (f"error: {server.url} runs no speculative decoding (/slots: "
                           "speculative false on every slot), so it cannot run K=3: start "
                           "llama-server with --spec-type and a draft (e.g. "
                           "--spec-draft-model, --spec-draft-n-max 3)\n")
    assert server.requests_seen == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize("where", ["props", "slots"])
def test_cli_llamacpp_n_max_other_than_k_is_refused_before_any_load(server, prompts,
                                                                     tmp_path, where):
    # releases with --draft-max report it as "speculative.n_max" among the request defaults
    # (/props) and a busy slot's params (/slots)
    if where == "props":
        server.props_params = {"speculative.n_max": 5, "speculative.n_min": 0,
                               "speculative.p_min": 0.75}
    else:
        server.slots = [{"id": 0, "n_ctx": 4096, "speculative": True, "is_processing": True,
                         "params": {"speculative.n_max": 5, "speculative.n_min": 0}}]
    proc = _measure_cli(server, tmp_path, prompts)
    assert proc.returncode == 1
    assert proc.stderr == (f"error: {server.url} runs K=5 (/{where} speculative.n_max), not "
                           "K=3: restart it with K=3 or pass --k 5\n")
    assert server.requests_seen == [] and not (tmp_path / "run").exists()


def test_llamacpp_n_max_equal_to_k_is_recorded(server, prompts, tmp_path):
    server.props_params = {"speculative.n_max": 3, "speculative.n_min": 0,
                           "speculative.p_min": 0.75}
    result = run(server, tmp_path / "run", prompts, requests=2)
    assert result.server.speculative == {
        "model_path": "/models/target.gguf", "total_slots": 1, "speculative.n_max": 3,
        "speculative.n_min": 0, "speculative.p_min": 0.75, "slots_speculative": [True]}


def test_llamacpp_k_disagrees_after_the_first_request(server, prompts, tmp_path):
    with pytest.raises(MeasureError, match=r"thinking off, K=4: the server drafted 3 positions "
                                           r"per step \(its per-position counters after "
                                           r"request 0, p0\), not K=4; nothing written"):
        run(server, tmp_path / "run", prompts, k=4)
    assert len(server.requests_seen) == 1  # not the whole workload
    assert not (tmp_path / "run").exists()


def test_retries_then_success(server, prompts, tmp_path):
    server.fail[TEXTS[2]] = 2
    server.truncate[TEXTS[4]] = 1
    result = run(server, tmp_path / "run", prompts, retries=2)
    cell, = result.cells
    assert [r.attempts for r in cell.requests][:5] == [1, 1, 3, 1, 2]
    assert cell.failed == 0 and result.warnings == ()
    steps, accepted, _ = expected(TEXTS, 3)
    assert (cell.drafts, cell.accepted) == (steps, accepted)


def test_bounded_retries_then_recorded_as_failed(server, prompts, tmp_path):
    server.fail[TEXTS[1]] = -1
    result = run(server, tmp_path / "run", prompts, retries=1)
    cell, = result.cells
    bad = cell.requests[1]
    assert (bad.status, bad.attempts) == ("failed", 2)
    assert bad.error == "failed after 2 attempt(s): HTTP 500: injected failure"
    assert result.warnings == ("thinking off, K=3: 1 of 12 requests failed (1 after 1 "
                               "retries); recorded as failed",)
    obs = goldenal.load_run(tmp_path / "run").observations()
    assert len(obs) == 11
    assert any("request 1 failed" in p.message and not p.refused for p in obs.problems)


# llama-server's answer to a prompt longer than its context (a real llama-server of
# llama-cpp-python 0.3.36, --ctx-size 1024)
TOO_LONG = (400, {"error": {"code": 400, "message": "request (9038 tokens) exceeds the "
                            "available context size (1024 tokens), try increasing it",
                            "type": "exceed_context_size_error", "n_prompt_tokens": 9038,
                            "n_ctx": 1024}}, {})


@pytest.mark.parametrize("status, doc, message", [
    (*TOO_LONG[:2], "HTTP 400: request (9038 tokens) exceeds the available context size "
                    "(1024 tokens), try increasing it"),
    (401, {"error": {"message": "Invalid API Key", "type": "authentication_error"}},
     "HTTP 401: Invalid API Key"),
    (403, {"detail": "Forbidden"}, "HTTP 403: Forbidden"),
    (404, {"object": "error", "message": "The model `x` does not exist."},
     "HTTP 404: The model `x` does not exist."),
    (422, {"detail": [{"loc": ["body", "messages"], "msg": "field required"}]},
     'HTTP 422: [{"loc": ["body", "messages"], "msg": "field required"}]'),
])
def test_errors_a_retry_cannot_cure_are_not_retried(server, prompts, tmp_path, status, doc,
                                                    message):
    server.fail[TEXTS[1]] = -1
    server.fail_with[TEXTS[1]] = (status, doc, {})
    result = run(server, tmp_path / "run", prompts, retries=2)
    bad = result.cells[0].requests[1]
    assert (bad.status, bad.attempts) == ("failed", 1)
    assert bad.error == f"failed, not retried (a retry fails the same way): {message}"
    assert sum(b["messages"][-1]["content"] == TEXTS[1] for b in server.requests_seen) == 1
    assert result.warnings == ("thinking off, K=3: 1 of 12 requests failed (1 not retried, "
                               "as a retry would fail the same way); recorded as failed",)


def test_a_long_error_message_is_bounded(server, prompts, tmp_path):
    server.fail[TEXTS[0]] = -1
    server.fail_with[TEXTS[0]] = (400, {"error": {"message": "x " * 1000}}, {})
    bad = run(server, tmp_path / "run", prompts).cells[0].requests[0]
    message = bad.error.split("HTTP 400: ", 1)[1]
    assert message == "x " * 149 + "x…" and len(message) == 300


@pytest.mark.parametrize("status", [408, 425, 429, 500, 502, 503])
def test_errors_a_retry_can_cure_are_retried(server, prompts, tmp_path, status):
    server.fail[TEXTS[2]] = 2
    server.fail_with[TEXTS[2]] = (status, {"error": {"message": "busy"}}, {})
    cell, = run(server, tmp_path / "run", prompts, retries=2).cells
    assert (cell.requests[2].status, cell.requests[2].attempts) == ("ok", 3)


def test_retry_after_is_honoured(server, prompts, tmp_path):
    import time

    server.fail[TEXTS[0]] = 1
    server.fail_with[TEXTS[0]] = (429, {"error": {"message": "slow down"}},
                                  {"Retry-After": "1"})
    t0 = time.perf_counter()
    cell, = run(server, tmp_path / "run", prompts, requests=1, retry_delay=0.01).cells
    assert time.perf_counter() - t0 >= 1.0
    assert (cell.requests[0].status, cell.requests[0].attempts) == ("ok", 2)


def test_retry_after_past_the_cap_fails_at_once(server, prompts, tmp_path):
    server.fail[TEXTS[0]] = -1
    server.fail_with[TEXTS[0]] = (503, {"error": {"message": "overloaded"}},
                                  {"Retry-After": "3600"})
    bad = run(server, tmp_path / "run", prompts).cells[0].requests[0]
    assert (bad.status, bad.attempts) == ("failed", 1)
    assert bad.error == ("failed, not retried (a retry fails the same way): HTTP 503: "
                         "overloaded (Retry-After 3600 s is past the 60 s cap)")


@pytest.mark.parametrize("value, seconds", [("7", 7.0), ("", None), ("soon", None),
                                            ("-3", None), ("Wed, 21 Oct 2015 07:28:00 GMT",
                                                           0.0)])
def test_retry_after_values(value, seconds):
    from goldenal.measuring.measure import _retry_after

    assert _retry_after(value) == seconds


def test_an_error_event_in_a_stream_with_a_4xx_code_is_not_retried():
    from goldenal.measuring.measure import _stream_error

    final = _stream_error({"code": 400, "message": "bad  grammar", "type": "x"})
    again = _stream_error({"code": 500, "message": "slot died"})
    assert (str(final), final.retryable) == ("server error: bad grammar (code 400)", False)
    assert (str(again), again.retryable) == ("server error: slot died", True)


def test_cli_prompt_too_long_fails_at_once_with_the_servers_message(server, prompts, tmp_path):
    for t in TEXTS[:2]:
        server.fail[t] = -1
        server.fail_with[t] = TOO_LONG
    proc = _measure_cli(server, tmp_path, prompts, "--requests", "2")
    assert proc.returncode == 1
    assert proc.stderr == ("error: thinking off, K=3: every request failed (failed, not "
                           "retried (a retry fails the same way): HTTP 400: request (9038 "
                           "tokens) exceeds the available context size (1024 tokens), try "
                           "increasing it); nothing written for this cell\n")
    assert len(server.requests_seen) == 2


def test_every_request_failing_writes_nothing(server, prompts, tmp_path):
    for t in TEXTS:
        server.fail[t] = -1
    with pytest.raises(MeasureError, match="every request failed"):
        run(server, tmp_path / "run", prompts, retries=0, requests=3)
    assert os.listdir(tmp_path) == ["prompts.jsonl"]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_counter_reset_mid_run_refuses_the_window(server, prompts, tmp_path, concurrency):
    server.completed = 0
    server.reset_after = 5
    with pytest.raises(CounterReset, match="counter reset between scrapes: "
                                           "llamacpp:spec_decode_num_"):
        run(server, tmp_path / "run", prompts, concurrency=concurrency)
    # nothing half-written: no run directory, no temporary directory left beside it
    assert os.listdir(tmp_path) == ["prompts.jsonl"]


def test_a_restart_that_refuses_scrapes_for_a_moment_is_a_counter_reset(server, prompts,
                                                                        tmp_path):
    # a real restart: /metrics answers nothing for a moment, then counts from zero.  The
    # scrape is retried like a request, so the cell is refused as a restart (exit 1), not
    # lost to one failed scrape
    server.reset_after, server.down_on_reset = 5, 2
    with pytest.raises(CounterReset, match=r"thinking off, K=3, after request 4 \(p4\): "
                                           "counter reset between scrapes"):
        run(server, tmp_path / "run", prompts)
    assert os.listdir(tmp_path) == ["prompts.jsonl"]


def test_a_server_gone_for_good_names_the_cell_and_writes_nothing(server, prompts, tmp_path):
    server.reset_after, server.down_on_reset = 5, 100
    with pytest.raises(ServerError, match=r"/metrics answered RemoteProtocolError: .* during "
                                          r"thinking off, K=3 \(3 attempts\): the server went "
                                          "away; nothing written for this cell"):
        run(server, tmp_path / "run", prompts)
    assert os.listdir(tmp_path) == ["prompts.jsonl"]


def test_timeout_bounds_the_whole_request_not_each_read(server, prompts, tmp_path):
    # a chunk every 20 ms never trips a per-read timeout; each request (5 or more chunks)
    # must still stop at 0.05 s, be retried, then count as failed
    server.delay = 0.02
    with pytest.raises(MeasureError, match=r"every request failed \(failed after 2 "
                                           r"attempt\(s\): timed out after 0.05 s\)"):
        run(server, tmp_path / "run", prompts, requests=2, timeout=0.05, retries=1)
    assert os.listdir(tmp_path) == ["prompts.jsonl"]


@pytest.mark.parametrize("server", [("vllm", 3, 1)], indirect=True)
def test_vllm_restart_seen_by_created_time(server, prompts, tmp_path):
    server.reset_after = 3
    with pytest.raises(CounterReset, match="restarted"):
        run(server, tmp_path / "run", prompts)


def test_cells_added_atomically_and_conflicts(server, prompts, tmp_path):
    out = tmp_path / "run"
    run(server, out, prompts)
    before = (out / "run.yaml").read_text()
    with pytest.raises(ConflictError, match="already has the cell thinking off, K=3"):
        run(server, out, prompts)
    # a refused cell leaves the run as it was
    server.reset_after = server.completed + 2
    with pytest.raises(CounterReset):
        run(server, out, prompts, thinking="on")
    assert (out / "run.yaml").read_text() == before
    assert sorted(os.listdir(out)) == ["metrics_off_k3_after.prom", "metrics_off_k3_before.prom",
                                      "requests_off_k3.jsonl", "run.yaml", "server_off_k3.json"]
    server.reset_after = None
    run(server, out, prompts, thinking="on")
    measured = goldenal.load_run(out)
    assert sorted(measured.cells) == [("off", 3), ("on", 3)]
    # the paired design: another prompt set is refused
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"prompt": "something else"}) + "\n")
    with pytest.raises(UsageError, match="another prompt set"):
        run(server, out, str(other), replace=True)


def test_run_directory_made_as_mkdir_p_makes_it(server, prompts, tmp_path):
    # the README's loop writes --out runs/NAME into a fresh checkout, and a run is shared:
    # missing parents are made, and the run directory is not left private (mkdtemp's 0700)
    old = os.umask(0o022)
    try:
        out = tmp_path / "runs" / "tiny" / "run"
        run(server, out, prompts, requests=2)
        assert oct(os.stat(out).st_mode & 0o777) == "0o755"
        assert oct(os.stat(tmp_path / "runs").st_mode & 0o777) == "0o755"
        os.umask(0o077)
        run(server, tmp_path / "private", prompts, requests=2)
        assert oct(os.stat(tmp_path / "private").st_mode & 0o777) == "0o700"
    finally:
        os.umask(old)
    (tmp_path / "afile").write_text("")
    with pytest.raises(UsageError, match=f"cannot create --out: {tmp_path}/afile is not a "
                                         "writable directory"):
        run(server, tmp_path / "afile" / "sub" / "run", prompts)


def test_openai_base_url_with_v1_names_the_same_server(server, prompts, tmp_path):
    result = goldenal.measure(server.url + "/v1/", out=str(tmp_path / "run"), model="m",
                              k=3, thinking="off", prompts=prompts, requests=2)
    assert result.server.url == server.url and result.cells[0].drafts > 0


def test_llamacpp_counters_past_a_million_are_refused_as_rounded(server, prompts, tmp_path):
    # llama-server prints its totals with 6 significant digits (server-task.cpp)
    server.base = 1_234_567
    with pytest.raises(MeasureError) as err:
        run(server, tmp_path / "run", prompts)
    assert str(err.value) == (
        f"{server.url}: before any load: llamacpp:spec_decode_num_accepted_tokens_total is "
        "1.23457e+06: llama-server prints its counters with 6 significant digits, so from "
        "1,000,000 on their differences are rounded; restart the server (its counters start "
        "at zero) to measure from exact counts; nothing written for this cell")
    assert server.requests_seen == [] and os.listdir(tmp_path) == ["prompts.jsonl"]
    # counters that pass 1,000,000 during the cell: refused at the first window they
    # make inexact (the draft tokens cross first), with the reader's own words
    server.base = 1_000_000 - 40
    with pytest.raises(MeasureError) as err:
        run(server, tmp_path / "run", prompts)
    assert str(err.value) == (
        "thinking off, K=3, after request 1 (p1): llamacpp:spec_decode_num_draft_tokens_total "
        "is 1.00002e+06: llama-server prints its counters with 6 significant digits, so "
        "from 1,000,000 on their differences are rounded; restart the server (its counters "
        "start at zero) to measure from exact counts; nothing written for this cell")
    assert len(server.requests_seen) == 2 and os.listdir(tmp_path) == ["prompts.jsonl"]


def test_an_engine_the_server_contradicts_is_refused(server, prompts, tmp_path):
    with pytest.raises(UsageError, match=f"^--engine vllm, but nothing at {server.url} says "
                                         "vllm: it looks like llamacpp \\(metrics prefix "
                                         "llamacpp, /v1/models owned_by llamacpp\\); pass "
                                         "--engine llamacpp or --engine auto$"):
        run(server, tmp_path / "run", prompts, engine="vllm")
    assert server.requests_seen == [] and os.listdir(tmp_path) == ["prompts.jsonl"]
    assert run(server, tmp_path / "run", prompts, engine="llamacpp",
               requests=2).server.engine == "llamacpp"


def test_unreachable_server(prompts, tmp_path):
    stub = StubServer()
    url = stub.url
    stub.stop()
    with pytest.raises(ServerError, match=f"cannot reach {url}: ConnectError"):
        goldenal.measure(url, out=str(tmp_path / "run"), model="m", k=3, thinking="off",
                         prompts=prompts)


def test_metrics_off_is_one_clear_error(server, prompts, tmp_path):
    server.metrics_enabled = False
    with pytest.raises(ServerError, match=r"/metrics answered 501: .*needs --metrics"):
        run(server, tmp_path / "run", prompts)


@pytest.mark.parametrize("kwargs, message", [
    ({"k": [1, 2]}, "a server runs one K"),
    ({"k": 0}, "`k` must be a positive integer"),
    ({"thinking": "maybe"}, "`thinking` must be 'on' or 'off'"),
    ({"concurrency": 0}, "`concurrency` must be a positive integer"),
    ({"requests": 99}, "`requests` is 99 but the prompt set has only 12 prompts"),
    ({"engine": "tgi"}, "`engine` must be auto or one of"),
])
def test_bad_arguments(server, prompts, tmp_path, kwargs, message):
    with pytest.raises(UsageError, match=message):
        run(server, tmp_path / "run", prompts, **kwargs)


@pytest.mark.parametrize("text, message", [
    ('{"prompt": "a"}\n{"prompt": \n', r":2: not valid JSON"),
    ('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n', r":2: id 'a' repeats line 1"),
    ('{"messages": [{"role": "user"}]}\n', r":1: \"messages\" must be"),
    ('[1, 2]\n', r":1: expected an object"),
    ('\n# only comments\n', r"no prompts in the file"),
])
def test_prompt_file_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(ParseError, match=message):
        load_prompts(path)


def test_messages_prompts(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": 7, "messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}) + "\n")
    prompt, = load_prompts(path)
    assert prompt.id == "7"
    assert prompt.payload() == [{"content": "be brief", "role": "system"},
                                {"content": "hi", "role": "user"}]


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "goldenal", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_cli_measure_then_ingest_fit_verify(server, prompts, tmp_path):
    out = tmp_path / "run"
    p = _cli("measure", server.url, "--out", str(out), "--model", "tiny-llama", "--draft",
             "tiny-llama-draft", "--method", "draft", "--curve-id", "tiny_llama_draft",
             "--k", "3", "--thinking", "off", "--prompts", prompts, "--max-tokens", "64")
    steps, accepted, _ = expected(TEXTS, 3)
    assert p.returncode == 0, p.stderr
    head, stats = p.stdout.splitlines()
    assert head == (f"thinking off  K=3  AL {1 + accepted / steps:.4f}  ({accepted} "
                    f"accepted / {steps} steps)  12 requests, 0 failed  per-request counts")
    tokens = steps + accepted  # one token per step, plus every accepted draft
    assert re.fullmatch(r"  p50/p90/p99: latency [\d.]+/[\d.]+/[\d.]+ s  ttft "
                        r"[\d.]+/[\d.]+/[\d.]+ s  output [\d.]+/[\d.]+/[\d.]+ tok/s per "
                        rf"request; {tokens} tokens in [\d.]+ s = [\d.]+ tok/s", stats), stats
    # piped: no progress bar on stderr
    assert p.stderr.startswith(f"wrote {out} (llamacpp; metrics prefix llamacpp")
    assert "req/s" not in p.stderr and "\r" not in p.stderr
    ingest = _cli("ingest", str(out))
    assert ingest.returncode == 0, ingest.stderr
    assert f"AL {1 + accepted / steps:.4f} pooled over {steps} steps, 12 window(s)" \
        in ingest.stdout + ingest.stderr
    fit = _cli("fit", str(out), "--golden-dir", str(tmp_path / "golden"), "--seed", "1")
    assert fit.returncode == 0, fit.stderr
    assert "bootstrap" in fit.stdout
    dist = json.loads((tmp_path / "golden" / "tiny_llama_draft.distribution.json").read_text())
    assert json.dumps(dist).count(str(steps)) >= 1
    verify = _cli("verify", str(out), "--target", f"{1 + accepted / steps:.2f}", "--k", "3")
    assert verify.returncode in (0, 1), verify.stderr
    assert verify.stdout.startswith(("hit:", "missed:"))


def _on_a_terminal(args, rows_cols=None):
    """Run the CLI with stderr on a fresh pty (unsized, as ``script`` or ``docker -t`` give
    one, unless ``rows_cols``); returns (exit code, what the terminal showed)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    if rows_cols:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *rows_cols, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "goldenal", *args], stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        shown += chunk
    proc.communicate(timeout=60)
    os.close(master)
    return proc.returncode, shown.decode("utf-8", "replace")


@pytest.mark.parametrize("rows_cols", [None, (30, 100)])
def test_progress_bar_on_a_terminal(server, prompts, tmp_path, rows_cols):
    server.delay = 0.04  # slower than tqdm's 0.1 s refresh
    code, shown = _on_a_terminal(["measure", server.url, "--out", str(tmp_path / "run"),
                                  "--model", "m", "--k", "3", "--thinking", "off", "--prompts",
                                  prompts, "--requests", "3"], rows_cols)
    assert code == 0
    assert "thinking off, K=3:   0%|" in shown and "| 3/3 [" in shown
    width = max(len(part) for part in shown.split("\r") if "| 3/3 [" in part)
    assert (rows_cols[1] if rows_cols else 80) - 1 <= width <= (rows_cols[1] if rows_cols
                                                                 else 80)


def test_ctrl_c_mid_cell_leaves_no_run_that_looks_complete(server, prompts, tmp_path):
    import signal
    import time

    out = tmp_path / "run"
    base = ["measure", server.url, "--out", str(out), "--model", "m", "--k", "3",
            "--prompts", prompts, "--requests", "2"]
    assert _cli(*base, "--thinking", "off").returncode == 0
    before = (out / "run.yaml").read_text()
    server.delay = 0.05
    proc = subprocess.Popen([sys.executable, "-m", "goldenal", *base, "--thinking", "on"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # two requests from the first call, then the first of this one's
    while len(server.requests_seen) < 3 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and stdout == ""
    assert stderr == (f"interrupted: the cell being measured was not written to {out} (cells "
                      "finished before it were)\n")
    # the run is the one before, with no temporary directory beside it or in it
    assert (out / "run.yaml").read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["prompts.jsonl", "run"]
    assert not [name for name in os.listdir(out) if name.startswith(".")]


def test_cli_unreachable_is_one_line_exit_2(prompts, tmp_path):
    stub = StubServer()
    url = stub.url
    stub.stop()
    p = _cli("measure", url, "--out", str(tmp_path / "run"), "--model", "m", "--k", "3",
             "--thinking", "off", "--prompts", prompts)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"error: cannot reach {url}")
    assert p.stdout == ""


def test_cli_refused_cell_exit_1_and_conflict_exit_3(server, prompts, tmp_path):
    base = ("measure", server.url, "--out", str(tmp_path / "run"), "--model", "m", "--k", "4",
            "--thinking", "off", "--prompts", prompts, "--max-tokens", "64")
    p = _cli(*base)
    assert p.returncode == 1 and "not K=4" in p.stderr
    ok = list(base)
    ok[ok.index("4")] = "3"
    assert _cli(*ok).returncode == 0
    again = _cli(*ok)
    assert again.returncode == 3 and "--replace" in again.stderr


def test_cli_k_list_needs_a_url_per_k(prompts, tmp_path):
    p = _cli("measure", "http://127.0.0.1:9", "--out", str(tmp_path / "run"), "--model", "m",
             "--k", "1,2", "--thinking", "off", "--prompts", prompts)
    assert p.returncode == 2 and "a server runs one K" in p.stderr


def test_k_list_with_a_url_per_k(server, prompts, tmp_path):
    """`k=[3, 2]` with {k} in the URL: each K its own server; a refused K keeps the others."""
    url = server.url + "/k{k}"
    with pytest.raises(MeasureError, match="thinking off, K=2: the server drafted 3 positions"):
        goldenal.measure(url, out=str(tmp_path / "r"), model="m", k=[3, 2], thinking="off",
                         prompts=prompts, max_tokens=16)
    measured = goldenal.load_run(tmp_path / "r")
    assert sorted(measured.cells) == [("off", 3)]
    assert measured.identity["measure"]["url"] == url


def test_one_measure_per_k_makes_a_curve(prompts, tmp_path):
    """The documented loop: one server per K, one measure per K, one run directory."""
    for k in (1, 2):
        stub = StubServer("llamacpp", k=k)
        try:
            goldenal.measure(stub.url, out=str(tmp_path / "r"), model="m", k=k,
                             thinking="off", prompts=prompts, max_tokens=16)
        finally:
            stub.stop()
    measured = goldenal.load_run(tmp_path / "r")
    assert sorted(measured.cells) == [("off", 1), ("off", 2)]
    for k in (1, 2):
        steps, accepted, _ = expected(TEXTS, k)
        cell, = measured.observations(k=k).summary().cells
        assert (cell.steps, cell.accepted) == (steps, accepted)


# llama-server's exposition, shaped as tools/server/server-task.cpp `to_metrics` writes it
# (llama.cpp vendored in llama-cpp-python 0.3.36): no labels, the per-position family last
LLAMACPP_SCRAPE = """\
# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total {tokens}
# HELP llamacpp:spec_decode_num_accepted_tokens_total Speculative: Total draft tokens accepted
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total {accepted}
# HELP llamacpp:spec_decode_num_drafts_total Speculative: Total verification steps
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total {drafts}
# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per llama_decode() call
# TYPE llamacpp:n_busy_slots_per_decode gauge
llamacpp:n_busy_slots_per_decode 1
"""
PER_POS = """\
# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
""" + "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{{{position="{i}"}}}} '
              f'{{p{i}}}\n' for i in range(3))


def test_ingest_llamacpp_scrapes(tmp_path):
    """The measured example of docs/engines.md §5.4: 110 steps, 330 drafted, 187 accepted (81/57/49)."""
    before = tmp_path / "metrics_before.prom"
    after = tmp_path / "metrics_after.prom"
    # a fresh server: no per-position family yet
    before.write_text(LLAMACPP_SCRAPE.format(tokens=0, accepted=0, drafts=0))
    after.write_text(LLAMACPP_SCRAPE.format(tokens=330, accepted=187, drafts=110)
                     + PER_POS.format(p0=81, p1=57, p2=49))
    obs = goldenal.ingest([before, after])
    assert len(obs) == 1 and obs.complete
    o = obs[0]
    assert (o.engine, o.format, o.k, o.drafts, o.draft_tokens, o.accepted,
            o.accepted_per_position) == ("llamacpp", "llamacpp-prometheus", 3, 110, 330, 187,
                                         (81, 57, 49))
    assert o.acceptance_length == 1 + 187 / 110
    # a restart: counters lower than before
    before.write_text(LLAMACPP_SCRAPE.format(tokens=400, accepted=200, drafts=120)
                      + PER_POS.format(p0=90, p1=60, p2=50))
    obs = goldenal.ingest([before, after])
    assert len(obs) == 0 and not obs.complete
    assert "counter reset between scrapes: llamacpp:spec_decode_num_draft_tokens_total{} " \
           "went 400 -> 330" in obs.problems[0].message


@pytest.mark.parametrize("record, message", [
    ({"drafts": 5, "accepted": 4, "accepted_per_position": [3, 1]}, None),
    ({"drafts": 5, "accepted": 4, "accepted_per_position": [3, 3]},
     r"accepted_per_position \[3, 3\] disagrees with 4 accepted in 5 steps"),
    ({"drafts": 2, "accepted": 4, "accepted_per_position": [3, 1]}, "disagrees"),
    ({"drafts": "5", "accepted": 4}, "drafts/accepted are not counts"),
    ({"drafts": 5, "accepted": 4, "accepted_per_position": [4], "k": 2}, "1 positions, K=2"),
])
def test_request_records_reader(tmp_path, record, message):
    path = tmp_path / "requests_off_k2.jsonl"
    base = {"schema": "goldenal.measure/request-1", "request": 0, "engine": "llamacpp",
            "status": "ok"}
    path.write_text(json.dumps({**base, **record}) + "\n" + "{broken\n")
    obs = goldenal.ingest(path)
    assert "not valid JSON" in obs.problems[-1].message and obs.problems[-1].line == 2
    if message is None:
        assert len(obs) == 1 and obs[0].request == "0" and obs[0].engine == "llamacpp"
        assert obs[0].accepted_per_position == (3, 1)
    else:
        assert len(obs) == 0
        assert re.search(message, obs.problems[0].message)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=20), min_size=1, max_size=8))
def test_request_records_round_trip(tmp_path_factory, steps_per_request):
    """Records measure writes are read back with exactly the counts they hold."""
    from goldenal.measuring.measure import RequestRecord

    k = 4
    path = tmp_path_factory.mktemp("rt") / "requests_on_k4.jsonl"
    lines = []
    for i, accepted in enumerate(steps_per_request):
        per_pos = tuple(sum(1 for a in accepted if a > j) for j in range(k))
        record = RequestRecord(i, f"p{i}", "ok", 1, drafts=len(accepted),
                               draft_tokens=k * len(accepted), accepted=sum(accepted),
                               accepted_per_position=per_pos, counts_from="test")
        lines.append(json.dumps(record.to_record("llamacpp", k)))
    path.write_text("\n".join(lines) + "\n")
    obs = goldenal.ingest(path)
    assert obs.complete and len(obs) == len(steps_per_request)
    for o, accepted in zip(obs, steps_per_request):
        assert (o.drafts, o.accepted, o.k) == (len(accepted), sum(accepted), k)
        assert sum(o.accepted_per_position) == o.accepted


@pytest.mark.parametrize("seed, why", [
    (None, "a llama-server started with a fixed --seed replays one synthetic accept/reject "
           "sequence for every request without a seed of its own; pass --seed N so that "
           "request i carries N+i"),
    (7, "the same prompt sent repeatedly, or a server that ignores the request's seed")])
def test_identical_requests_are_flagged_as_one_replayed_sequence(server, tmp_path, seed, why):
    # the stub's counts are a function of the prompt text, as a llama-server's synthetic
    # draws are of the seed: one text four times is one sequence replayed four times
    text = TEXTS[0]
    steps, drafted, accepted, _ = counts(text, 3)
    assert 0 < accepted < drafted
    path = tmp_path / "same.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "prompt": text}) + "\n"
                            for i in range(4)))
    result = run(server, tmp_path / "run", str(path), seed=seed)
    assert result.warnings == (f"thinking off, K=3: all 4 requests drafted {drafted} tokens "
                               f"and accepted {accepted}: one replayed sequence, not "
                               f"independent draws ({why})",)
    assert result.cells[0].warnings == result.warnings


def test_distinct_or_fully_accepted_requests_are_not_flagged(server, prompts, tmp_path):
    assert run(server, tmp_path / "a", prompts).warnings == ()
    from goldenal.measuring.measure import RequestRecord, _replay_warning

    def records(n, accepted):
        return [RequestRecord(i, f"p{i}", "ok", 1, drafts=10, draft_tokens=30,
                              accepted=accepted) for i in range(n)]

    assert _replay_warning(records(5, 30), "cell", seeded=False) is None   # all accepted
    assert _replay_warning(records(5, 0), "cell", seeded=False) is None    # none accepted
    assert _replay_warning(records(2, 20), "cell", seeded=False) is None   # too few to tell
    assert _replay_warning(records(3, 20), "cell", seeded=False).startswith(
        "cell: all 3 requests drafted 30 tokens and accepted 20")


@pytest.mark.parametrize("concurrency", [1, 2, 4])
@pytest.mark.parametrize("server", [("sglang", 3, 1)], indirect=True)
def test_sglang_per_request_meta_info(server, prompts, tmp_path, concurrency):
    """SGLang 0.5.23: non-streaming requests with return_meta_info, counts per request at
    any concurrency, equal to the truth, although most requests' histograms are shorter
    than K+1 (grown on demand); the cell is the sum of its requests."""
    # requests no step of which accepted all K drafts: histograms shorter than K+1
    short = [t for t in (f"short {i}" for i in range(200)) if max(plan(t, 3)) < 3][:4]
    texts = TEXTS + short
    assert len(short) == 4 and min(max(plan(t, 3)) for t in short) < 3
    path = write_prompts(tmp_path / "prompts.jsonl", texts)
    result = run(server, tmp_path / "run", path, concurrency=concurrency)
    assert result.server.engine == "sglang" and result.server.version == "0.5.23"
    assert result.server.speculative["speculative_num_steps"] == 3
    assert all(not b["stream"] and b["return_meta_info"] and b["return_spec_tokens_details"]
               for b in server.requests_seen)
    cell, = result.cells
    steps, accepted, per_pos = expected(texts, 3)
    assert (cell.drafts, cell.accepted, cell.accepted_per_position) == (steps, accepted, per_pos)
    assert cell.per_request and result.warnings == ()
    for record, text in zip(cell.requests, texts):
        d, t, a, pp = counts(text, 3)
        assert (record.drafts, record.draft_tokens, record.accepted,
                record.accepted_per_position) == (d, t, a, tuple(pp))
        assert record.counts_from == "SGLang per-request meta_info" and record.ttft is None
    summary, = goldenal.load_run(tmp_path / "run").summary().cells
    assert (summary.steps, summary.accepted, summary.windows) == (steps, accepted, len(texts))
    assert summary.engine == "sglang"


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("server", [("sglang", 3, 1)], indirect=True)
def test_sglang_request_that_accepted_nothing(server, tmp_path, concurrency):
    """A request whose every step accepted no draft: histogram [steps], per-position
    counts all zero, and the cell keeps its per-position counts."""
    texts = [t for t in (f"zero {i}" for i in range(20000)) if max(plan(t, 3)) == 0][:1]
    assert texts
    texts += TEXTS[:3]
    path = write_prompts(tmp_path / "zero.jsonl", texts, prefix="z")
    cell, = run(server, tmp_path / "run", path, concurrency=concurrency).cells
    first = cell.requests[0]
    assert (first.accepted, first.accepted_per_position) == (0, (0, 0, 0))
    assert cell.accepted_per_position == expected(texts, 3)[2]


@pytest.mark.parametrize("server", [("sglang", 3, 1)], indirect=True)
@pytest.mark.parametrize("release", ["2026-04", "2025", "completion-only"])
def test_sglang_older_releases(server, prompts, tmp_path, release):
    """Older SGLang spellings are still read: the aliases of 2026-04, the
    spec_accept_token_num of 2025 (no histogram), and completion tokens alone."""
    server.sglang_release = release
    cell, = run(server, tmp_path / "run", prompts, requests=3).cells
    for record, text in zip(cell.requests, TEXTS):
        d, t, a, pp = counts(text, 3)
        # without a draft count (older releases) the accepted drafts are tokens - steps
        assert (record.drafts, record.draft_tokens, record.accepted) == (
            d, None if release == "completion-only" else t, a)
        assert record.accepted_per_position == (tuple(pp) if release == "2026-04" else None)


def test_sglang_counts_from_spec_tokens_details_and_streams():
    """sglext.spec_tokens_details (0.5.23 protocol.py:456, utils.py:310) gives the same
    counts, as a dict or a one-element list; meta_info is preferred when both exist."""
    from goldenal.readers.sglang import request_counts, spec_details

    details = {"spec_accept_rate": 0.5, "spec_accept_length": 2.5, "spec_cap_length": 0.0,
               "spec_block_accept_length": 0.0, "spec_num_correct_drafts": 6,
               "spec_num_proposed_drafts": 12, "spec_verify_ct": 4,
               "spec_correct_drafts_histogram": [1, 1, 1, 1], "spec_cap_lens_histogram": []}
    chunk = {"object": "chat.completion.chunk", "choices": [],
             "sglext": {"spec_tokens_details": details}}
    assert spec_details(chunk) is details
    assert spec_details({"choices": [], "sglext": {"spec_tokens_details": [details]}}) \
        is details
    meta = {**details, "spec_verify_ct": 5, "spec_correct_drafts_histogram": [2, 1, 1, 1],
            "spec_num_proposed_drafts": 15}
    assert spec_details({"choices": [{"meta_info": meta}], "sglext": chunk["sglext"]}) is meta
    assert request_counts(details, 3) == (4, 12, 6, (3, 2, 1), False)
    # the zeros an absent count becomes are no steps
    assert request_counts({**details, "spec_verify_ct": 0}, 3) is None


def test_sglang_counts_refuse_what_does_not_add_up():
    from goldenal.readers.sglang import InconsistentCounts, request_counts

    meta = {"spec_verify_ct": 4, "spec_num_correct_drafts": 5, "spec_num_proposed_drafts": 12,
            "spec_correct_drafts_histogram": [1, 1, 1, 1], "completion_tokens": 9}
    with pytest.raises(InconsistentCounts, match=r"counts 6 accepted drafts, the request 5"):
        request_counts(meta, 3)                                # 0+1+2+3 = 6 != 5
    assert request_counts({**meta, "spec_correct_drafts_histogram": [1, 2, 0, 1]}, 3) == (
        4, 12, 5, (3, 1, 1), False)
    assert request_counts({**meta, "spec_correct_drafts_histogram": [1, 2, 0, 1, 0]}, 3) == (
        4, 12, 5, (3, 1, 1), False)                            # trailing zeros beyond K
    with pytest.raises(InconsistentCounts, match=r"more than K=3 drafts"):
        request_counts({**meta, "spec_correct_drafts_histogram": [1, 2, 0, 0, 1]}, 3)
    with pytest.raises(InconsistentCounts, match=r"counts 3 steps, spec_verify_ct 4"):
        request_counts({**meta, "spec_correct_drafts_histogram": [0, 3]}, 3)
    with pytest.raises(InconsistentCounts, match=r"13 accepted drafts in 4 steps of K=3"):
        request_counts({"spec_verify_ct": 4, "spec_num_correct_drafts": 13}, 3)
    assert request_counts({**meta, "spec_verify_ct": 0}, 3) is None
    assert request_counts({"spec_verify_ct": 4, "completion_tokens": 3}, 3) is None
    assert request_counts({"spec_verify_ct": True, "completion_tokens": 3}, 3) is None
    assert request_counts({"spec_verify_ct": 2 ** 64, "completion_tokens": 3}, 3) is None


@pytest.mark.parametrize("server", [("sglang", 3, 1)], indirect=True)
def test_sglang_contradicting_counts_refuse_the_cell(server, prompts, tmp_path):
    original = server.spec_meta

    def lying(text):
        meta, tokens = original(text)
        meta["spec_correct_drafts_histogram"] = [meta["spec_verify_ct"]]
        return meta, tokens

    server.spec_meta = lying
    with pytest.raises(MeasureError, match=r"thinking off, K=3, request \d \(p\d\): SGLang's "
                                           r"counts contradict each other: the acceptance "
                                           r"histogram \[\d+, 0, 0, 0\] counts 0 accepted"):
        run(server, tmp_path / "run", prompts, requests=2)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("server", [("sglang", 3, 1)], indirect=True)
def test_sglang_without_meta_info_is_refused_with_the_reason(server, prompts, tmp_path):
    server.send_meta = False
    with pytest.raises(MeasureError, match=r"thinking off, K=3: SGLang answered without "
                                           r"per-request counts \(asked with "
                                           r"return_meta_info"):
        run(server, tmp_path / "run", prompts, requests=2)
    assert not (tmp_path / "run").exists()


@settings(max_examples=200, deadline=None)
@given(k=st.integers(1, 6), data=st.data())
def test_sglang_counts_from_a_histogram_match_a_naive_count(k, data):
    from goldenal.readers.sglang import request_counts

    # grown on demand: as long as the most drafts one step accepted, + 1
    hist = data.draw(st.lists(st.integers(0, 50), min_size=1, max_size=k + 1)
                     .filter(lambda h: sum(h) > 0 and h[-1] > 0))
    steps = sum(hist)
    accepted = sum(i * h for i, h in enumerate(hist))
    meta = {"spec_verify_ct": steps, "spec_num_correct_drafts": accepted,
            "spec_num_proposed_drafts": k * steps, "spec_correct_drafts_histogram": hist,
            "completion_tokens": steps + accepted}
    # naive: a step that accepted n drafts accepted positions 0..n-1
    naive = [0] * k
    for n, h in enumerate(hist):
        for i in range(n):
            naive[i] += h
    assert request_counts(meta, k) == (steps, k * steps, accepted, tuple(naive), False)
    # K from the proposed drafts when the caller does not know it
    assert request_counts(meta) == (steps, k * steps, accepted, tuple(naive), False)
    # without any draft count the accepted drafts come from the tokens, the same number
    older = {key: meta[key] for key in ("spec_verify_ct", "completion_tokens")}
    assert request_counts(older, k) == (steps, None, accepted, None, True)


@settings(max_examples=300, deadline=None)
@given(meta=st.dictionaries(st.sampled_from(
    ["spec_verify_ct", "spec_accept_token_num", "spec_draft_token_num", "completion_tokens",
     "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_accept_histogram",
     "spec_correct_drafts_histogram", "spec_accepted_drafts"]),
    st.one_of(st.none(), st.booleans(), st.integers(-5, 50), st.floats(), st.text(max_size=3),
              st.lists(st.one_of(st.integers(-2, 9), st.floats()), max_size=5))),
    k=st.one_of(st.none(), st.integers(1, 4)))
def test_sglang_counts_never_raise_on_junk(meta, k):
    from goldenal.readers.sglang import InconsistentCounts, request_counts

    try:
        got = request_counts(meta, k)
    except InconsistentCounts:
        return
    if got is not None:
        steps, _, accepted, per_pos, _ = got
        assert steps > 0 and accepted >= 0
        assert k is None or accepted <= k * steps
        assert per_pos is None or (len(per_pos) == k and sum(per_pos) == accepted
                                   and list(per_pos) == sorted(per_pos, reverse=True))
