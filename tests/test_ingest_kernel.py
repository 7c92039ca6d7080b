"""The compiled scan of vLLM logs and the column-wise reading of its records.

``_logscan.scan`` must accept exactly the lines ``vllm_log._FAST_LINE``
accepts and read the same figures from them; ``_blockwise`` must settle a
window only where ``fast_counts`` gives the same steps and counts; and a log
read through both must give the windows, problems and summary of the
per-line reader (``_logscan`` switched off).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from goldenal.readers import _io, ingest, vllm_log
from goldenal.readers._base import Context
from goldenal.readers.observations import Columns

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

PREFIX = b"(APIServer pid=13026) INFO 11-30 04:00:10 [metrics.py:101] "
ENGINE = (b"(APIServer pid=13026) INFO 11-30 04:00:10 [loggers.py:271] Engine %03d: Avg "
          b"prompt throughput: 10.0 tokens/s, Avg generation throughput: 50.0 tokens/s\n")
CONFIG = (b"(APIServer pid=13026) INFO 11-30 04:00:01 [utils.py:328] non-default args: "
          b"{'model': 'm', 'speculative_config': {'method': 'eagle3', "
          b"'num_speculative_tokens': %d}}\n")


def spec(steps, counts, *, accepted=None, drafted=None, mean=None, pct=None, prefix=PREFIX):
    """A family D line for ``steps`` verification steps with survival ``counts``."""
    k = len(counts)
    accepted = sum(counts) if accepted is None else accepted
    drafted = steps * k if drafted is None else drafted
    mean = 1 + accepted / steps if mean is None else mean
    pct = 100 * accepted / drafted if pct is None else pct
    rates = b", ".join(b"%.3f" % (c / steps) for c in counts)
    return prefix + (b"SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: "
                     b"%.2f tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, "
                     b"Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft "
                     b"acceptance rate: %.1f%%\n" % (mean, accepted / 10, drafted / 10,
                                                    accepted, drafted, rates, pct))


@st.composite
def survival(draw, k=None):
    k = draw(st.integers(1, 7)) if k is None else k
    steps = draw(st.one_of(st.integers(1, 60), st.integers(200, 5000),
                           st.integers(1, 250).map(lambda m: 2000 * m),  # bounds on an edge
                           st.integers(10**6, 3 * 10**7)))
    counts, alive = [], steps
    for _ in range(k):
        alive = draw(st.integers(0, alive))
        counts.append(alive)
    return steps, counts


def kernel():
    return pytest.importorskip("goldenal.readers._logscan") if vllm_log._logscan is None \
        else vllm_log._logscan


def test_compiled_scan_is_built():
    """The test install compiles the scan (it is optional only where no compiler exists)."""
    assert vllm_log._logscan is not None, "goldenal.readers._logscan was not built"


# -- the scan against the line pattern -------------------------------------------------

MUTATIONS = b"0123456789.,: %\r\t-()[]APIxe\x1b\xff"


@st.composite
def lines(draw):
    """A marked line as vLLM prints it, or one with a prefix or a byte changed."""
    steps, counts = draw(survival())
    prefix = draw(st.sampled_from([
        PREFIX, b"INFO 11-30 04:00:10 [loggers.py:123] ", b"(EngineCore_DP1 pid=7) WARNING "
        b"12-01 23:59:59 [a.b_c:9] ", b"(APIServer pid=013) INFO 11-30 04:00:10 [m.py:1] ",
        b"(APIServer pid=1234567890123) INFO 11-30 04:00:10 [m.py:1] ", b"(x) INFO 11-30 "
        b"04:00:10 [m.py:1] ", b"INFO 11-30 04:00:1 [m.py:1] ", b"", b"SpecDecoding metrics: "]))
    line = bytearray(spec(steps, counts, prefix=prefix))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(line) - 2))
        how = draw(st.sampled_from(["replace", "insert", "delete"]))
        if how == "replace":
            line[at] = draw(st.sampled_from(MUTATIONS))
        elif how == "insert":
            line.insert(at, draw(st.sampled_from(MUTATIONS)))
        else:
            del line[at]
    return bytes(line)


def expected(line):
    """What the scan should report for one marked line, read with the line pattern.

    None when the pattern refuses the line; ``"python"`` when it accepts a line
    the scan leaves to Python because it holds a figure beyond the scan's exact
    integers (more than 12 digits, a mean of more than 15, more than KMAX rates)
    or a process id with a leading zero (kept as text).
    """
    m = vllm_log._FAST_LINE.match(line)
    if m is None:
        return None
    _, pid, stamp, mean, accepted, drafted, rates, pct = m.groups()
    rates = rates.split(b", ")
    numbers = [accepted, drafted, *mean.split(b"."), *pct.split(b".")]
    if pid is not None:
        numbers.append(pid)
    if len(rates) > 16 or max(map(len, numbers)) > 12 or len(mean) > 16 or \
            (pid is not None and len(pid) > 1 and pid.startswith(b"0")):
        return "python"
    return (-1 if pid is None else int(pid), stamp, float(mean), int(accepted), int(drafted),
            [float(r) for r in rates], float(pct))


def scanned(line, before=b""):
    """The scan's reading of ``before + line``: None when it leaves the line to Python."""
    from goldenal.readers import _blockwise as bw

    blob = before + line
    newlines, records = kernel().scan(blob, len(blob), bw.KMAX, b"")
    rec = np.frombuffer(records, np.int64).reshape(-1, bw.RATES + bw.KMAX)
    assert newlines == blob.count(b"\n")
    (r,) = rec.tolist()
    assert r[bw.R_START] == len(before) and r[bw.R_LINE] == before.count(b"\n")
    assert r[bw.R_TAG] == blob.find(vllm_log.SPEC_D, len(before))
    if r[bw.R_STATUS]:
        return None
    k = r[bw.R_K]
    stamp = b"%02d-%02d %02d:%02d:%02d" % tuple(r[bw.R_STAMP] // 10**e % 100
                                                 for e in (8, 6, 4, 2, 0))
    return (r[bw.R_PID], stamp, r[bw.R_MEAN] / 10.0 ** r[bw.R_MEAN_DIGITS], r[bw.R_ACCEPTED],
            r[bw.R_DRAFTED], [t / 1000.0 for t in r[bw.RATES:bw.RATES + k]], r[bw.R_PCT] / 10)


