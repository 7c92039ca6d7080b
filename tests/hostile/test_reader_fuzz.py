"""Every measurement reader, fed mutated real samples, only ever refuses.

A refusal is a :class:`~goldenal.core.errors.ParseError` (the file as a whole) or
a problem ``path:line: reason`` on the result (one window); anything else is
a crash.  The seeds are the real captures of ``tests/data/ingest/``; the
mutations are those that found crashes: numbers replaced by NaN, Infinity,
huge or negative values, bytes flipped, cut or duplicated, gzip streams
damaged.  Every crasher found is kept in ``crashers/`` and replayed here.

The example budget is small so the suite stays fast;
``GOLDENAL_FUZZ_EXAMPLES=20000`` runs a long campaign.
"""

import gzip
import json
import os
import re
import time
import tracemalloc
import warnings
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenal.core.errors import ParseError
from goldenal.readers import _io, ingest

HERE = Path(__file__).resolve().parent
SEEDS = sorted(p for p in (HERE.parent / "data" / "ingest").rglob("*")
               if p.is_file() and p.suffix != ".md")
CRASHERS = sorted(p for p in (HERE / "crashers").iterdir() if p.suffix != ".md")
EXAMPLES = int(os.environ.get("GOLDENAL_FUZZ_EXAMPLES", "120"))

TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf", b"-1", b"0", b"1e309", b"-0",
          b"99999999999999999999999", b"100000000", b"1e-400", b"0x10", b"1.2.3", b"\x00",
          b"\xff\xfe", b"\n", b"\r", b"{", b"}", b"[", b"]", b'"', b":", b",", b"null", b"true",
          b"%", b"K=", b"=", b"\t", b"\xc2\xb2", b"+", b"-", b"9" * 400, b"1" + b"0" * 170]
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")


