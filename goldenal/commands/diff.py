"""Compare two curves cell by cell: delta, and whether it is inside the uncertainty.

    goldenal diff minimaxm3_eagle3 measurements/minimaxm3-eagle3-2026-11
    goldenal diff old/minimaxm3_eagle3.yaml minimaxm3_eagle3 --summary-md report.md

A and B are curve ids (of --golden-dir), curve files, or run directories
(loaded and refused as `goldenal fit` does, then fitted; simulated runs only
with --allow-simulated).  delta = B - A; a cell is "outside" when |delta|
exceeds the band of the combined standard error at --confidence-level.
Committed curves carry uncertainty when their <curve-id>.distribution.json
sits beside them; without it a committed value facing a side with an
interval adds the variance of its two-decimal rounding (0.01^2/12).  Cells
without an interval on either side are shown but not judged.

In Python: goldenal.stats.diff.diff_curves(a, b).
"""

EXIT_CODES = """\
  0  no cell differs beyond its uncertainty (or --exit-zero)
  1  some cell differs beyond its uncertainty, or no such curve
  2  usage error or unreadable input
"""

from goldenal.commands._selection import add_golden_dir_argument, golden_dir
from goldenal.commands.fit import (add_fit_arguments, add_identity_arguments, fit_kwargs,
                                   identity_from_args)


def configure(parser):
    parser.add_argument("a", metavar="A", help="curve id, curve file or run directory")
    parser.add_argument("b", metavar="B", help="curve id, curve file or run directory")
    add_golden_dir_argument(parser)
    add_identity_arguments(parser)
    add_fit_arguments(parser)
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="text table (default) or JSON for tools")
    parser.add_argument("--summary-md", metavar="FILE",
                        help="also write a Markdown report (e.g. $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--allow-simulated", action="store_true",
                        help="accept a simulated run directory (refused by default, as by fit)")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when cells differ beyond their uncertainty")


def run(args):
    from goldenal.commands._output import check_destination, print_result, warnings_to_stderr
    from goldenal.stats.diff import diff_curves

    check_destination(args.summary_md, "--summary-md")
    kwargs = fit_kwargs(args)
    level = kwargs.pop("confidence_level")
    with warnings_to_stderr():
        result = diff_curves(args.a, args.b, confidence_level=level,
                             golden_dir=golden_dir(args), fit_kwargs=kwargs,
                             identity=identity_from_args(args),
                             allow_simulated=args.allow_simulated)
    if args.summary_md:
        from goldenal.core.files import write_text_atomic
        from goldenal.stats.report import diff_markdown

        write_text_atomic(args.summary_md, diff_markdown(result))
    print_result(args.format == "json", result.to_dict, result.format_text)
    return 1 if result.outside and not args.exit_zero else 0
