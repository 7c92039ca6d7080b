"""The row-based :class:`Observations` of ``ingest()`` against a plain list of records.

``ingest()`` keeps windows as rows and builds :class:`Observation` records
on demand; iterating an :class:`IngestStream` yields the records one by one.
Every record, count, line number, problem, source, summary and table must be
the same either way: on every fixture of tests/data/ingest and on logs
assembled (by hypothesis) from the lines of the vLLM fixtures and generated
family D lines, including mixed K, damaged lines and a cut last line.
"""

from __future__ import annotations

import gc
import pickle
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenal.core.errors import ParseError
from goldenal.core.observation import Observation
from goldenal.readers import IngestStream, Observations, ingest
from goldenal.readers.observations import COLUMNS, Summarizer

DATA = Path(__file__).parent / "data" / "ingest"
FIXTURES = sorted(p for p in DATA.iterdir() if p.suffix != ".md")
VLLM_LINES = [line for p in sorted(DATA.glob("vllm_*.log")) + sorted((DATA / "bad").glob("*.log"))
              for line in p.read_bytes().splitlines(keepends=True)
              if not line.startswith(b"#")]
PREFIX = b"(APIServer pid=13026) INFO 11-30 04:00:10 [metrics.py:101] "
ENGINE = (b"(APIServer pid=13026) INFO 11-30 04:00:10 [loggers.py:271] Engine 00%d: Avg prompt "
          b"throughput: 10.0 tokens/s, Avg generation throughput: 50.0 tokens/s\n")
CONFIG = (b"(APIServer pid=13026) INFO 11-30 04:00:01 [utils.py:328] non-default args: "
          b"{'model': 'm', 'speculative_config': {'method': 'eagle3', "
          b"'num_speculative_tokens': %d}}\n")


def reference(paths, **kwargs):
    """The records, problems and sources of iterating a stream: the plain list."""
    stream = IngestStream(paths, **kwargs)
    items = list(stream)
    return items, stream.problems, stream.sources


def reference_frame(items):
    """``to_frame()`` as built from a list of records, one dict per window."""
    import pandas as pd

    frame = pd.DataFrame([{c: getattr(o, c) for c in COLUMNS} for o in items],
                         columns=list(COLUMNS))
    for c in ("line", "line_end", "k", "drafts", "draft_tokens", "accepted"):
        frame[c] = frame[c].astype("Int64")
    frame["acceptance_length"] = [o.acceptance_length for o in items]
    return frame


def running_summary(items, key):
    summary = Summarizer(key)
    for o in items:
        summary.add(o)
    return summary.result()


def fields(o):
    return tuple(getattr(o, name) for name in Observation.__dataclass_fields__)


def assert_same(paths, **kwargs):
    """``ingest(paths)`` reads exactly what the plain list of records holds."""
    pd = pytest.importorskip("pandas")
    try:
        items, problems, sources = reference(paths, **kwargs)
    except ParseError as exc:
        with pytest.raises(ParseError) as got:
            ingest(paths, **kwargs)
        assert (got.value.message, got.value.path, got.value.line) == \
            (exc.message, exc.path, exc.line)
        return None
    obs = ingest(paths, **kwargs)
    assert len(obs) == len(items)
    assert list(obs) == items
    # every field, ``extra`` included (it takes no part in equality)
    assert [fields(o) for o in obs] == [fields(o) for o in items]
    assert all(type(o) is Observation for o in obs)
    assert [fields(obs[i]) for i in range(len(items))] == [fields(o) for o in items]
    if items:
        assert fields(obs[-1]) == fields(items[-1])
        assert obs[1:3] == tuple(items[1:3])
    assert obs.items == tuple(items)
    assert obs.problems == tuple(problems)
    assert [(p.path, p.line, p.message, p.refused) for p in obs.problems] == \
        [(p.path, p.line, p.message, p.refused) for p in problems]
    assert obs.sources == tuple(sources)
    assert [s.facts for s in obs.sources] == [s.facts for s in sources]
    assert obs.complete == all(not p.refused for p in problems)
    assert tuple(obs.summary()) == running_summary(items, lambda o: (o.source, o.k))
    assert tuple(obs.summary(by="run")) == running_summary(items, lambda o: (o.thinking, o.k))
    plain = Observations(tuple(items), tuple(problems), tuple(sources))
    assert plain == obs and hash(plain) == hash(obs)
    assert tuple(plain.summary()) == tuple(obs.summary())
    assert repr(plain) == repr(obs)
    pd.testing.assert_frame_equal(obs.to_frame(), reference_frame(items))
    ks = {o.k for o in items}
    for k in ks:
        assert list(obs.filter(k=k)) == [o for o in items if o.k == k]
    back = pickle.loads(pickle.dumps(obs))
    assert back == obs and [fields(o) for o in back] == [fields(o) for o in items]
    return obs


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_fixture_reads_the_same_as_the_record_list(path):
    assert_same(path)


@pytest.mark.parametrize("path", [DATA / "bad", DATA / "collector", DATA / "run_manifest"],
                         ids=lambda p: p.name)
def test_strict_ingest_refuses_as_the_strict_stream(path):
    assert_same(path, strict=True)


def test_all_fixtures_at_once_and_with_k():
    paths = [p for p in FIXTURES if p.is_file() and p.suffix == ".log"]
    assert_same(paths)
    assert_same(paths, k=3)


