"""Check a golden directory (default: the packaged curves or $GOLDENAL_DIR).

Errors: K not a positive integer, AL not numeric or outside [1, K+1],
duplicate keys, manifest and files disagreeing, missing provenance, a stale
index.  Warnings (allowed): AL decreasing in K, values without two decimals,
a curve fitted from a run marked not_golden (fit --allow-not-golden).

    goldenal validate
    goldenal validate ../InferenceX/golden_al_distribution

Exit 0 when there are no errors, 1 when errors are found, 2 for unreadable input.

In Python: goldenal.validate(path) -> ValidationReport.
"""

import sys


def configure(parser):
    parser.add_argument("directory", nargs="?", metavar="DIR", help="golden directory")
    parser.add_argument("--quiet", action="store_true", help="print errors only")


def run(args):
    from goldenal.validation import validate

    report = validate(args.directory)
    for problem in report.problems:
        if args.quiet and problem.severity == "warning":
            continue
        print(problem, file=sys.stdout)
    print(f"{report.directory}: {report.curves} curves, {len(report.errors)} errors, "
          f"{len(report.warnings)} warnings, {len(report.unreadable)} unreadable",
          file=sys.stderr)
    if report.unreadable:
        return 2
    return 1 if report.errors else 0