@SETTINGS
@given(line=lines())
@example(line=spec(200, [150, 90], prefix=b"(APIServer pid=07) INFO 11-30 04:00:10 [m.py:1] "))
@example(line=spec(200, [150] * 17))
@example(line=spec(10**13, [10**12]))
@example(line=spec(200, [150, 90]).replace(b"%", b"5%"))
def test_scan_reads_what_the_line_pattern_reads(line):
    if vllm_log.SPEC_D not in line or b"peculative" in line:
        return
    want = expected(line)
    assert scanned(line) == (None if want == "python" else want)


@pytest.mark.parametrize("before, dp", [
    (ENGINE % 3, 3), (ENGINE % 0, 0), (b"x Engine 12: y\n", 12), (b"xEngine 12: y\n", -1),
    (b"Engine x: Engine 5: \n", 5), (b"no engine here\n", -1), (b"", -1),
    (b"Engine " + b"9" * 19 + b": \n", -2)])
@pytest.mark.parametrize("across", [False, True], ids=["same block", "previous block"])
def test_scan_tags_the_engine_of_the_line_before(before, dp, across):
    from goldenal.readers import _blockwise as bw

    line = spec(200, [150, 90])
    blob, previous = (line, before) if across else (before + line, b"")
    _, records = kernel().scan(blob, len(blob), bw.KMAX, previous)
    (r,) = np.frombuffer(records, np.int64).reshape(-1, bw.RATES + bw.KMAX).tolist()
    assert r[bw.R_DP] == dp
    per_line = vllm_log._dp_engine(blob, len(blob) - len(line), previous,
                                   vllm_log._ENGINE_ID.search)
    if dp >= 0:  # as the per-line reader tags it
        assert int(per_line) == dp
    elif dp == -1:
        assert per_line is None


