"""Output helpers shared by the commands: warnings as one-line messages, destination checks."""

import contextlib
import os
import sys


@contextlib.contextmanager
def warnings_to_stderr(prefix=""):
    """Each warning raised inside printed once as one line (no source line)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield caught
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                print(f"warning: {prefix}{message}", file=sys.stderr)


def print_result(as_json, record, text):
    """``record()`` as indented JSON on stdout if ``as_json``, else ``text()``."""
    import json

    sys.stdout.write(json.dumps(record(), indent=2) + "\n" if as_json else text())


def check_destination(path, flag):
    """Refuse an unwritable output file before anything is written."""
    from goldenal.core.errors import UsageError

    if path is None:
        return
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{flag} names a directory, not a file", path=path)
    if not os.path.isdir(directory):
        raise UsageError(f"{flag}: directory {directory} does not exist", path=path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{flag}: directory {directory} is not writable", path=path)


def add_written_golden_dir(parser, help):
    """``--golden-dir DIR`` with ``--out DIR`` kept as its deprecated alias."""
    parser.add_argument("--golden-dir", metavar="DIR", help=help)
    parser.add_argument("--out", dest="deprecated_out", metavar="DIR",
                        help="deprecated: the old name of --golden-dir")


def written_golden_dir(args):
    """The ``--golden-dir`` given (or its deprecated ``--out``, with a warning)."""
    from goldenal.core.errors import UsageError

    old = getattr(args, "deprecated_out", None)
    if old is None:
        return args.golden_dir
    if args.golden_dir is not None:
        raise UsageError("--out is the old name of --golden-dir: give one of them")
    print("warning: --out is deprecated here; use --golden-dir", file=sys.stderr)
    return old
