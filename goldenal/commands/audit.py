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

--fix applies the safe fixes (marked [*]): a wrong literal value replaced by
the golden one, when nothing on that line was assumed and the value occurs
once there; --diff prints those changes and writes nothing.

In Python: goldenal.audit(paths) -> list[Finding]
"""

import os
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
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--fix", action="store_true", help="apply the safe fixes, then report the rest")
    mode.add_argument("--diff", action="store_true",
                      help="print the safe fixes as a unified diff; write nothing")


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
    paths = args.paths or ["."]
    options = dict(golden_dir=args.golden_dir, select=args.select, ignore=args.ignore)
    findings = audit(paths, root=args.root, **options)
    if args.fix or args.diff:
        from goldenal.lint import default_root
        from goldenal.lint.fix import fix_findings

        root = os.path.abspath(args.root or default_root(paths))
        relative = [os.path.relpath(os.path.abspath(p), root) for p in paths]
        if any(r.startswith(os.pardir) for r in relative):
            print("error: --fix and --diff need every PATH inside the root", file=sys.stderr)
            return EXIT_USAGE

        def audit_copy(copy):
            return audit([os.path.join(copy, r) for r in relative], root=copy, **options)

        result = fix_findings(findings, root, audit_copy, write=args.fix)
        if args.diff:
            sys.stdout.write(result.diff)
            print(f"Would fix {len(result.fixed)} finding(s) in {len(result.files)} file(s).",
                  file=sys.stderr)
            return EXIT_REFUSED if result.fixed and not args.exit_zero else EXIT_OK
        print(f"Fixed {len(result.fixed)} finding(s) in {len(result.files)} file(s).",
              file=sys.stderr)
        findings = audit(paths, root=args.root, **options)
    sys.stdout.write(FORMATTERS[args.format](findings))
    if args.exit_zero:
        return EXIT_OK
    return EXIT_REFUSED if any(f.severity == "error" for f in findings) else EXIT_OK
