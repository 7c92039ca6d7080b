"""Ingest speed against ``grep -c "SpecDecoding metrics"`` on the same vLLM server log.

Generates a realistic vLLM V1 server log (per 10 s interval and data-parallel
engine: an ``Engine NNN:`` throughput line and a ``SpecDecoding metrics:``
line; uvicorn access lines in between; start-up lines first), then times, in
alternating order, ``grep -c`` and :func:`goldenal.readers.ingest` (in-process,
to completion, with the pooled summary) and reports the medians and their
ratio.  Run by hand, not in tests:

    python benchmarks/ingest_vs_grep.py --mb 200
    python benchmarks/ingest_vs_grep.py --mb 1024 --runs 3 --keep /tmp/big.log

The ratio depends on the density of spec lines: the text around them costs a
``memmem`` scan in the compiled ``_logscan`` (as ``grep`` does), each spec line
a match in C and its share of the column-wise arithmetic in numpy.  Without
the compiled scan (``--python``), every spec line is matched and checked in
Python, several times slower.  ``--access``
(access lines per interval), ``--requests`` (request-log lines per interval)
and ``--dp`` (engines) set the mix, or ``--mix`` names one of :data:`MIXES`;
``--reuse`` times an existing log kept by ``--keep`` instead of writing one,
``--profile`` prints where one ingest spends its time (cProfile), and
``--memory`` the peak resident memory of one :func:`~goldenal.readers.ingest`
and of one streaming pass (:class:`~goldenal.readers.IngestStream`, as
``goldenal ingest --format jsonl`` reads), each in a fresh interpreter.  The
file is written to a temporary directory and removed afterwards unless
``--keep`` names a path.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

START = """\
(APIServer pid={pid}) INFO 11-30 04:00:01 [api_server.py:1896] vLLM API server version 0.20.1
(APIServer pid={pid}) INFO 11-30 04:00:01 [utils.py:328] non-default args: {{'model': 'MiniMaxAI/MiniMax-M3', 'tensor_parallel_size': 8, 'speculative_config': {{'method': 'eagle3', 'model': '/workspace/draft_models/MiniMax-M3-EAGLE3', 'num_speculative_tokens': {k}, 'attention_backend': 'FLASH_ATTN'}}}}
(APIServer pid={pid}) INFO 11-30 04:00:09 [model.py:547] Resolved architecture: MiniMaxM3ForCausalLM
(APIServer pid={pid}) INFO 11-30 04:03:41 [api_server.py:1938] Starting vLLM API server 0 on http://0.0.0.0:8888
"""
REQUEST = ("(APIServer pid={pid}) INFO {ts} [logger.py:41] Received request chatcmpl-{rid:032x}: "
           "prompt: '{prompt}', params: SamplingParams(n=1, temperature=1.0, top_p=0.95, "
           "top_k=40, max_tokens=4096), prompt_token_ids: None, lora_request: None.\n")
ACCESS = ('(APIServer pid={pid}) INFO:     127.0.0.1:{port} - "POST /v1/chat/completions '
          'HTTP/1.1" 200 OK\n')
THROUGHPUT = ("(APIServer pid={pid}) INFO {ts} [loggers.py:271] Engine {e:03d}: Avg prompt "
              "throughput: {pt:.1f} tokens/s, Avg generation throughput: {gt:.1f} tokens/s, "
              "Running: {run} reqs, Waiting: 0 reqs, GPU KV cache usage: {kv:.1f}%, "
              "Prefix cache hit rate: 0.0%\n")
SPEC = ("(APIServer pid={pid}) INFO {ts} [metrics.py:101] SpecDecoding metrics: Mean acceptance "
        "length: {mean:.2f}, Accepted throughput: {at:.2f} tokens/s, Drafted throughput: "
        "{dt:.2f} tokens/s, Accepted: {a} tokens, Drafted: {t} tokens, Per-position acceptance "
        "rate: {rates}, Avg Draft acceptance rate: {pct:.1f}%\n")


# named mixes (dp engines, access lines and request-log lines per 10 s interval)
MIXES = {"default": (2, 16, 0), "requests": (2, 16, 4), "access": (2, 64, 0),
         "dense": (8, 16, 0), "sparse": (1, 64, 8)}


def spec_line(rng, pid, ts, k=3):
    """One consistent V1 spec line: survival counts drawn for D steps."""
    drafts = rng.randint(200, 2000)
    counts, alive = [], drafts
    for i in range(k):
        alive = sum(1 for _ in range(alive) if rng.random() < (0.85 if i == 0 else 0.7)) \
            if alive < 64 else int(alive * (0.85 if i == 0 else 0.7) + rng.random())
        counts.append(alive)
    accepted, drafted = sum(counts), drafts * k
    rates = ", ".join(f"{c / drafts:.3f}" for c in counts)
    return SPEC.format(pid=pid, ts=ts, mean=1 + accepted / drafts, at=accepted / 10,
                       dt=drafted / 10, a=accepted, t=drafted, rates=rates,
                       pct=100 * accepted / drafted)


def generate(path, megabytes, *, dp=2, access=16, requests=0, k=3, seed=0):
    """Write about ``megabytes`` MiB of log; returns the number of spec lines.

    Per 10 s interval: ``access`` uvicorn access lines, ``requests`` request
    log lines (``--enable-log-requests``, a ~1.5 KB prompt each), then per
    engine a throughput line and a spec-decode line.
    """
    rng = random.Random(seed)
    pid = 13026
    # a pool of distinct lines keeps generation fast; timestamps still advance
    pool = [spec_line(rng, pid, "{ts}", k) for _ in range(2000)]
    target = megabytes << 20
    written, spec, second = 0, 0, 0
    with open(path, "w") as fh:
        head = START.format(pid=pid, k=k)
        fh.write(head)
        written += len(head)
        while written < target:
            second += 10
            ts = f"11-30 {4 + second // 3600 % 20:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
            block = []
            for _ in range(requests):
                block.append(REQUEST.format(pid=pid, ts=ts, rid=rng.getrandbits(128),
                                            prompt="Write a function that " * 70))
            for _ in range(access):
                block.append(ACCESS.format(pid=pid, port=rng.randint(30000, 60000)))
            for e in range(dp):
                block.append(THROUGHPUT.format(pid=pid, ts=ts, e=e, pt=rng.random() * 3000,
                                               gt=rng.random() * 1000, run=rng.randint(1, 64),
                                               kv=rng.random() * 90))
                block.append(pool[spec % len(pool)].replace("{ts}", ts))
                spec += 1
            text = "".join(block)
            fh.write(text)
            written += len(text)
    return spec


def time_grep(path):
    t0 = time.perf_counter()
    out = subprocess.run(["grep", "-c", "SpecDecoding metrics", path], capture_output=True,
                         text=True, check=False)
    return time.perf_counter() - t0, int(out.stdout.strip() or 0)


def time_ingest(path):
    from goldenal.readers import ingest

    t0 = time.perf_counter()
    obs = ingest(path)
    cells = obs.summary()
    elapsed = time.perf_counter() - t0
    return elapsed, len(obs), cells


_MEMORY = """
import resource, sys
from goldenal.readers import IngestStream, ingest


