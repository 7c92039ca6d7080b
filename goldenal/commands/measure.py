"""Measure acceptance on a live server into a run directory (one cell per K).

Sends the prompt set (the same prompts, in the same order, at every K) to an
OpenAI-compatible server, streaming at a fixed concurrency; scrapes /metrics
before the workload and after every request (a counter going down is a
restart); writes RUN_DIR with a run.yaml that ingest, fit, diff and verify
read.  The engine is detected from the server (/metrics prefixes, /v1/models,
/props, /get_server_info, /version).  At --concurrency 1 every request gets
its own counts, so fit can resample whole requests; SGLang reports its own
per-request counts (sent non-streaming) at any concurrency.

--server-cmd measures a whole curve: per K it starts a server ({k} is K,
{port} a free port; URL defaults to http://127.0.0.1:{port}), waits for
--server-ready to answer 200, measures, and stops the server's process group,
also on an error or Ctrl-C, keeping its log as server_{on,off}_k{K}.log.
Without it, give a URL with {k} (one running server per K), or measure one K
per call into the same RUN_DIR.  A server whose K is not the cell's is refused
before any load where it says its K, else after the first request.

    goldenal measure --server-cmd 'llama-server -m target.gguf --spec-type draft-simple \\
        --spec-draft-model draft.gguf --spec-draft-n-max {k} --metrics --port {port}' \\
        --out runs/tiny --model tiny-llama --draft tiny-llama-draft --k 1,2,3 \\
        --thinking off --prompts prompts.jsonl
    goldenal measure 'http://127.0.0.1:80{k}0' --out runs/tiny --model tiny-llama \\
        --draft tiny-llama-draft --k 1,2,3 --thinking off --prompts prompts.jsonl

--prompts is JSON lines, {"id": "p1", "prompt": "..."} or {"id": "p1",
"messages": [...]}; without it SPEED-Bench Qualitative `coding` is loaded
through `datasets` (pip install 'goldenal[speedbench]').

stdout: per cell its AL, steps, requests, failures, and p50/p90/p99 of
latency, time to first token and output tokens/s per request, and output
tokens over wall time (--format json: one JSON object).  stderr: warnings
(other traffic on the server, failed requests, requests that all drafted and
accepted exactly alike: one accept/reject sequence replayed, as llama-server
with a fixed --seed does).  The run directory appears whole or not at all; a
cell is added atomically; Ctrl-C writes nothing of the cell being measured.

The server is input like any file.  --curve-id, --model, --draft, --method
and the run name (last part of --out) are checked as fit --golden-dir checks
them, before any request.  Every answer is bounded: a /metrics body 64 MiB
(20,000 speculative samples), a JSON answer 16 MiB, a stream line 1 MiB, a
stream 64 MiB, JSON nesting 64 levels, a GET 30 s in all however slowly it
drips (--timeout when shorter), a request --timeout (then retried, and
recorded as failed); a compressed answer is refused.  Past a cap the run stops
(exit 2, URL and cap named, nothing of the cell written).  Counts are checked
as recorded (64-bit integers, 0 <= accepted <= draft tokens <= K x steps,
per-position counts non-increasing and summing to accepted; else exit 1), and
per cell reconciled with the /metrics counters (steps, draft and accepted
tokens, per position): a difference beyond counting noise (one step per
request in flight, up to --max-tokens steps per attempt that left no count)
refuses the cell (exit 1, both figures named), written marked `inconsistent`,
which fit --golden-dir refuses.  A user:password and a query in URL are sent,
never written.

In Python: goldenal.measure(url, out=..., model=..., k=..., thinking=...)
-> MeasureResult (.to_frame(): one row per request);
goldenal.measure_sweep(server_cmd, out=..., k=[1, 2, 3], ...) -> SweepResult;
goldenal.measurement_summary(result) -> dict (what --format json prints).
"""