@st.composite
def family_d(draw):
    """A family D line as vLLM prints it, occasionally with a figure off."""
    k = draw(st.integers(1, 5))
    steps = draw(st.one_of(st.integers(1, 50), st.integers(500, 5000)))
    counts, alive = [], steps
    for _ in range(k):
        alive = draw(st.integers(0, alive))
        counts.append(alive)
    accepted = sum(counts) + draw(st.sampled_from([0] * 8 + [1, -1]))
    drafted = steps * k
    rates = ", ".join(f"{c / steps:.3f}" for c in counts)
    pct = 100 * accepted / drafted if drafted else 0.0
    line = (f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / steps:.2f}, "
            f"Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position "
            f"acceptance rate: {rates}, Avg Draft acceptance rate: {pct:.1f}%\n").encode()
    return draw(st.sampled_from([PREFIX, b"INFO 11-30 04:00:10 [loggers.py:123] ", b""])) + line


lines = st.one_of(family_d(), st.sampled_from(VLLM_LINES),
                  st.integers(0, 9).map(lambda e: ENGINE % e),
                  st.integers(1, 5).map(lambda k: CONFIG % k),
                  st.just(b"INFO:     127.0.0.1:4242 - \"POST /v1/completions HTTP/1.1\" 200\n"))


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=st.lists(lines, max_size=25), cut=st.booleans(), strict=st.booleans(),
       k=st.sampled_from([None, 3]))
def test_generated_logs_read_the_same_as_the_record_list(tmp_path, body, cut, strict, k):
    blob = b"".join(body)
    if cut and blob.endswith(b"\n"):
        blob = blob[:-1]
    path = tmp_path / "server.log"
    path.write_bytes(b"vLLM API server version 0.11.0\n" + blob)
    assert_same(path, strict=strict, k=k)


def test_rows_hold_no_object_the_collector_keeps_walking(tmp_path):
    """The rows of a fast-path log hold only untracked values: the GC lets go of them."""
    line = PREFIX + (b"SpecDecoding metrics: Mean acceptance length: 2.50, Accepted "
                     b"throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, "
                     b"Accepted: 150 tokens, Drafted: 200 tokens, Per-position acceptance "
                     b"rate: 0.800, 0.700, Avg Draft acceptance rate: 75.0%\n")
    path = tmp_path / "server.log"
    path.write_bytes((ENGINE % 1 + line) * 2000)
    obs = ingest(path)
    rows = obs._rows
    assert len(rows) == 2000
    gc.collect()
    gc.collect()  # a tuple is let go once what it holds was let go in an earlier pass
    assert not any(map(gc.is_tracked, rows))
    first = obs[0]
    assert first.extra == {"process": "13026", "dp_engine": "1", "drafts_from": "drafted/k"}
    assert first.accepted_per_position == (80, 70) and first.line == 2
    assert obs[-1].line == 4000


def test_observations_stay_immutable():
    obs = ingest(DATA / "vllm_v1_43295.log")
    for name in ("items", "problems", "sources", "_rows", "other"):
        with pytest.raises(FrozenInstanceError):
            setattr(obs, name, ())
    with pytest.raises(FrozenInstanceError):
        del obs.problems
    record = obs[0]
    record.extra["note"] = "x"  # a record's extra is its own: the container is unchanged
    assert "note" not in obs[0].extra
    assert Observations() == Observations(()) and len(Observations()) == 0


observations = st.builds(
    Observation,
    source=st.sampled_from(["a.log", "b.log"]), line=st.integers(1, 100),
    engine=st.sampled_from(["vllm", "sglang"]), format=st.sampled_from(["f1", "f2"]),
    k=st.sampled_from([None, 2, 3]), drafts=st.sampled_from([None, 0, 5, 17]),
    draft_tokens=st.sampled_from([None, 10, 51]), accepted=st.sampled_from([None, 0, 4, 9]),
    accepted_per_position=st.sampled_from([None, (), (3, 1), (4, 2, 1)]),
    mean_al=st.sampled_from([None, 1.5, 2.25, 0.1, 1e16]), thinking=st.sampled_from([None, "on"]),
    extra=st.sampled_from([{}, {"process": "7"}, {"rank": "DP1 TP0", "window": "since-start"}]))


@settings(max_examples=300, deadline=None)
@given(items=st.lists(observations, max_size=30))
def test_container_of_any_records_matches_the_record_list(items):
    """Summaries, table, indexing and equality of rows against the records themselves."""
    pd = pytest.importorskip("pandas")
    obs = Observations(tuple(items))
    assert list(obs) == items and [fields(o) for o in obs] == [fields(o) for o in items]
    assert obs.items == tuple(items) and len(obs) == len(items)
    assert tuple(obs.summary()) == running_summary(items, lambda o: (o.source, o.k))
    assert tuple(obs.summary(by="run")) == running_summary(items, lambda o: (o.thinking, o.k))
    pd.testing.assert_frame_equal(obs.to_frame(), reference_frame(items))
    assert obs == Observations(items) and hash(obs) == hash(Observations(items))
    assert list(obs.filter(engine="vllm")) == [o for o in items if o.engine == "vllm"]
    if items:
        assert fields(obs[len(items) // 2]) == fields(items[len(items) // 2])
        assert obs != Observations(items[1:])


def test_pooling_parts_leaves_the_windows_as_they_are():
    """The summary groups parts without extending one the container holds."""
    from goldenal.readers.observations import as_row

    a, b, c = (as_row(Observation(src, line, "vllm", "f", 2, 10, 20, acc, (acc - 2, 2)))
               for src, line, acc in (("a.log", 1, 5), ("a.log", 2, 6), ("b.log", 3, 7)))
    obs = Observations.from_parts([[a], [b, c]])
    first = tuple(obs.summary())
    assert [(cell.cell, cell.windows, cell.accepted) for cell in first] == \
        [(("a.log", 2), 2, 11), (("b.log", 2), 1, 7)]
    assert tuple(obs.summary()) == first
    assert len(obs) == 3 and [o.line for o in obs] == [1, 2, 3]