def peak():
    # VmHWM: this process's own high-water mark (ru_maxrss keeps the parent's across exec)
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


base = peak()
if sys.argv[2] == "ingest":
    obs = ingest(sys.argv[1])
    obs.summary()
    n = len(obs)
else:
    n = sum(1 for _ in IngestStream(sys.argv[1]))
print(n, base, peak())
"""


def peak_memory(path, mode):
    """``(windows, KiB after imports, peak KiB)`` of one read in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _MEMORY, path, mode], capture_output=True,
                         text=True, check=True)
    n, base, peak = map(int, out.stdout.split())
    return n, base, peak


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="log size in MiB (default 200)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--dp", type=int, default=2, help="data-parallel engines (default 2)")
    parser.add_argument("--access", type=int, default=16,
                        help="access lines per 10 s interval (default 16)")
    parser.add_argument("--requests", type=int, default=0,
                        help="request log lines per interval (--enable-log-requests; default 0)")
    parser.add_argument("--mix", choices=sorted(MIXES),
                        help="a named mix (sets --dp, --access and --requests)")
    parser.add_argument("--keep", metavar="PATH", help="write the log here and keep it")
    parser.add_argument("--reuse", action="store_true",
                        help="time the existing --keep file instead of writing it")
    parser.add_argument("--profile", action="store_true",
                        help="also profile one ingest and print the top functions")
    parser.add_argument("--memory", action="store_true",
                        help="also report the peak memory of ingest() and of streaming")
    parser.add_argument("--python", action="store_true",
                        help="time the pure-Python reading (the compiled scan switched off)")
    args = parser.parse_args(argv)
    if args.mix:
        args.dp, args.access, args.requests = MIXES[args.mix]
    if args.python:
        from goldenal.readers import vllm_log

        vllm_log._logscan = None
    tmp = None
    if args.keep:
        path = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="goldenal-bench-")
        path = os.path.join(tmp, "server.log")
    try:
        t0 = time.perf_counter()
        if args.reuse and args.keep and os.path.exists(path):
            spec = time_grep(path)[1]
        else:
            spec = generate(path, args.mb, dp=args.dp, access=args.access,
                            requests=args.requests)
        size = os.path.getsize(path)
        print(f"{'reused' if args.reuse else 'generated'} {size / 2**20:.0f} MiB, {spec} spec "
              f"lines in {time.perf_counter() - t0:.1f} s: {path}", file=sys.stderr)
        grep_t, ingest_t = [], []
        time_grep(path)  # warm the page cache once for both
        for _ in range(args.runs):
            g, count = time_grep(path)
            i, windows, cells = time_ingest(path)
            grep_t.append(g)
            ingest_t.append(i)
            if count != windows:
                print(f"warning: grep counted {count} lines, ingest read {windows} windows",
                      file=sys.stderr)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(time_ingest, path)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(12)
        if args.memory:
            for mode in ("ingest", "stream"):
                n, base, peak = peak_memory(path, mode)
                print(f"peak memory, {mode}: {peak / 1024:.0f} MiB ({base / 1024:.0f} MiB after "
                      f"imports; {n} windows)")
        g, i = statistics.median(grep_t), statistics.median(ingest_t)
        al = cells[0].acceptance_length if len(cells) else float("nan")
        mix = "reused file" if args.reuse else (f"dp={args.dp}, access/interval={args.access}, "
                                                f"requests/interval={args.requests}")
        from goldenal.readers import vllm_log

        how = "compiled scan" if vllm_log._logscan is not None else "Python only"
        print(f"file {size / 2**20:.0f} MiB, {spec} spec lines ({mix}; {how}); "
              f"pooled AL {al:.4f}; {1e6 * i / spec:.1f} us per spec line")
        print(f"grep -c: median {g:.3f} s   ingest: median {i:.3f} s   "
              f"ratio {i / g:.2f}x (runs: grep {', '.join(f'{x:.3f}' for x in grep_t)}; "
              f"ingest {', '.join(f'{x:.3f}' for x in ingest_t)})")
    finally:
        if tmp:
            try:
                os.remove(path)
                os.rmdir(tmp)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