EXIT_CODES = """\
  0    measured
  1    a cell refused: a counter reset mid-run, the server's K disagrees, every
       request failed, impossible or inconsistent counts
  2    unreachable server, a server that exited or was not ready in time, an answer
       past a cap, bad input
  3    the cell exists (--replace to measure it again), or another writer held the
       run directory's lock for 60 s (measures into one run take turns)
  130  interrupted (Ctrl-C): the cell being measured is not written
"""

import sys

from goldenal.core.errors import EXIT_OK


def _k_list(text):
    import argparse

    try:
        ks = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K or K,K,...: {text!r}") from None
    if any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"K must be positive: {text!r}")
    return ks


def configure(parser):
    from goldenal.commands._selection import _non_negative_int, _positive_float, _positive_int
    from goldenal.engines import ENGINES

    parser.add_argument("url", metavar="URL", nargs="?",
                        help="server URL, e.g. http://127.0.0.1:8080 (a trailing /v1 dropped; "
                             "{k} for one server per K; {port} with --server-cmd)")
    parser.add_argument("--server-cmd", metavar="CMD",
                        help="shell command starting a server per K ({k}: K, {port}: a free port)")
    parser.add_argument("--server-ready", metavar="URL",
                        help="with --server-cmd: polled until it answers HTTP 200 before any "
                             "request ({k} and {port} filled in; default URL/health)")
    parser.add_argument("--server-timeout", type=_positive_float, default=600.0, metavar="S",
                        help="with --server-cmd: seconds to become ready (default 600)")
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="text (default) or json: the summary as one JSON object on stdout")
    parser.add_argument("--out", required=True, metavar="RUN_DIR",
                        help="run directory to create (parents too), or a run to add cells to")
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="model key, as in the golden curves")
    parser.add_argument("--draft", action="append", default=[], metavar="HEAD",
                        help="draft head id (repeatable; omit for native MTP)")
    parser.add_argument("--k", required=True, type=_k_list, metavar="K[,K...]",
                        help="num_speculative_tokens of the cell(s)")
    parser.add_argument("--thinking", required=True, choices=["on", "off"],
                        help="thinking mode (sent as chat_template_kwargs enable_thinking)")
    parser.add_argument("--prompts", metavar="FILE",
                        help="prompt set, JSON lines (default: SPEED-Bench Qualitative coding)")
    parser.add_argument("--concurrency", type=_positive_int, default=1, metavar="N",
                        help="requests in flight (default 1: per-request counts)")
    parser.add_argument("--max-tokens", type=_positive_int, default=4096, metavar="N",
                        help="output cap per request (default 4096)")
    parser.add_argument("--requests", type=_positive_int, metavar="N",
                        help="send the first N prompts (default: all)")
    parser.add_argument("--engine", default="auto", choices=["auto", *ENGINES],
                        help="engine (default: detected; one the server lacks is refused)")
    parser.add_argument("--method", metavar="NAME", help="mtp | eagle3 | draft | ... (run.yaml)")
    parser.add_argument("--curve-id", metavar="ID", help="curve id the run measures")
    parser.add_argument("--temperature", type=float, default=0.0, metavar="T",
                        help="sampling temperature (default 0: greedy)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="request i carries seed N+i, the same at every K")
    parser.add_argument("--ignore-eos", action="store_true",
                        help="every request runs to --max-tokens (a fixed output length)")
    parser.add_argument("--chat-template-kwargs", metavar="JSON",
                        help="sent instead of {\"enable_thinking\": ...}")
    parser.add_argument("--retries", type=_non_negative_int, default=2, metavar="N",
                        help="retries after no connection, a timeout, a broken stream or HTTP "
                             "408/425/429/5xx (Retry-After honoured up to 60 s; default 2); "
                             "another 4xx fails the request at once, with the server's message")
    parser.add_argument("--timeout", type=_positive_float, default=600.0, metavar="S",
                        help="seconds per request (default 600)")
    parser.add_argument("--replace", action="store_true",
                        help="measure a cell the run already has again")
    parser.add_argument("--note", metavar="TEXT", help="a note written into run.yaml")
    parser.add_argument("--not-golden", metavar="REASON",
                        help="mark the run no golden material (e.g. a random test model) in "
                             "run.yaml; fit writes it only with --allow-not-golden")
    parser.add_argument("--progress", action="store_true", default=None,
                        help="show the progress bar even when stderr is not a terminal")


def _pct(stats, scale=1.0, digits=3):
    if not stats:
        return "-"
    return "/".join(f"{stats[p] * scale:.{digits}f}" for p in ("p50", "p90", "p99"))


def _text(summary):
    out = ""
    for c in summary["cells"]:
        overall = c["throughput_tokens_per_s"]
        out += (f"thinking {c['thinking']}  K={c['k']}  AL {c['acceptance_length']:.4f}  "
                f"({c['accepted']} accepted / {c['steps']} steps)  {c['requests']} requests, "
                f"{c['failed']} failed  "
                f"{'per-request counts' if c['per_request'] else 'one window'}\n"
                f"  p50/p90/p99: latency {_pct(c['latency_s'])} s  ttft {_pct(c['ttft_s'])} s  "
                f"output {_pct(c['tokens_per_s'], digits=1)} tok/s per request; "
                f"{c['output_tokens']} tokens in {c['wall_seconds']:.2f} s"
                + (f" = {overall:.1f} tok/s" if overall else "") + "\n")
    return out


def _on_sigterm(*_):
    raise KeyboardInterrupt


def run(args):
    import json
    import signal

    from goldenal.commands._output import print_result
    from goldenal.commands._selection import given
    from goldenal.core.errors import GoldenALError, UsageError
    from goldenal.measuring.measure import measure
    from goldenal.measuring.sweep import measure_sweep, measurement_summary

    kwargs = None
    if args.chat_template_kwargs is not None:
        try:
            kwargs = json.loads(args.chat_template_kwargs)
        except ValueError as exc:
            raise UsageError(f"--chat-template-kwargs is not JSON: {exc}") from None
        if not isinstance(kwargs, dict):
            raise UsageError("--chat-template-kwargs must be a JSON object")
    if args.server_cmd is None:
        if args.url is None:
            raise UsageError("give the server's URL, or --server-cmd to start one per K")
        if args.server_ready is not None:
            raise UsageError("--server-ready needs --server-cmd")
    common = given(args, "out model draft thinking prompts concurrency max_tokens requests engine "
                         "method temperature seed ignore_eos retries timeout replace note "
                         "not_golden progress")
    common.update(curve=args.curve_id, chat_template_kwargs=kwargs)
    old = None
    try:
        if args.server_cmd is not None:
            # a SIGTERM (a CI timeout, kill) stops the server as Ctrl-C does
            old = signal.signal(signal.SIGTERM, _on_sigterm)
            result = measure_sweep(args.server_cmd, url=args.url, k=args.k,
                                   server_ready=args.server_ready,
                                   server_timeout=args.server_timeout, **common)
        else:
            result = measure(args.url, k=args.k if len(args.k) > 1 else args.k[0], **common)
    except KeyboardInterrupt as exc:
        log = getattr(exc, "server_log", None)
        print(f"interrupted: the cell being measured was not written to {args.out} (cells "
              "finished before it were)" + (f"; server log: {log}" if log else ""),
              file=sys.stderr)
        return 130
    except GoldenALError as exc:
        log = getattr(exc, "server_log", None)
        if log:
            print(f"note: the server's log is {log}", file=sys.stderr)
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    summary = measurement_summary(result)
    print_result(args.format == "json", lambda: summary, lambda: _text(summary))
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {result.path} ({result.server.engine}; "
          f"{', '.join(result.server.detected_by)})", file=sys.stderr)
    return EXIT_OK
