"""The fast paths of log ingestion read exactly what the general paths read.

* the raw-bytes family D paths of the vLLM log reader (the compiled scan, and
  one match per line) against the decoded, line-by-line path (and against the
  field-by-field parser alone);
* block reading with a tiny buffer (lines split across reads, lines longer
  than the buffer) and gzip against one large buffer;
* the rewritten count reconstruction against its straightforward form;
* the column-wise pooled summary against the running :class:`Summarizer`.
"""

from __future__ import annotations

import gzip
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenal.core.observation import Observation
from goldenal.readers import _base, _io, ingest, vllm_log
from goldenal.readers._base import Context
from goldenal.readers.observations import CellSummary, Observations, Summarizer

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

PREFIXES = [
    b"(APIServer pid=13026) INFO 11-30 04:00:10 [metrics.py:101] ",
    b"INFO 11-30 04:00:10 [loggers.py:123] ",
    b"(EngineCore_DP1 pid=77) INFO 12-01 23:59:59 [metrics.py:96] ",
    b"\x1b[1;36m(APIServer pid=5)\x1b[0;0m INFO 11-30 04:00:10 [metrics.py:101] ",
    b"(APIServer pid=5) INFO 11-30 04:00:10 \xff\xfe[metrics.py:101] ",
    b"(APIServer pid=5)\r INFO 11-30 04:00:10 ",
    b"pid=) 1-30 04:00:10 11-30 04:00:10x 11-30 04:00:11 ",
    b"SpecDecoding metrics: Mean acc",  # a cut message spliced before a whole one
    b"",
]
ENGINE_LINES = [
    None,
    b"(APIServer pid=13026) INFO 11-30 04:00:10 [loggers.py:271] Engine 003: Avg prompt "
    b"throughput: 10.0 tokens/s, Avg generation throughput: 50.0 tokens/s\n",
    b"(APIServer pid=13026) INFO 11-30 04:00:10 [loggers.py:271] Engine 000: Running: 1\n",
    b"INFO:     127.0.0.1:4242 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
]
CONFIG = (b"(APIServer pid=13026) INFO 11-30 04:00:01 [utils.py:328] non-default args: "
          b"{'model': 'm', 'speculative_config': {'method': 'eagle3', "
          b"'num_speculative_tokens': %d}}\n")


@st.composite
def spec_lines(draw):
    """A family D line as vLLM prints it, sometimes with one figure off."""
    k = draw(st.integers(1, 6))
    steps = draw(st.one_of(st.integers(1, 60), st.integers(900, 20000)))
    counts, alive = [], steps
    for _ in range(k):
        alive = draw(st.integers(0, alive))
        counts.append(alive)
    accepted = sum(counts)
    drafted = steps * k
    mean = 1 + accepted / steps
    pct = 100 * accepted / drafted
    rates = [c / steps for c in counts]
    damage = draw(st.sampled_from(["none"] * 6 + ["drafted", "mean", "rate", "zero", "pct"]))
    if damage == "drafted":
        drafted += 1
    elif damage == "mean":
        mean += 0.02
    elif damage == "rate":
        rates[0] = min(1.0, rates[0] + 0.004)
    elif damage == "zero":
        accepted = drafted = 0
        rates = [0.0] * k
        mean, pct = 1.0, float("nan")
    elif damage == "pct":
        pct += 0.3
    pct_s = "nan" if pct != pct else f"{pct:.1f}"
    text = (f"SpecDecoding metrics: Mean acceptance length: {mean:.2f}, Accepted throughput: "
            f"{accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance "
            f"rate: {', '.join(f'{r:.3f}' for r in rates)}, Avg Draft acceptance rate: {pct_s}%")
    return text.encode()


