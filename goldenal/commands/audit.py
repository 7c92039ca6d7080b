"""Check a recipe repository against the golden curves, like a linter.

Reports spec-decode configs in the given files or directories (default: .)
whose synthetic-acceptance knob is missing, wrong for the served model, draft
head, thinking mode and K, in the wrong unit, ignored by the engine, or set
where it must not be.  Nothing is executed.

Example:
  goldenal audit .
  goldenal audit benchmarks/ --format json --select GAL2
  goldenal audit --explain GAL201

Suppress one finding with a comment on its line: # goldenal: ignore[GAL201]

Files are chosen as ruff does: .gitignore respected, --exclude replacing the
default excluded directories, --extend-exclude adding to them; [tool.goldenal]
in the nearest pyproject.toml up to the repository root (the directory holding
.git) may set select, ignore, exclude, extend-exclude, respect-gitignore and
golden-dir (options win).  goldenal's own reports, journals and temporaries are
never read; a directory a crashed write (inject, --fix) left them in is first
recovered under the writer lock, so the files read are all old or all new.
Paths in every format are relative to the repository root (or --root), so CI
annotations point at the files.  In text, each finding is one line: file text a
message quotes is folded onto it and control characters in a path are escaped
(\\x0a), so no file can print a line that reads as a finding.  The last line
counts the files read, configs checked and files skipped (--show-skipped lists
them and why); configs whose thinking mode was assumed (GAL305) are counted in
one line (--show-assumptions lists them; JSON and SARIF keep each).

What each file says is cached outside the tree (as ruff does), keyed by its
bytes, path and goldenal's code (an entry failing its checksum is parsed
again), and a whole run is answered from the cache while every file it reads,
its ignore files, options and curves are unchanged (same size, times and
inode).  The cache is in $GOLDENAL_CACHE_DIR, else the user cache directory,
when that is the user's own and writable by no one else; --no-cache skips it.

--fix applies the safe fixes (marked [*]): a wrong literal value replaced by the
golden one when nothing on its line was assumed, it occurs once there, and
re-auditing with the fix raises nothing new there; every fix not applied is
named with the reason.  It locks the directories it writes before reading the
files (as inject does), writes no file changed since, replaces a file
atomically, byte for byte except the number, and never through a symbolic
link.  --diff prints those changes and writes nothing (not even the cache).

In Python: goldenal.audit(paths) -> list[Finding];
goldenal.audit_report(paths) -> AuditReport (with the counts and skipped files)
"""

EXIT_CODES = """\
  0  no error findings (or --exit-zero; --fix: nothing left to fix)
  1  error findings; --diff: a fix would apply
  2  bad configuration, unknown rule, unreadable input
"""

import os
import sys

from goldenal.core.errors import EXIT_OK, EXIT_REFUSED, UsageError


def configure(parser):
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default .)")
    parser.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                        help="output format (default text: path:line:col: CODE message)")
    parser.add_argument("--select", metavar="CODES", help="only these codes or prefixes, comma-separated")
    parser.add_argument("--ignore", metavar="CODES", help="drop these codes or prefixes, comma-separated")
    parser.add_argument("--explain", metavar="CODE", help="print a rule's documentation and exit")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are found")
    parser.add_argument("--exclude", metavar="PATTERNS",
                        help="gitignore-style patterns never read, comma-separated (replaces "
                             "the default: version-control, virtualenv and cache directories)")
    parser.add_argument("--extend-exclude", metavar="PATTERNS",
                        help="patterns never read, added to the default, comma-separated")
    gi = parser.add_mutually_exclusive_group()
    gi.add_argument("--respect-gitignore", dest="respect_gitignore", action="store_true",
                    default=None, help="skip what .gitignore files ignore (the default)")
    gi.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                    help="read files .gitignore ignores too")
    parser.add_argument("--config", metavar="PYPROJECT",
                        help="read [tool.goldenal] from this pyproject.toml (default: the "
                             "nearest one with that table)")
    parser.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")
    parser.add_argument("--show-skipped", action="store_true",
                        help="list the files skipped and why")
    parser.add_argument("--show-assumptions", action="store_true",
                        help="list every config whose thinking mode was assumed (GAL305)")
    parser.add_argument("--golden-dir", metavar="DIR",
                        help="golden directory (default: golden-dir in [tool.goldenal], "
                             "$GOLDENAL_DIR, the nearest golden_al_distribution/ in the "
                             "current directory or its parents, the packaged curves)")
    parser.add_argument("--root", metavar="DIR",
                        help="report paths relative to DIR (default: the repository root, "
                             "the nearest directory holding .git above every PATH, else the "
                             "one directory given, else the current directory)")
    parser.add_argument("--no-cache", dest="cache", action="store_false",
                        help="neither read nor write the cache (default: kept in "
                             "$GOLDENAL_CACHE_DIR, else the user cache directory)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--fix", action="store_true", help="apply the safe fixes, then report the rest")
    mode.add_argument("--diff", action="store_true",
                      help="print the safe fixes as a unified diff; write nothing")


