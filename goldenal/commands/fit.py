"""Fit measurement runs into a golden curve with uncertainty, and write it.

    goldenal fit measurements/minimaxm3-eagle3-2026-11
    goldenal fit measurements/minimaxm3-eagle3-2026-11 --golden-dir golden_al_distribution

RUN is a run directory with its run.yaml, or an InferenceX collector results
directory as it is (server_{on,off}_mtp{K}.log, speedbench_*.json; identity
from --model, --draft, --method, --variant and --curve-id).  Per cell: AL = 1
+ accepted / steps (committed with printf "%.2f" rounding) and an interval for
the prompt population's AL, clipped to [1, K+1], from independent units only:
a studentized bootstrap over requests, 10 or more runs, or batches of log
windows at least as long as the longest request (needs dataset.output_len and
concurrency in run.yaml).  Fewer than 10 units (or than 10 that accepted some
but not every draft), units without spread, or a request longer than
dataset.output_len give the value, no interval and the reason (`goldenal
plan`: the requests an interval needs).  Chain-drafting curves (EAGLE, MTP,
draft model) with per-request records are checked across K (requests
re-weighted by tokens): a cell beyond a 0.02 AL margin is flagged, and the
shift each cell could reveal printed.

Without --golden-dir the curve is printed and nothing written.  With it:
<curve-id>.yaml, <curve-id>.distribution.json (counts, per-position survival,
intervals), the manifest.yaml entry and index.tsv, each named.  A directory
already holding the curve (its id, or the same model, method, draft and
variant) is refused unless --replace REASON (recorded).  Refused unless
allowed: mean-only cells (no step counts, e.g. SGLang decode lines), a
simulated run, a run marked `not_golden: REASON` by measure --not-golden (for
scratch directories; the reason goes into the provenance).  A cell `measure`
marked `inconsistent` (per-request counts and server counters disagree) is
never written.  --format json gives every cell's estimate, interval, step count
and `checks` (interval, output_cap, cross_k; cross_k per thinking mode too),
each with its status (done, flagged, failed, skipped) and reason; the text
names every skipped check and why.

In Python: goldenal.fit(goldenal.load_run(path)).
"""

EXIT_CODES = """\
  0  fitted (and written)
  1  refused: a simulated run, a not_golden run or an inconsistent cell with
     --golden-dir, mean-only cells
  2  unreadable run or bad flags
  3  the directory already holds the curve (--replace REASON)
"""

import math
import sys


def add_identity_arguments(parser):
    """--model, --draft, --method, --variant, --curve-id (for runs without run.yaml)."""
    parser.add_argument("--model", help="model key of the curve, e.g. minimax-m3")
    parser.add_argument("--draft", action="append", metavar="HEAD",
                        help="draft head HF id (repeatable; none for native MTP)")
    parser.add_argument("--method", help="drafting method: mtp, eagle3, dspark, dflash, ...")
    parser.add_argument("--variant", action="append", metavar="KEY=VALUE",
                        help="sampling variant, e.g. draft_sample_method=probabilistic")
    parser.add_argument("--curve-id", metavar="ID", help="curve id (file stem) to write")


def identity_from_args(args):
    """The identity keyword arguments given on the command line."""
    from goldenal.core.errors import ParseError

    variant = {} if args.variant else None
    for item in args.variant or ():
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ParseError(f"--variant expects KEY=VALUE, got {item!r}")
        variant[key.strip()] = value.strip()
    return {"model": args.model, "draft": args.draft, "method": args.method,
            "variant": variant, "curve": args.curve_id}


def add_fit_arguments(parser):
    from goldenal.commands._selection import _level, _non_negative_int, _resamples

    parser.add_argument("--confidence-level", type=_level, default=0.95, metavar="LEVEL",
                        help="level of every interval (default 0.95)")
    parser.add_argument("--n-resamples", type=_resamples, default=9999, metavar="N",
                        help="bootstrap resamples per cell (default 9999)")
    parser.add_argument("--seed", type=_non_negative_int, default=0,
                        help="seed of the resampling (default 0: reproducible)")
    parser.add_argument("--interval-method", default="auto",
                        choices=["auto", "bootstrap", "runs", "batch-means"],
                        help="interval method (default: the one the data allow; none when "
                             "fewer than 10 independent units)")


def fit_kwargs(args):
    return {"confidence_level": args.confidence_level, "n_resamples": args.n_resamples,
            "rng": args.seed, "interval_method": args.interval_method}


def configure(parser):
    from goldenal.commands._output import add_written_golden_dir

    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory")
    add_written_golden_dir(parser, "golden directory to write the curve into (default: print "
                                    "the fitted curve and write nothing)")
    add_identity_arguments(parser)
    add_fit_arguments(parser)
    parser.add_argument("--replace", metavar="REASON",
                        help="replace a curve the directory already holds; REASON is recorded")
    parser.add_argument("--allow-simulated", action="store_true",
                        help="accept a simulated run (only for scratch directories)")
    parser.add_argument("--allow-not-golden", action="store_true",
                        help="write a run marked not_golden (scratch directories; reason kept)")
    parser.add_argument("--allow-mean-only", action="store_true",
                        help="commit cells resting on printed means only (no steps, no interval)")
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="json: every cell's estimate, interval and step count (for CI)")
    parser.add_argument("--summary-md", metavar="FILE",
                        help="also write a Markdown report (e.g. $GITHUB_STEP_SUMMARY)")


