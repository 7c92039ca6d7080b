"""Read measurement files into observations: one record per measurement window.

Every format is read by content (plain or .gz): vLLM server logs (V0 to
current V1, any prefix, DP engines interleaved), /metrics scrapes (one, or a
*before*/*after* pair differenced), `vllm bench serve` JSON and console
output, the offline example, per-request metrics, SGLang logs and request counts,
TensorRT-LLM iteration stats, ATOM MTP stats, llama.cpp statistics and
/metrics, `goldenal measure` per-request records.  A run directory (run.yaml,
or an InferenceX collector results directory) is read cell by cell.

    goldenal ingest server_on_mtp3.log --windows
    goldenal ingest metrics_before.prom metrics_after.prom --format jsonl
    goldenal ingest measurements/minimaxm3-eagle3-2026-11/ --format csv > obs.csv

Output: the per-cell summary (pooled AL = 1 + sum accepted / sum drafts,
steps, windows); --windows lists every window too.  --format csv or jsonl
streams a row per window as it is read (keys source, line, engine, format, k,
drafts, draft_tokens, accepted, accepted_per_position, mean_al; null where
unknown), the summary then on stderr.  Windows carrying only a printed mean
are marked mean-only and never pooled as counts.

In Python: goldenal.ingest(paths) -> Observations; goldenal.load_run(dir).
"""

EXIT_CODES = """\
  0  every window read
  1  some windows refused (each named as path:line: reason on stderr; the totals are
     then partial)
  2  a file unreadable or in no known format (--strict: the first refused window)
"""

import csv
import json
import os
import sys

from goldenal.core.errors import EXIT_OK, EXIT_REFUSED, ParseError

KEYS = ("source", "line", "engine", "format", "k", "drafts", "draft_tokens", "accepted",
        "accepted_per_position", "mean_al")


def configure(parser):
    from goldenal.commands._selection import _positive_int

    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="measurement files, or a run directory")
    parser.add_argument("--format", choices=["table", "csv", "jsonl"], default="table",
                        help="output format (default: table)")
    parser.add_argument("--windows", action="store_true",
                        help="table: list every window after the per-cell summary")
    parser.add_argument("--k", type=_positive_int, metavar="K",
                        help="K for sources that do not state it (checked where they do)")
    parser.add_argument("--reader", metavar="NAME",
                        help="force a reader instead of detecting the format")
    parser.add_argument("--strict", action="store_true",
                        help="stop at the first refused window (exit 2)")


def run(args):
    from goldenal.readers import IngestStream, load_run
    from goldenal.readers.observations import Summarizer
    from goldenal.readers.run import is_run_dir

    if len(args.paths) == 1 and is_run_dir(args.paths[0]) and args.reader is None:
        measured = load_run(args.paths[0], k=args.k)
        observations, problems = measured.observations(), measured.problems
        warnings = list(measured.warnings)
        summary = Summarizer(lambda o: (o.thinking, o.k))
    else:
        # csv and jsonl rows are written as they are read: constant memory for any size
        observations = IngestStream(args.paths, k=args.k, reader=args.reader,
                                    strict=args.strict)
        problems, warnings = observations.problems, []
        summary = Summarizer(lambda o: (o.source, o.k))
    table = args.format == "table"
    writer = csv.writer(sys.stdout, lineterminator="\n") if args.format == "csv" else None
    rows, count = [], 0
    for obs in observations:
        summary.add(obs)
        if table:
            rows.append(obs)
        else:
            if writer is not None and not count:
                writer.writerow(KEYS)
            _write_row(writer, obs)
        count += 1
    _no_windows(count, problems, args.paths, warnings)
    text = _summary(summary.result()) + "\n"
    if not table:
        sys.stderr.write(text)
    elif args.windows:
        sys.stdout.write(text + "\n" + _table(rows) + "\n")
    else:
        files = len({o.source for o in rows})
        sys.stdout.write(f"{text}{_count(count, 'window')} from {_count(files, 'file')}; "
                         "--windows lists each\n")
    for problem in problems:
        print(f"{'refused' if problem.refused else 'note'}: {problem}", file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    refused = sum(1 for p in problems if p.refused)
    if refused:
        print(f"incomplete: {refused} window(s) refused; the totals above are partial",
              file=sys.stderr)
        return EXIT_REFUSED
    return EXIT_OK


def _count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _no_windows(count, problems, paths, warnings):
    if count:
        return
    # what explains the empty result (e.g. every window of another K) comes first
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    first = next((p for p in problems if p.refused), None)
    if first is not None:
        raise ParseError(first.message, path=first.path, line=first.line)
    raise ParseError("no observations (no measurement files read)" if not problems
                     else "no observations", path=", ".join(map(str, paths)))


def _write_row(writer, obs):
    from goldenal.readers import as_dict

    row = as_dict(obs)
    if writer is None:
        sys.stdout.write(json.dumps(row) + "\n")
        return
    pos = row["accepted_per_position"]
    row["accepted_per_position"] = "" if pos is None else " ".join(map(str, pos))
    writer.writerow(["" if row[k] is None else row[k] for k in KEYS])


def _fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "nan"
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _table(observations):
    rows = [("source", "line", "format", "k", "drafts", "draft_tok", "accepted", "per_position",
             "mean_al", "al")]
    for o in observations:
        line = "-" if o.line is None else f"{o.line}-{o.line_end}" if o.line_end else str(o.line)
        rows.append((os.path.basename(o.source), line, o.format, *map(_fmt, (
            o.k, o.drafts, o.draft_tokens, o.accepted, o.accepted_per_position, o.mean_al,
            None if o.mean_only else o.acceptance_length))))
    widths = [max(map(len, column)) for column in zip(*rows)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _summary(summary):
    lines = []
    for cell in summary:
        first = cell.cell[0]
        name = f"thinking {first}" if first in ("on", "off") else os.path.basename(str(first))
        head = f"cell {name} K={'?' if cell.k is None else cell.k}: "
        if cell.steps:
            lines.append(f"{head}AL {cell.acceptance_length:.4f} pooled over {cell.steps} steps, "
                         f"{cell.counted_windows} window(s)" + (
                             f"; {cell.mean_only_windows} mean-only window(s) not pooled"
                             if cell.mean_only_windows else ""))
        elif cell.mean_of_means is not None:
            lines.append(f"{head}mean-only, {cell.windows} window(s); unweighted mean of printed "
                         f"means {cell.mean_of_means:.4f} (no step counts: not a pooled AL)")
        else:
            lines.append(f"{head}{cell.windows} window(s) without step counts: AL unknown")
    return "\n".join(lines)