@st.composite
def logs(draw):
    """A small server log: optional start-up config, spec lines with neighbours."""
    parts = []
    if draw(st.booleans()):
        parts.append(CONFIG % draw(st.integers(1, 6)))
    n = draw(st.integers(1, 8))
    for i in range(n):
        before = draw(st.sampled_from(ENGINE_LINES))
        if before is not None:
            parts.append(before)
        prefix = draw(st.sampled_from(PREFIXES))
        tail = draw(st.sampled_from([b"", b"", b" ", b"\r", b" \r", b"\x1b[0m"]))
        end = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))
        line = prefix + draw(spec_lines()) + tail
        if i == n - 1 and draw(st.integers(0, 4)) == 0:  # the file cut while written
            cut = draw(st.integers(0, 3))
            parts.append(line[:len(line) - cut] if cut else line)
        else:
            parts.append(line + end)
    return b"".join(parts)


def reference_read(path, ctx):
    """The line-by-line text path: find each marked line, decode it, parse it."""
    reader = vllm_log._Reader(ctx)
    for number, text, terminated, previous in _io.scan(
            path, (b" metrics: ", b"speculative_config"), previous=True):
        obs = reader.line(number, text, terminated, previous)
        if obs is not None:
            yield obs


def run(reader, path):
    ctx = Context(path)
    items = list(reader(path, ctx))
    return ([(o, o.extra) for o in items],
            [(p.line, p.message, p.refused) for p in ctx.problems])


@SETTINGS
@given(data=logs())
def test_bytes_path_reads_like_the_text_path(tmp_path, data):
    path = tmp_path / "server.log"
    path.write_bytes(data)
    assert run(vllm_log.read, path) == run(reference_read, path)


@SETTINGS
@given(data=logs())
def test_fast_paths_read_like_the_field_parser(tmp_path, data, monkeypatch):
    path = tmp_path / "server.log"
    path.write_bytes(data)
    fast = run(vllm_log.read, path)
    never = re.compile(r"(?!)")
    monkeypatch.setattr(vllm_log, "_logscan", None)
    monkeypatch.setattr(vllm_log, "_FAST", never)
    monkeypatch.setattr(vllm_log, "_FAST_B", re.compile(rb"(?!)"))
    slow = run(vllm_log.read, path)
    monkeypatch.undo()
    assert fast == slow


@SETTINGS
@given(data=logs(), chunk=st.integers(1, 400))
def test_tiny_blocks_and_gzip_read_like_one_block(tmp_path, data, chunk, monkeypatch):
    path = tmp_path / "server.log"
    path.write_bytes(data)
    whole = run(vllm_log.read, path)
    monkeypatch.setattr(_io, "CHUNK", chunk)
    assert run(vllm_log.read, path) == whole
    assert run(reference_read, path) == whole
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(data))
    got = run(vllm_log.read, gz)
    monkeypatch.undo()
    assert [(o.line, o.drafts, o.accepted_per_position, e) for o, e in got[0]] == \
        [(o.line, o.drafts, o.accepted_per_position, e) for o, e in whole[0]]
    assert got[1] == whole[1]


def test_engine_line_in_the_previous_block_still_tags_the_window(tmp_path, monkeypatch):
    engine = ENGINE_LINES[1]
    spec = (PREFIXES[0] + b"SpecDecoding metrics: Mean acceptance length: 2.50, Accepted "
            b"throughput: 15.00 tokens/s, Drafted throughput: 20.00 tokens/s, Accepted: 150 "
            b"tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.900, 0.600, Avg "
            b"Draft acceptance rate: 75.0%\n")
    path = tmp_path / "server.log"
    path.write_bytes(engine + spec)
    monkeypatch.setattr(_io, "CHUNK", len(engine))  # the block ends right after it
    (obs,) = list(vllm_log.read(path, Context(path)))
    assert (obs.line, obs.drafts, obs.accepted, obs.accepted_per_position) == \
        (2, 100, 150, (90, 60))
    assert obs.extra == {"process": "13026", "dp_engine": "3", "drafts_from": "drafted/k"}
    assert obs.timestamp == "11-30 04:00:10"


