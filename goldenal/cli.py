"""The ``goldenal`` command line: argument parsing and error translation only.

Each command is ``goldenal/commands/<name>.py``: ``configure(parser)``, ``run(args) -> int``,
its docstring its ``--help``, its ``EXIT_CODES`` the end of it; only the command run is
imported, so ``goldenal lookup`` stays as light as an interpreter start-up."""

import os
import sys

from goldenal.core.envflags import env_flag
from goldenal.core.errors import EXIT_USAGE, GoldenALError, printable

# command -> (module under goldenal.commands, one-line summary)
COMMANDS = {
    "lookup": ("lookup", "Print the committed golden AL for one cell."),
    "list": ("list_curves", "List the curves of a golden directory."),
    "show": ("show", "Show one curve as a K x thinking-mode matrix."),
    "validate": ("validate", "Check a golden directory: values, ranges, duplicates, manifest."),
    "import": ("import_curves", "Import upstream curve files into a golden directory."),
    "index": ("index", "Rebuild a golden directory's compiled lookup index."),
    "emit": ("emit", "Print the golden AL as one engine's config fragment."),
    "inject": ("inject", "Rewrite serve configs in place to carry the golden AL."),
    "audit": ("audit", "Check a recipe repository against the golden curves, like a linter."),
    "ingest": ("ingest", "Read measurement files into observations (counts per window)."),
    "measure": ("measure", "Measure acceptance on a live server into a run directory."),
    "verify": ("verify", "Check that a synthetic-acceptance run realized its golden AL."),
    "fit": ("fit", "Fit measurement runs into a golden curve with uncertainty."),
    "plan": ("plan", "Plan a measurement: the requests an interval of a stated width needs."),
    "diff": ("diff", "Compare two curves (or a run and a curve) cell by cell."),
    "export": ("export", "Export a cell, e.g. as a speculation_profile.json."),
    "plot": ("plot", "Plot curves: AL vs K, per-position acceptance, or a diff."),
}

# the top-level help: what every command shares, and where the rest is
MAIN_EPILOG = """\
exit codes: 0 success, 2 usage error or unreadable input, for every command; what
else a command returns (1 refused or found wanting, 3 conflict...) is listed in
its own --help.
"""


def exit_codes(module):
    """The exit-code list that ends a command's ``--help``."""
    return "exit codes:\n" + module.EXIT_CODES


def build_parser(only=None):
    """Build the parser, configuring only the subcommand ``only`` (others are listed)."""
    import argparse
    import importlib

    from goldenal import __version__

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="goldenal", description="Golden acceptance-length curves for speculative decoding.",
        epilog=MAIN_EPILOG, formatter_class=raw)
    parser.add_argument("--version", action="version", version="goldenal " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        if name != only:  # listed in the top-level help, configured only when run
            sub.add_parser(name, help=summary)
            continue
        module = importlib.import_module("goldenal.commands." + module_name)
        cmd = sub.add_parser(name, help=summary, description=module.__doc__,
                             epilog=exit_codes(module), formatter_class=raw)
        module.configure(cmd)
        cmd.set_defaults(run=module.run)
        parser.set_defaults(_command_parser=cmd)
    return parser


def _close(word, options):
    import difflib

    return difflib.get_close_matches(word, options, n=1, cutoff=0.6)


def _unknown_arguments(extras, command_parser):
    """The subcommand's own refusal of ``extras``, suggesting the options meant."""
    options = [o for action in command_parser._actions for o in action.option_strings]
    meant = [m for e in extras if e.startswith("-") for m in _close(e.partition("=")[0], options)]
    hint = f" (did you mean {', '.join(meant)}?)" if meant else ""
    command_parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def main(argv=None):
    """Run one command; return its exit code instead of exiting."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        debug = env_flag(os.environ, "GOLDENAL_DEBUG")
    except GoldenALError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    args = None
    if argv and argv[0] == "lookup":  # the hot path skips argparse when it can
        from goldenal.commands.lookup import fast_args

        args = fast_args(argv[1:])
    if args is None:
        only = argv[0] if argv and argv[0] in COMMANDS else None
        parser = build_parser(only)
        try:
            if argv and only is None and not argv[0].startswith("-"):
                meant = "".join(f"; did you mean {c}?" for c in _close(argv[0], list(COMMANDS)))
                parser.error(f"unknown command {argv[0]!r}{meant} "
                             f"(commands: {', '.join(COMMANDS)})")
            args, extras = parser.parse_known_args(argv)
            if extras:
                _unknown_arguments(extras, getattr(args, "_command_parser", None) or parser)
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        if getattr(args, "run", None) is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
    try:
        return args.run(args)
    except GoldenALError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        # every file goldenal reads or writes is named by its error (atomic writes
        # add the name a failed write lacks): one without a name is the output stream
        print(printable(f"error: {exc.filename or '<stdout>'}: {exc.strerror or exc}"),
              file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # never a traceback for users; GOLDENAL_DEBUG=1 shows it
        if debug:
            raise
        print(f"error: internal error ({type(exc).__name__}: {exc}); "
              "rerun with GOLDENAL_DEBUG=1 and report it", file=sys.stderr)
        return EXIT_USAGE
