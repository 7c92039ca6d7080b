"""Atomic file writes: a reader never sees a half-written file, and a failure leaves none."""

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_open(path, mode="w"):
    """Open a temporary file beside ``path``; on success it replaces ``path``.

    The new file keeps the old one's permission bits.  Text is written as
    given (no newline translation), so CRLF files stay CRLF.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    text = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
    try:
        with os.fdopen(fd, mode, **text) as fh:
            yield fh
        try:
            bits = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            bits = 0o644
        os.chmod(tmp, bits)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path, text):
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path) as fh:
        fh.write(text)