def _read_only_refuses(path):
    """ingest(path) returns or raises ParseError; every problem is ``path[:line]: reason``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = ingest([str(path)])
        except ParseError as exc:
            assert exc.path is not None and str(exc).startswith(str(exc.path))
            assert "\n" not in str(exc)
            return None
    for problem in result.problems:
        text = str(problem)
        assert problem.path == str(path), text
        assert text.startswith(f"{path}:{problem.line}: " if problem.line else f"{path}: ")
        assert problem.message and "\n" not in problem.message, text
    return result


mutation = st.tuples(st.sampled_from(["number", "insert", "delete", "flip", "copy", "cut"]),
                     st.floats(0, 1), st.floats(0, 1), st.sampled_from(TOKENS),
                     st.integers(0, 255))


def _mutate(data, ops):
    data = bytearray(data)
    for kind, where, extent, token, byte in ops:
        pos = int(where * len(data))
        if kind == "number":
            spans = [m.span() for m in _NUMBER.finditer(bytes(data))]
            if spans:
                a, b = spans[int(where * (len(spans) - 1))]
                data[a:b] = token if extent < 0.6 else str(
                    [0, 2 ** 31, 2 ** 63, 10 ** 8, 10 ** 30, -5][byte % 6]).encode()
        elif kind == "insert":
            data[pos:pos] = token
        elif kind == "delete":
            del data[pos:pos + 1 + int(extent * 60)]
        elif kind == "flip" and data:
            data[min(pos, len(data) - 1)] = byte
        elif kind == "copy":
            a = int(extent * len(data))
            data[pos:pos] = data[a:a + 200]
        elif kind == "cut":
            del data[pos:]
    return bytes(data)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), ops=st.lists(mutation, min_size=1, max_size=6),
       packing=st.sampled_from(["plain", "plain", "plain", "gzip", "gzip-damaged"]),
       damage=st.tuples(st.floats(0.1, 1), st.integers(0, 255)))
def test_mutated_real_samples_are_only_ever_refused(tmp_path, seed, ops, packing, damage):
    data = _mutate(seed.read_bytes(), ops)
    if packing != "plain":
        data = gzip.compress(data, mtime=0)
        if packing == "gzip-damaged":
            at = 10 + int(damage[0] * (len(data) - 11))
            data = data[:at] + bytes([damage[1]]) + data[at + 1:]
    path = tmp_path / (seed.name + (".gz" if packing != "plain" else ""))
    path.write_bytes(data)
    _read_only_refuses(path)


@pytest.mark.parametrize("crasher", CRASHERS, ids=lambda p: p.name)
def test_every_crasher_found_is_refused(crasher):
    _read_only_refuses(crasher)


def test_nan_and_infinity_in_bench_json_counts(tmp_path):
    for value in ("NaN", "Infinity", "-Infinity", "1e400"):
        path = tmp_path / f"bench_{value}.json"
        path.write_text(json.dumps({"spec_decode_num_drafts": 100, "spec_decode_draft_tokens": 300,
                                    "spec_decode_accepted_tokens": 150}).replace("150", value))
        result = _read_only_refuses(path)
        assert [str(p) for p in result.problems] == [
            f"{path}: spec_decode_accepted_tokens is {float(value)!r}, not a count"]


def test_corrupt_gzip_is_refused_with_its_path(tmp_path):
    body = b"".join(f"INFO 11-30 05:00:{i:02d} metrics: line {i}\n".encode() for i in range(2000))
    packed = gzip.compress(body, mtime=0)
    for at in range(20, len(packed)):  # the first damage that breaks a deflate block
        data = packed[:at] + bytes([packed[at] ^ 0xFF]) + packed[at + 1:]
        try:
            gzip.decompress(data)
        except zlib.error:  # not OSError: what the readers did not catch
            break
        except (OSError, EOFError):
            continue
    path = tmp_path / "server.log"
    path.write_bytes(data)
    with pytest.raises(zlib.error):
        gzip.decompress(data)
    with pytest.raises(ParseError, match="unreadable compressed data") as info:
        list(_io.iter_lines(path))
    assert info.value.path == str(path)
    _read_only_refuses(path)


def test_a_gzip_member_without_newlines_is_refused_at_its_line(tmp_path):
    path = tmp_path / "server.log.gz"
    head = b"INFO 11-30 05:00:00 SpecDecoding metrics: Mean acceptance length: 2.00\n" * 3
    path.write_bytes(gzip.compress(head + b"x" * (_io.MAX_LINE + (1 << 20)), mtime=0))
    tracemalloc.start()
    with pytest.raises(ParseError) as info:
        for _ in _io.scan(path, [b"SpecDecoding"]):
            pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(info.value) == (f"{path}:4: line longer than {_io.MAX_LINE >> 20} MiB: not a log "
                               "line (binary data, or a compressed stream without newlines?)")
    assert peak < 3 * _io.MAX_LINE
    with pytest.raises(ParseError, match=f"^{re.escape(str(path))}:4: line longer than"):
        list(_io.iter_lines(path))


@pytest.mark.parametrize("line", [
    # llama.cpp request line: D is derived from A and the rates, never by listing 1..A
    "slot print_timing: id 1 | task 0 | draft acceptance = 0.5 (100000000 accepted / 200000000 "
    "generated), mean acceptance length = 2.92, acceptance rate per position = (0.805, 0.632, "
    "0.483)",
    # llama.cpp statistics: 1e12 drafts, counts at the edge of the rounding of the rates
    "statistics draft-eagle3: #gen drafts = 1000000000000, #gen tokens = 259, #acc tokens = "
    "1000900000000, #mean acc len = 2.00, #acc rate/pos = (0.5, 0.5)",
    # ATOM log: a distribution key claiming K = 10^8
    "[MTP Stats] Accepted/Total Draft tokens: 6/300000000, Acceptance rate: 0.01%, Average "
    "tokens per forward: 1.00, Distribution: {0: '50.0%', 100000000: '50.0%'}",
])
def test_claimed_counts_cost_neither_memory_nor_time(tmp_path, line):
    path = tmp_path / "claims.log"
    path.write_text(line + "\n")
    tracemalloc.start()
    started = time.perf_counter()
    _read_only_refuses(path)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20 and elapsed < 5, (peak, elapsed)


def test_prometheus_histogram_label_claiming_a_huge_k(tmp_path):
    path = tmp_path / "atom.prom"
    path.write_text("# TYPE atom:mtp_decode_steps_total counter\n"
                    'atom:mtp_decode_steps_total{accepted_tokens="100000000"} 46020.0\n'
                    "# TYPE atom:mtp_accepted_tokens_total counter\n"
                    "atom:mtp_accepted_tokens_total 553980.0\n")
    result = _read_only_refuses(path)
    assert any("accepted_tokens label of 0..256" in p.message for p in result.problems)