def test_scan_marks_rare_lines_and_counts_every_line():
    from goldenal.readers import _blockwise as bw

    blob = (b"start\n" + CONFIG % 3 + spec(200, [150, 90]) + b"mentions speculative decoding\n"
            + b"a\n" + spec(300, [200, 100]).rstrip(b"\n") + b" speculative_config\n" + b"tail")
    newlines, records = kernel().scan(blob, len(blob), bw.KMAX, b"")
    rec = np.frombuffer(records, np.int64).reshape(-1, bw.RATES + bw.KMAX)
    assert newlines == 6
    assert rec[:, bw.R_LINE].tolist() == [1, 2, 3, 5]
    assert rec[:, bw.R_STATUS].tolist() == [2, 0, 2, 2]
    assert rec[:, bw.R_TAG].tolist() == [-1, blob.find(b"SpecDecoding"), -1,
                                         blob.rfind(b"SpecDecoding")]


# -- settling counts against fast_counts ------------------------------------------------

@st.composite
def records(draw):
    k = draw(st.integers(1, 6))
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        steps, counts = draw(survival(k))
        damage = draw(st.sampled_from(["none"] * 5 + ["drafted", "mean", "rate", "pct", "sum"]))
        accepted, drafted = sum(counts), steps * k
        mean, pct = 1 + accepted / steps, 100 * accepted / drafted
        rates = [round(c / steps, 3) for c in counts]
        if damage == "drafted":
            drafted += 1
        elif damage == "mean":
            mean += 0.02
        elif damage == "rate":
            rates[0] = min(9.999, rates[0] + 0.004)
        elif damage == "pct":
            pct += 0.3
        elif damage == "sum":
            accepted += draw(st.sampled_from([-2, -1, 1, 2]))
        rows.append((accepted, drafted, rates, float(f"{mean:.2f}"), float(f"{pct:.1f}")))
    return k, rows


def as_records(k, rows):
    from goldenal.readers import _blockwise as bw

    rec = np.zeros((len(rows), bw.RATES + bw.KMAX), np.int64)
    for i, (accepted, drafted, rates, mean, pct) in enumerate(rows):
        rec[i, bw.R_ACCEPTED], rec[i, bw.R_DRAFTED], rec[i, bw.R_K] = accepted, drafted, k
        rec[i, bw.R_MEAN], rec[i, bw.R_MEAN_DIGITS] = round(mean * 100), 2
        rec[i, bw.R_PCT] = round(pct * 10)
        rec[i, bw.RATES:bw.RATES + k] = [round(r * 1000) for r in rates]
    return rec


@settings(max_examples=300, deadline=None)
@given(batch=records())
@example(batch=(3, [(3591, 5787, [0.85, 0.595, 0.416], 2.86, 62.1)]))
@example(batch=(2, [(1701, 4000, [0.851, 0.0], 1.85, 42.5)]))
def test_settled_windows_are_what_fast_counts_gives(batch):
    from goldenal.readers import _blockwise as bw

    k, rows = batch
    settled, steps, counts = bw.settle(as_records(k, rows), k)
    for i, (accepted, drafted, rates, mean, pct) in enumerate(rows):
        want = vllm_log.fast_counts(accepted, drafted, rates, mean, pct, None)
        if settled[i]:
            assert want == (k, int(steps[i]), tuple(counts[i].tolist()))
        else:  # left to the per-line reader: only what it cannot settle either
            assert want is None or want[1] > bw.MAX_SOLVE_STEPS


def test_settle_exact_values():
    from goldenal.readers import _blockwise as bw

    rows = [(3591, 5787, [0.85, 0.595, 0.416], 2.86, 62.1),  # solved: rounding is 2 off
            (280, 600, [0.75, 0.45, 0.2], 2.40, 46.7),         # plain rounding
            (280, 601, [0.75, 0.45, 0.2], 2.40, 46.6),         # drafted not a multiple of K
            (11, 30, [0.5, 0.6, 0.0], 2.10, 36.7)]             # no counts fit
    settled, steps, counts = bw.settle(as_records(3, rows), 3)
    assert settled.tolist() == [True, True, False, False]
    assert steps[:2].tolist() == [1929, 200]
    assert counts[:2].tolist() == [[1640, 1148, 803], [150, 90, 40]]