def test_blocks_number_lines_and_keep_a_cut_last_line(tmp_path, monkeypatch):
    path = tmp_path / "x.log"
    path.write_bytes(b"a\r\nbb\n" + b"c" * 50 + b"\ndd")
    monkeypatch.setattr(_io, "CHUNK", 4)
    seen = []
    for buf, cut, before in _io.blocks(path):
        seen.append((bytes(buf[:cut]), before))
    assert b"".join(b for b, _ in seen) == b"a\r\nbb\n" + b"c" * 50 + b"\ndd"
    assert all(b.endswith(b"\n") for b, _ in seen[:-1])
    assert seen[-1][0].endswith(b"dd")
    assert seen[1][1] == seen[0][0].splitlines(keepends=True)[-1]


# -- count reconstruction --------------------------------------------------------------

def reference_counts(drafts, rates, accepted, half):
    """The reconstruction written plainly: boxes, order, then unit moves."""
    digits = next((n for n in range(1, 7) if abs(half - 0.5 * 10 ** -n) <= 2e-9), None)

    def prints(c, rate):
        return f"{c / drafts:.{digits}f}" == f"{rate:.{digits}f}"

    def feasible(rate):
        lo = math.ceil(round((rate - half) * drafts, 9))
        hi = math.floor(round((rate + half) * drafts, 9))
        if digits:  # the edges only count when they print as the rate
            if 0 <= hi and abs(hi - (rate + half) * drafts) < 1e-6 * drafts + 1e-6 \
                    and not prints(hi, rate):
                hi -= 1
            if 0 <= lo and abs(lo - (rate - half) * drafts) < 1e-6 * drafts + 1e-6 \
                    and not prints(lo, rate):
                lo += 1
        return max(lo, 0), min(hi, drafts)

    bounds = [feasible(r) for r in rates]
    lo = [b[0] for b in bounds]
    hi = [b[1] for b in bounds]
    for i in range(1, len(hi)):
        hi[i] = min(hi[i], hi[i - 1])
    for i in range(len(lo) - 2, -1, -1):
        lo[i] = max(lo[i], lo[i + 1])
    if any(a > b for a, b in zip(lo, hi)) or not sum(lo) <= accepted <= sum(hi):
        return None
    counts = [min(max(round(r * drafts), a), b) for r, a, b in zip(rates, lo, hi)]
    for i in range(1, len(counts)):
        counts[i] = min(counts[i], counts[i - 1])
    residual = accepted - sum(counts)
    step = 1 if residual > 0 else -1
    last = len(counts) - 1
    while residual:
        best, gap = None, None
        for i, r in enumerate(rates):
            target = counts[i] + step
            if not lo[i] <= target <= hi[i]:
                continue
            if step > 0 and i > 0 and target > counts[i - 1]:
                continue
            if step < 0 and i < last and target < counts[i + 1]:
                continue
            g = (r * drafts - counts[i]) * step
            if gap is None or g > gap:
                best, gap = i, g
        if best is None:
            return None
        counts[best] += step
        residual -= step
    return tuple(counts)


@settings(max_examples=400, deadline=None)
@given(drafts=st.integers(1, 30000),
       survival=st.lists(st.integers(0, 1000), min_size=1, max_size=8),
       shift=st.integers(-3, 3), half=st.sampled_from([0.0005 + 1e-9, 0.005 + 1e-9]))
def test_counts_from_rates_matches_the_plain_form(drafts, survival, shift, half):
    rates = [round(s / 1000, 3) for s in sorted(survival, reverse=True)]
    accepted = sum(round(r * drafts) for r in rates) + shift
    assert _base.counts_from_rates(drafts, rates, accepted, half) == \
        reference_counts(drafts, rates, accepted, half)


def test_counts_from_rates_exact_values():
    # 1929 steps: 0.850/0.595/0.416 round back to a sum 2 off Accepted 3591
    assert _base.counts_from_rates(1929, [0.85, 0.595, 0.416], 3591, 0.0005 + 1e-9) == \
        (1640, 1148, 803)
    assert _base.counts_from_rates(10, [0.5, 0.6], 11, 0.0005 + 1e-9) is None
    # 3/200 = 0.015 is within 0.005 of 0.02 but prints as 0.01: only (4, 1) fits
    assert _base.counts_from_rates(200, [0.02, 0.01], 5, 0.005 + 1e-9) == (4, 1)


# -- pooled summary ----------------------------------------------------------------------

