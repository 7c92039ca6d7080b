"""Check a golden directory (default: the packaged curves or $GOLDENAL_DIR).

Errors: K not a positive integer, AL not numeric or outside [1, K+1],
duplicate keys, manifest and files disagreeing, missing provenance, a stale
index, one name given to two models.  Warnings (allowed): AL decreasing in
K, values without two decimals, a curve fitted from a run marked not_golden
(fit --allow-not-golden), no compiled index.

    goldenal validate
    goldenal validate ../InferenceX/golden_al_distribution

In Python: goldenal.validate(path) -> ValidationReport.
"""

EXIT_CODES = """\
  0  no errors
  1  errors found
  2  unreadable input
"""

import sys


def configure(parser):
    parser.add_argument("directory", nargs="?", metavar="DIR", help="golden directory")
    parser.add_argument("--quiet", action="store_true", help="print errors only")


def run(args):
    from goldenal.golden.validation import validate

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