def _num(x):
    """JSON has no nan or infinity: None."""
    return None if isinstance(x, float) and not math.isfinite(x) else x


def cell_json(cell):
    """The per-cell record of ``--format json``."""
    lo, hi = cell.confidence_interval
    return {"thinking": cell.thinking, "k": cell.k, "value": cell.text,
            "estimate": _num(cell.mean_acceptance_length),
            "interval": {"low": _num(lo), "high": _num(hi), "level": cell.confidence_level,
                         "method": cell.interval_method},
            "n_steps": cell.n_steps, "mean_only": cell.mean_only,
            "checks": {name: c.to_dict() for name, c in cell.checks.items()}}


def render_text(curvefit, paths):
    pct = f"{100 * curvefit.confidence_level:g}%"
    out = [f"curve {curvefit.curve_id}: {len(curvefit.cells)} cells",
           f"{'thinking':<8} {'K':>2}  {'AL':>5}  {pct + ' interval':<18}  {'method':<11}  "
           f"{'steps':>9}"]
    for (thinking, k), c in curvefit.cells.items():
        if c.failed:
            out.append(f"{thinking:<8} {k:>2}  {'N/A':>5}  {'-':<18}  {'failed':<11}  {'-':>9}")
            continue
        lo, hi = c.confidence_interval
        interval = f"[{lo:.3f}, {hi:.3f}]" if math.isfinite(lo) else "-"
        method = "mean-only" if c.mean_only else c.interval_method
        out.append(f"{thinking:<8} {k:>2}  {c.text:>5}  {interval:<18}  "
                   f"{method:<11}  {c.n_steps if c.n_steps is not None else '-':>9}")
    out += ["flagged: " + flag.message for flag in curvefit.flags]
    for thinking, model in curvefit.models.items():
        reach = getattr(model, "detectable_text", "")
        check = curvefit.checks.get("cross_k", {}).get(thinking)
        if check is not None and check.status == "skipped":
            out.append(f"cross-K check, thinking {thinking}: skipped: {check.reason}")
        elif reach:
            out.append(f"cross-K check, thinking {thinking}: {reach}")
    cells = [c for c in curvefit.cells.values() if not c.failed]
    out += [f"no interval: {reason}"
            for reason in sorted({c.interval_reason for c in cells if c.interval_reason})]
    out += [f"interval, thinking {c.thinking}, K={c.k}: {check.reason}" for c in cells
            if (check := c.checks.get("interval")) and check.status == "done" and check.reason]
    caps = {c.checks["output_cap"].reason for c in cells if not c.mean_only
            and "output_cap" in c.checks and c.checks["output_cap"].status == "skipped"}
    out += [f"output cap check skipped: {reason}" for reason in sorted(caps)]
    out.append(f"estimand: {curvefit.estimand}")
    out += [f"wrote {p}" for p in paths]
    return "\n".join(out) + "\n"


def run(args):
    import os

    from goldenal.commands._output import (check_destination, print_result,
                                           warnings_to_stderr, written_golden_dir)
    from goldenal.golden.curves import INDEX_NAME, MANIFEST_NAME
    from goldenal.stats import fit, output
    from goldenal.stats.results import checks_dict

    out = written_golden_dir(args)
    check_destination(args.summary_md, "--summary-md")
    merged = output.load_runs(args.runs, identity=identity_from_args(args))
    if not args.allow_simulated:
        output.refuse_simulated(merged)
    if out is not None:
        if not args.allow_not_golden:
            output.refuse_not_golden(merged)
        output.refuse_inconsistent(merged)
        if merged.identity.get("curve"):  # refuse before the (slow) fit
            output.check_writable(out, merged.identity["curve"], replace_reason=args.replace,
                                  identity=merged.identity)
    with warnings_to_stderr():
        curvefit = fit(merged, **fit_kwargs(args))
    for message in getattr(merged, "warnings", ()):
        print(f"warning: {message}", file=sys.stderr)
    paths = []
    if out is None:
        print("note: nothing written; --golden-dir DIR commits the curve to a golden "
              "directory", file=sys.stderr)
    else:
        paths = [*output.write_fit(curvefit, out, replace_reason=args.replace,
                                   allow_simulated=args.allow_simulated,
                                   allow_mean_only=args.allow_mean_only,
                                   allow_not_golden=args.allow_not_golden),
                 os.path.join(out, MANIFEST_NAME), os.path.join(out, INDEX_NAME)]
        for thinking, k in output.mean_only_cells(curvefit):
            print(f"warning: thinking {thinking} K={k}: golden value "
                  f"{curvefit.cells[thinking, k].text} committed from printed means only "
                  "(--allow-mean-only): no step counts, no interval", file=sys.stderr)
    if args.summary_md:
        from goldenal.core.files import write_text_atomic
        from goldenal.stats.report import fit_markdown

        write_text_atomic(args.summary_md, fit_markdown(curvefit))
    print_result(args.format == "json", lambda: {
        "curve": curvefit.curve_id, "files": list(paths),
        "cells": [cell_json(c) for c in curvefit.cells.values()],
        "checks": checks_dict(curvefit.checks),
        "flags": [{key: _num(v) for key, v in f._asdict().items()} for f in curvefit.flags]},
        lambda: render_text(curvefit, paths))
    return 0