observations = st.builds(
    Observation,
    source=st.sampled_from(["a.log", "b.log"]), line=st.integers(1, 100),
    engine=st.sampled_from(["vllm", "sglang"]), format=st.sampled_from(["f1", "f2"]),
    k=st.sampled_from([None, 2, 3]), drafts=st.sampled_from([None, 0, 5, 17]),
    draft_tokens=st.sampled_from([None, 10, 51]), accepted=st.sampled_from([None, 0, 4, 9]),
    accepted_per_position=st.sampled_from([None, (), (3, 1), (4, 2, 1)]),
    mean_al=st.sampled_from([None, 1.5, 2.25, 0.1]), thinking=st.sampled_from([None, "on"]))


def reference_summary(items, key):
    """The pooling rule written plainly: counts over counted windows, means apart."""
    cells = {}
    for o in items:
        cells.setdefault(key(o), []).append(o)
    out = []
    for cell, members in cells.items():
        has_counts = [bool(o.drafts and o.accepted is not None) for o in members]
        counted = [o for o, c in zip(members, has_counts) if c]
        means = [o.mean_al for o, c in zip(members, has_counts)
                 if not c and o.mean_al is not None]
        ks = {o.k for o in members} - {None}
        positions = [o.accepted_per_position for o in counted]
        width = max(map(len, positions)) if counted and all(positions) else 0
        out.append(CellSummary(
            cell=cell, engine=",".join(sorted({o.engine for o in members})),
            formats=tuple(sorted({o.format for o in members})),
            k=ks.pop() if len(ks) == 1 else None, windows=len(members),
            counted_windows=len(counted), steps=sum(o.drafts for o in counted),
            draft_tokens=sum(o.draft_tokens for o in counted)
            if counted and all(o.draft_tokens is not None for o in counted) else None,
            accepted=sum(o.accepted for o in counted),
            accepted_per_position=tuple(sum(p[i] for p in positions if i < len(p))
                                        for i in range(width))
            if counted and all(positions) else None,
            mean_only_windows=len(members) - len(counted),
            mean_of_means=sum(means) / len(means) if means else None))
    return tuple(out)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(observations, max_size=30), by_run=st.booleans())
def test_summary_matches_running_totals(items, by_run):
    attrs = ("thinking", "k") if by_run else ("source", "k")

    def key(o):
        return tuple(getattr(o, a) for a in attrs)

    running = Summarizer(key)
    for o in items:
        running.add(o)
    pooled = tuple(Observations(items).summary(by="run" if by_run else "source"))
    assert pooled == running.result()
    assert pooled == reference_summary(items, key)


def test_ingest_summary_of_a_fast_path_log(tmp_path):
    lines = [PREFIXES[0] + b"SpecDecoding metrics: Mean acceptance length: %.2f, Accepted "
             b"throughput: 1.00 tokens/s, Drafted throughput: 3.00 tokens/s, Accepted: %d "
             b"tokens, Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft "
             b"acceptance rate: %.1f%%\n" % (1 + a / d, a, 3 * d,
                                            b", ".join(b"%.3f" % (c / d) for c in cs),
                                            100 * a / (3 * d))
             for d, cs in ((1929, (1640, 1148, 803)), (200, (150, 90, 40)))
             for a in [sum(cs)]]
    path = tmp_path / "server.log"
    path.write_bytes(b"".join(lines))
    obs = ingest(path)
    assert [(o.line, o.drafts, o.accepted, o.accepted_per_position) for o in obs] == \
        [(1, 1929, 3591, (1640, 1148, 803)), (2, 200, 280, (150, 90, 40))]
    (cell,) = obs.summary()
    assert (cell.steps, cell.accepted, cell.draft_tokens, cell.accepted_per_position) == \
        (2129, 3871, 6387, (1790, 1238, 843))
    assert obs.complete


@pytest.mark.parametrize("blob", [b"", b"\n", b"no newline at all"])
def test_blocks_edge_files(tmp_path, blob):
    path = tmp_path / "e.log"
    path.write_bytes(blob)
    assert b"".join(bytes(buf[:cut]) for buf, cut, _ in _io.blocks(path)) == blob
