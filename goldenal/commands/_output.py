"""Output helpers shared by the commands: warnings as one-line messages, destination checks."""

import contextlib
import os
import sys


@contextlib.contextmanager
def warnings_to_stderr(prefix=""):
    """Capture Python warnings raised inside and print each once as ``warning: ...``.

    The library warns with ``warnings.warn`` (so a notebook sees them); on the
    command line a warning is one line without the source line Python would
    show.  ``prefix`` (e.g. ``"run/: "``) goes before each message.
    """
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield caught
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                print(f"warning: {prefix}{message}", file=sys.stderr)


def check_destination(path, flag):
    """Refuse an output file whose directory does not exist or cannot be written.

    Called before anything is written, so a bad ``--summary-md`` (say) does
    not fail after the curve is already committed.

    Raises
    ------
    UsageError
        Naming ``flag`` and the directory.
    """
    from goldenal.errors import UsageError

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