def run(args):
    from goldenal.auditing import audit, audit_report, default_root, explain
    from goldenal.auditing.formatters import FORMATTERS

    if args.explain:
        page = explain(args.explain)
        if page is None:
            raise UsageError(f"unknown rule {args.explain!r}")
        sys.stdout.write(page)
        return EXIT_OK
    paths = args.paths or ["."]

    def patterns(text):
        return None if text is None else [p.strip() for p in text.split(",") if p.strip()]

    options = dict(golden_dir=args.golden_dir, select=args.select, ignore=args.ignore,
                   exclude=patterns(args.exclude), extend_exclude=patterns(args.extend_exclude),
                   respect_gitignore=args.respect_gitignore,
                   settings=False if args.isolated else (args.config or True))
    root = os.path.abspath(args.root or default_root(paths))
    cache = args.cache
    if cache and args.diff:
        # --diff writes nothing, its cache included: read it, never save it
        from goldenal.auditing.cache import Cache

        cache = Cache(root, read_only=True)
    report = audit_report(paths, root=args.root, cache=cache, **options)
    for note in report.notes:       # once, before any finding, in every format
        print(f"warning: {note}", file=sys.stderr)
    findings = list(report.findings)
    if args.fix or args.diff:
        from goldenal.auditing.fix import fix_findings

        if any(os.path.relpath(os.path.abspath(p), root).startswith(os.pardir) for p in paths):
            raise UsageError("--fix and --diff need every PATH inside the root")

        result = fix_findings(
            findings, root, lambda overlay: audit(paths, root=root, overlay=overlay, **options),
            write=args.fix)
        for f, reason in sorted(result.skipped, key=lambda s: (s[0].path, s[0].line, s[0].code)):
            print(f"Not fixed: {f.path}:{f.line}:{f.col}: {f.code}: {reason}", file=sys.stderr)
        if args.diff:
            sys.stdout.flush()
            sys.stdout.buffer.write(result.diff)    # the files' own bytes
            sys.stdout.buffer.flush()
        print(f"{'Would fix' if args.diff else 'Fixed'} {len(result.fixed)} finding(s) in "
              f"{len(result.files)} file(s); {len(result.skipped)} not fixed.", file=sys.stderr)
        if args.diff:
            return EXIT_REFUSED if result.fixed and not args.exit_zero else EXIT_OK
        report = audit_report(paths, root=args.root, cache=args.cache, **options)
        findings = list(report.findings)
    show_assumptions = args.show_assumptions or _selected(args.select, "GAL305")
    sys.stdout.write(FORMATTERS[args.format](findings, report, show_assumptions=show_assumptions,
                                             show_skipped=args.show_skipped))
    errors = any(f.severity == "error" for f in findings)
    return EXIT_REFUSED if errors and not args.exit_zero else EXIT_OK


def _selected(select, code):
    """True when ``--select`` names ``code`` itself (or its rule name): show it in full."""
    from goldenal.auditing.rules import get_rule

    rules = [get_rule(item) for item in select.split(",")] if select else []
    return any(rule is not None and rule.code == code for rule in rules)
