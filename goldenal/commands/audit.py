"""Check a recipe repository against the golden curves, like a linter.

Walks the given files or directories (default: the current directory) and
reports spec-decode configs whose synthetic-acceptance knob is missing, wrong
for the served model, draft head, thinking mode and K, in the wrong unit,
ignored by the engine, or set where it must not be.  Nothing is executed.

Example:
  goldenal audit .
  goldenal audit benchmarks/ --format json --select GAL2
  goldenal audit --explain GAL201

Suppress one finding with a comment on its line: # goldenal: ignore[GAL201]

In Python: goldenal.audit(paths) -> list[Finding]
"""

import sys

from goldenal.errors import EXIT_OK, EXIT_REFUSED, EXIT_USAGE


def configure(parser):
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default .)")
    parser.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                        help="output format (default text: path:line:col: CODE message)")
    parser.add_argument("--select", metavar="CODES", help="only these codes or prefixes, comma-separated")
    parser.add_argument("--ignore", metavar="CODES", help="drop these codes or prefixes, comma-separated")
    parser.add_argument("--explain", metavar="CODE", help="print a rule's documentation and exit")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are found")
    parser.add_argument("--golden-dir", metavar="DIR", help="golden directory (default $GOLDENAL_DIR or packaged)")
    parser.add_argument("--root", metavar="DIR", help="report paths relative to DIR")


def run(args):
    from goldenal.lint import audit, explain
    from goldenal.lint.formatters import FORMATTERS

    if args.explain:
        page = explain(args.explain)
        if page is None:
            print(f"error: unknown rule {args.explain!r}", file=sys.stderr)
            return EXIT_USAGE
        sys.stdout.write(page)
        return EXIT_OK
    findings = audit(args.paths or ["."], root=args.root, golden_dir=args.golden_dir,
                     select=args.select, ignore=args.ignore)
    sys.stdout.write(FORMATTERS[args.format](findings))
    if args.exit_zero:
        return EXIT_OK
    return EXIT_REFUSED if any(f.severity == "error" for f in findings) else EXIT_OK
