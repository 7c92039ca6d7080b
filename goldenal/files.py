"""Atomic file writes: a reader never sees a half-written file, and a failure leaves none."""

import contextlib
import errno
import os
import tempfile


@contextlib.contextmanager
def atomic_open(path, mode="w"):
    """Open a temporary file beside ``path``; on success it replaces ``path``.

    The new file keeps the old one's permission bits.  Text is written as
    given (no newline translation), so CRLF files stay CRLF.
    """
    path = os.fspath(path)
    # through a symlink to the file it names (replacing the link would detach it)
    target = os.path.realpath(path)
    with contextlib.suppress(FileNotFoundError):
        # a read-only file stays unwritten (os.replace would not ask); the mode
        # bits count too, since os.access says yes to root
        # (os.stat first: os.access is simply False for a file that does not exist yet)
        if not os.stat(target).st_mode & 0o222 or not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, "file is read-only; nothing written", path)
    directory = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        # name the file the user asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, path) from None
    text = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
    try:
        with os.fdopen(fd, mode, **text) as fh:
            yield fh
        try:
            bits = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            bits = 0o644
        os.chmod(tmp, bits)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if exc.filename == tmp or getattr(exc, "filename2", None) == tmp:
            raise OSError(exc.errno, exc.strerror, path) from None
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path, text):
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path) as fh:
        fh.write(text)