# -- whole logs: compiled and per-line reading agree -------------------------------------

@st.composite
def logs(draw):
    parts = []
    if draw(st.booleans()):
        parts.append(CONFIG % draw(st.integers(1, 4)))
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["spec"] * 6 + ["engine", "config", "mutated", "access",
                                                   "bytes"]))
        if kind == "spec":
            steps, counts = draw(survival(draw(st.integers(2, 4))))
            parts.append(spec(steps, counts))
        elif kind == "engine":
            parts.append(ENGINE % draw(st.integers(0, 3)))
        elif kind == "config":
            parts.append(CONFIG % draw(st.integers(1, 4)))
        elif kind == "mutated":
            parts.append(draw(lines()) + b"\n")
        elif kind == "bytes":  # anything at all, with or without a tag in it
            junk = draw(st.binary(max_size=60))
            parts.append(draw(st.sampled_from([junk, junk + vllm_log.SPEC_D + junk])))
        else:
            parts.append(b'INFO:     127.0.0.1:4242 - "POST /v1/completions HTTP/1.1" 200\n')
    blob = b"".join(parts)
    if draw(st.booleans()):
        blob = blob.rstrip(b"\n")
    return blob


def read_all(path):
    ctx = Context(path)
    items = list(vllm_log.read(path, ctx))
    return ([(o, o.extra) for o in items],
            [(p.line, p.message, p.refused) for p in ctx.problems], ctx.facts)


@SETTINGS
@given(blob=logs(), chunk=st.sampled_from([None, 50, 333, 4096]))
def test_compiled_reading_matches_the_per_line_reader(tmp_path, blob, chunk, monkeypatch):
    kernel()
    path = tmp_path / "server.log"
    path.write_bytes(blob)
    if chunk:
        monkeypatch.setattr(_io, "CHUNK", chunk)
    compiled = read_all(path)
    obs = ingest(path, reader="vllm-log")
    monkeypatch.setattr(vllm_log, "_logscan", None)
    per_line = read_all(path)
    plain = ingest(path, reader="vllm-log")
    assert compiled == per_line
    assert tuple(obs.summary()) == tuple(plain.summary())
    assert obs == plain and len(obs) == len(plain)


def test_a_large_log_is_held_as_columns(tmp_path):
    """Runs of family D lines become Columns; rows only where a line needs a look."""
    kernel()
    rng = random.Random(7)
    body = [CONFIG % 3]
    for i in range(3000):
        steps = rng.randint(200, 4000)
        a = int(steps * 0.8)
        body += [ENGINE % (i % 2), spec(steps, [a, int(a * 0.7), int(a * 0.5)])]
    body.insert(1500, b"(APIServer pid=13026) INFO 11-30 04:10:00 [x.py:1] a line about "
                      b"speculative decoding\n")
    path = tmp_path / "server.log"
    path.write_bytes(b"".join(body))
    obs = ingest(path)
    kinds = [type(p).__name__ for p in obs._parts]
    assert kinds.count("Columns") >= 1 and len(obs) == 3000
    columns = [p for p in obs._parts if isinstance(p, Columns)]
    assert sum(map(len, columns)) >= 2990
    assert obs[1].extra == {"process": "13026", "dp_engine": "1", "drafts_from": "drafted/k"}
    assert obs[1].timestamp == "11-30 04:00:10" and obs[1].line == 5
    (cell,) = obs.summary()
    assert cell.windows == 3000 and cell.k == 3
    assert cell.steps == sum(o.drafts for o in obs)
    assert cell.accepted_per_position == tuple(
        sum(o.accepted_per_position[i] for o in obs) for i in range(3))
    frame = obs.to_frame()
    assert frame["line"].tolist() == [o.line for o in obs]
