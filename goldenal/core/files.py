"""Atomic file writes: a reader never sees a half-written file, and a failure leaves none.

:class:`DirectoryTransaction` extends this to several files of one directory
(a golden directory's curve, manifest, distribution and index): all of them
or none, under a lock that serialises writers.
"""

import contextlib
import errno
import json
import os
import re
import stat
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
    _refuse_read_only(target, path)
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
        os.chmod(tmp, _bits_of(target))
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # a full disk or a failed write names no file by itself: name the one asked for
        if exc.filename in (None, tmp) or getattr(exc, "filename2", None) == tmp:
            raise OSError(exc.errno, exc.strerror or str(exc), path) from None
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path, text):
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path) as fh:
        fh.write(text)


def write_texts_atomic(texts, *, expected=None):
    """Write several files, anywhere, all or nothing, even across a crash: ``{path: text}``.

    Every target is checked (writable), then the directories holding them are
    locked (:func:`locked_directory`, in sorted order; each recovers an
    interrupted write first).  Every new text is written to a flushed
    temporary beside its file and each old file kept under a hard link (a
    copy where links are not supported); an undo journal in each directory
    lists its renames, the one in the first directory (the *primary*) written
    first.  Then the files are replaced, and removing the primary journal is
    the commit point.  When a replacement fails, the files already replaced
    get their old file back (the same inode, so its owner and bits too) and
    one created is removed.  After a crash (kill -9, power loss) the next
    :func:`recover` of a directory puts its old files back while the primary
    journal exists, and otherwise only removes what the write left.  Writes
    go through a symbolic link to the file it names, as :func:`atomic_open`
    does.  Raises OSError naming the file concerned.

    ``expected`` (``{path: text}``, optional) holds what each file held when
    it was read to compute its new text (``""`` for a file that did not
    exist): once the locks are held, a file whose bytes differ from it was
    changed by someone else meanwhile, and nothing is written
    (:class:`goldenal.core.errors.ConflictError` naming it), so no update is lost.
    Hold the locks from the read on (:func:`locked_directory`; re-entering
    it in the same thread is free) and no goldenal writer can come between.
    """
    groups = {}
    for path, text in texts.items():
        path = os.fspath(path)
        target = os.path.realpath(path)
        _refuse_read_only(target, path)
        groups.setdefault(os.path.dirname(target), []).append((path, target, text))
    with locked_directories(groups):
        for path, text in (expected or {}).items():
            _check_unchanged(path, text)
        _UndoTransaction(groups).run()
    return [os.fspath(path) for path in texts]


def _check_unchanged(path, text):
    """ConflictError naming ``path`` unless it still holds ``text`` (missing counts as ``""``)."""
    from goldenal.core.errors import ConflictError

    want = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    try:
        now = read_regular(path, max(len(want), 1) + 1)
    except FileNotFoundError:
        now = b""
    except OSError as exc:
        if exc.errno != errno.EFBIG:
            raise
        now = None      # grown past what was read
    if now != want:
        raise ConflictError("changed since it was read (another writer); nothing written: "
                            "run again", path=os.fspath(path))


class _UndoTransaction:
    """Files of several directories replaced under undo journals (see write_texts_atomic)."""

    def __init__(self, groups):
        self.groups = groups
        self.dirs = sorted(groups)
        self.txn = os.urandom(16).hex()
        self.moves = {d: [] for d in self.dirs}       # [staged, name, backup or None]
        self.journals = []                              # written, primary first

    def run(self):
        try:
            for directory in self.dirs:
                for path, target, text in self.groups[directory]:
                    staged = _stage(path, target, text.encode("utf-8"), prefix=_STAGED_PREFIX)
                    self.moves[directory].append([os.path.basename(staged),
                                                  os.path.basename(target), None])
                    backup = _keep(path, target)
                    self.moves[directory][-1][2] = backup and os.path.basename(backup)
            primary = self.dirs[0]
            self._journal(primary, others=[os.path.relpath(d, primary) for d in self.dirs[1:]])
            for directory in self.dirs[1:]:
                self._journal(directory, primary=os.path.relpath(primary, directory))
            self._replace()
        except BaseException:
            self._abort()
            raise
        # the commit point: without the primary journal no recovery puts anything back
        os.unlink(os.path.join(primary, JOURNAL_NAME))
        _fsync_directory(primary)
        for directory in reversed(self.dirs):
            _drop(directory, self.moves[directory])
            with contextlib.suppress(FileNotFoundError):
                if directory != primary:
                    os.unlink(os.path.join(directory, JOURNAL_NAME))

    def _journal(self, directory, **link):
        doc = {"format": 2, "txn": self.txn, "moves": self.moves[directory], **link}
        _write_journal(directory, doc)
        self.journals.append(directory)

    def _replace(self):
        for directory in self.dirs:
            for staged, name, _ in self.moves[directory]:
                try:
                    os.replace(os.path.join(directory, staged), os.path.join(directory, name))
                except OSError as exc:
                    shown = next(p for p, t, _ in self.groups[directory]
                                 if os.path.basename(t) == name)
                    raise OSError(exc.errno, exc.strerror or str(exc), shown) from None
        for directory in self.dirs:
            _fsync_directory(directory)

    def _abort(self):
        """Put every old file back; the journals go last, the primary's after all others."""
        with contextlib.suppress(OSError):
            for directory in self.dirs:
                _roll_back(directory, self.moves[directory])
            for directory in reversed(self.journals):
                os.unlink(os.path.join(directory, JOURNAL_NAME))


def _stage(path, target, data, prefix=None):
    """A flushed temporary beside ``target`` holding ``data``, with the old file's bits.

    OSError names ``path`` (the name asked for); nothing is left on failure.
    """
    if prefix is None:
        prefix = "." + os.path.basename(target) + "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=os.path.dirname(target))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _bits_of(target))
    except OSError as exc:
        raise _naming(exc, path, tmp) from None
    return tmp


def _bits_of(target):
    """The permission bits a replacement of ``target`` keeps (``0o644`` for a new file)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        return 0o644


def _naming(exc, path, leftover):
    """``exc`` as an OSError naming ``path``, once the half-made ``leftover`` is removed."""
    with contextlib.suppress(OSError):
        os.unlink(leftover)
    return OSError(exc.errno, exc.strerror or str(exc), path)


def _keep(path, target):
    """A second name for the old ``target`` (None when there is none yet), to put back."""
    if not os.path.exists(target):
        return None
    for _ in range(100):
        name = os.path.join(os.path.dirname(target), _STAGED_PREFIX + os.urandom(8).hex()
                            + ".tmp")
        try:
            os.link(target, name)
            return name
        except FileExistsError:
            continue
        except OSError:     # no hard links on this file system: a copy
            import shutil

            try:
                shutil.copy2(target, name)
            except OSError as exc:
                raise _naming(exc, path, name) from None
            return name
    raise OSError(errno.EEXIST, "no free name for a backup", path)


def _roll_back(directory, moves):
    """Put back the old files of ``moves`` (``[staged, name, backup]``); idempotent.

    A staged temporary still there was never renamed: it goes, with its
    backup.  Otherwise the backup (the old inode) is renamed back over the
    name, or the name, created by the write, is removed.
    """
    for staged, name, backup in reversed(moves):
        staged_path = os.path.join(directory, staged)
        if os.path.lexists(staged_path):
            os.unlink(staged_path)
            if backup is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(directory, backup))
        elif backup is not None:
            with contextlib.suppress(FileNotFoundError):
                os.replace(os.path.join(directory, backup), os.path.join(directory, name))
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(directory, name))
    _fsync_directory(directory)


def _drop(directory, moves):
    """Remove what a committed write left: its backups (and any staged temporary)."""
    for staged, _, backup in moves:
        for leftover in (staged, backup):
            if leftover is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(directory, leftover))


def _regular_fd(path, limit=None):
    """A descriptor of ``path`` opened without waiting (a named pipe) and checked, on
    the descriptor, to be a regular file (not ``/dev/zero``, a pipe or a directory)
    of at most ``limit`` bytes; OSError naming ``path`` otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
            raise OSError(errno.EINVAL, f"is {kind}, not a regular file", path)
        if limit is not None and info.st_size > limit:
            raise OSError(errno.EFBIG, f"is larger than {_size(limit)}", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path):
    """A regular file opened for binary reading, never blocking on the open; OSError
    naming ``path`` for anything else.  The one way goldenal opens a file it reads,
    so a named pipe or a device given as input never hangs it."""
    return os.fdopen(_regular_fd(os.fspath(path)), "rb")


def read_regular(path, limit):
    """The bytes of a regular file of at most ``limit`` bytes; OSError naming ``path`` otherwise.

    Never blocks or reads without end: opened as :func:`open_regular` opens,
    and reading stops once past ``limit`` bytes, so a file that grows while
    read is refused too.
    """
    path = os.fspath(path)
    fd = _regular_fd(path, limit)
    try:
        return _read_fd(fd, path, limit)    # bounded too, should it grow meanwhile
    finally:
        os.close(fd)


def read_text(path, *, limit=None, universal=False):
    """A config's text: a regular UTF-8 file read by :func:`read_regular` (never blocking).

    At most ``limit`` bytes (default :data:`MAX_READ`).
    ``universal`` translates CRLF and a lone CR to LF as
    Python's text mode does; otherwise line ends stay as written.  Raises
    :class:`goldenal.core.errors.ParseError` for bytes that are not UTF-8.
    """
    from goldenal.core.errors import ParseError

    try:
        text = read_regular(path, MAX_READ if limit is None else limit).decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError("not a UTF-8 text file", path=os.fspath(path)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if universal else text


def _size(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


def repository_root(path):
    """The nearest directory at or above ``path`` holding ``.git`` (a directory, or the
    file of a worktree), or None outside any repository: the one place goldenal
    climbs to a repository root (audit's paths, its settings, its ``.gitignore``s)."""
    here = os.path.abspath(os.fspath(path))
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def inside(directory, path):
    """True when ``path``, every symbolic link followed, lies in ``directory`` (also resolved)."""
    root = os.path.realpath(directory)
    return os.path.commonpath((root, os.path.realpath(path))) == root

# ---------------------------------------------------------------------------
# One file inside a tree, never through a symbolic link

MAX_READ = 64 * 1024 * 1024


def _nofollow_supported():
    return (os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
            and hasattr(os, "O_DIRECTORY"))


def _split_beneath(relpath):
    parts = relpath.replace(os.sep, "/").split("/")
    if os.path.isabs(relpath) or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain path inside the tree: {relpath!r}")
    return parts[:-1], parts[-1]


@contextlib.contextmanager
def _directory_beneath(root, dirs, shown):
    """A descriptor of ``root/dirs...``, each step opened without following a link."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in dirs:
            try:
                step = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if _is_link(name, fd):
                    raise OSError(errno.ELOOP, "lies under a symbolic link; not followed",
                                  shown) from None
                raise OSError(exc.errno, exc.strerror, shown) from None
            os.close(fd)
            fd = step
        yield fd
    finally:
        os.close(fd)


def _is_link(name, dir_fd):
    # asked, not read from the errno: O_NOFOLLOW on a link fails with ELOOP on
    # Linux and macOS, EMLINK on FreeBSD
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_regular(name, dir_fd, shown):
    """``(fd, stat)`` of a regular file, opened without following a link or blocking."""
    try:
        # O_NONBLOCK: a named pipe must not hang the open
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0),
                     dir_fd=dir_fd)
    except OSError as exc:
        if _is_link(name, dir_fd):
            raise OSError(errno.ELOOP, "is a symbolic link; not followed", shown) from None
        raise OSError(exc.errno, exc.strerror, shown) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", shown)
    return fd, st


def _read_fd(fd, shown, limit):
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", shown)
        chunks.append(chunk)


def read_beneath(root, relpath, *, limit=MAX_READ):
    """The bytes of the regular file ``root/relpath``, reached without following any link.

    Every directory below ``root`` on the way and the file itself are opened
    with ``O_NOFOLLOW`` (``root`` itself may be a link the caller chose).
    Raises OSError naming ``relpath``: ``ELOOP`` when the file is a symbolic
    link or lies under one, ``EINVAL`` for anything but a regular file (a
    named pipe, a socket, a device: never opened for long, never blocked on),
    ``EFBIG`` above ``limit`` bytes.
    """
    dirs, name = _split_beneath(relpath)
    if not _nofollow_supported():  # pragma: no cover - Windows
        _refuse_links(root, dirs + [name], relpath)
        with open(os.path.join(root, relpath), "rb") as fh:
            return _read_fd(fh.fileno(), relpath, limit)
    with _directory_beneath(root, dirs, relpath) as dfd:
        fd, _ = _open_regular(name, dfd, relpath)
        try:
            return _read_fd(fd, relpath, limit)
        finally:
            os.close(fd)


def replace_beneath(root, relpath, data, *, expected):
    """Atomically replace the regular file ``root/relpath`` by ``data``; never through a link.

    The directories on the way are opened as :func:`read_beneath` opens
    them; ``data`` goes to a flushed temporary in the same directory, which
    takes the file's permission bits and is renamed over the file (a rename
    replaces a name, it never writes through a link).  Nothing is written
    when the file is read-only, is not a regular file, or is no longer the
    file that held ``expected`` (it changed since it was read); OSError
    names ``relpath``.
    """
    dirs, name = _split_beneath(relpath)
    if not _nofollow_supported():  # pragma: no cover - Windows
        _refuse_links(root, dirs + [name], relpath)
        path = os.path.join(root, relpath)
        _refuse_read_only(path, relpath)
        with open(path, "rb") as fh:
            if fh.read() != expected:
                raise OSError(errno.EAGAIN, "changed since it was read", relpath)
        with atomic_open(path, "wb") as fh:
            fh.write(data)
        return
    import secrets

    with _directory_beneath(root, dirs, relpath) as dfd:
        fd, st = _open_regular(name, dfd, relpath)
        try:
            if not st.st_mode & 0o222 or not os.access(name, os.W_OK, dir_fd=dfd):
                raise PermissionError(errno.EACCES, "file is read-only", relpath)
            try:
                same = _read_fd(fd, relpath, len(expected)) == expected
            except OSError:
                same = False
            if not same:
                raise OSError(errno.EAGAIN, "changed since it was read", relpath)
        finally:
            os.close(fd)
        tmp = f".goldenal-fix-{secrets.token_hex(8)}.tmp"
        try:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                          0o600, dir_fd=dfd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view):]
                os.fchmod(out, stat.S_IMODE(st.st_mode))
                os.fsync(out)
            finally:
                os.close(out)
            now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if (not stat.S_ISREG(now.st_mode)
                    or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)):
                # replaced (by a link, say) since it was opened: leave whatever is there
                raise OSError(errno.EAGAIN, "changed since it was read", relpath)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise OSError(exc.errno, exc.strerror or str(exc), relpath) from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise


def _refuse_links(root, parts, shown):  # pragma: no cover - Windows
    here = root
    for part in parts:
        here = os.path.join(here, part)
        if os.path.islink(here):
            raise OSError(errno.ELOOP, "is a symbolic link or lies under one; not followed",
                          shown)
    if not os.path.isfile(here):
        raise OSError(errno.EINVAL, "not a regular file", shown)


def _refuse_read_only(target, shown):
    """PermissionError naming ``shown`` when an existing ``target`` is not writable.

    A read-only file stays unwritten (``os.replace`` would not ask); the mode
    bits count too, since ``os.access`` says yes to root (``os.stat`` first:
    ``os.access`` is simply False for a file that does not exist yet).
    """
    with contextlib.suppress(FileNotFoundError):
        if not os.stat(target).st_mode & 0o222 or not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, "file is read-only; nothing written", shown)


# ---------------------------------------------------------------------------
# Several files of one directory, all or nothing

LOCK_NAME = ".goldenal.lock"
JOURNAL_NAME = ".goldenal-journal.json"
_STAGED_PREFIX = ".goldenal-staged-"
_STAGED = re.compile(re.escape(_STAGED_PREFIX) + r"[A-Za-z0-9_]+\.tmp\Z")
_FIX_TEMP = re.compile(r"\.goldenal-fix-[0-9a-f]+\.tmp\Z")
LOCK_TIMEOUT = 60.0


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _plain_name(name):
    """A file name directly inside the directory (never a path)."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name
            or "\\" in name or "\0" in name):
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def _write_journal(directory, doc):
    """Put ``doc`` in place as the directory's journal: flushed, then renamed (atomic)."""
    journal = os.path.join(directory, JOURNAL_NAME)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_STAGED_PREFIX, suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            _fsync_directory(directory)
            os.replace(tmp, journal)
            _fsync_directory(directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), journal) from None


def _read_journal(journal):
    """The journal's document, None when there is none; OSError naming it when unreadable."""
    try:
        return json.loads(read_regular(journal, 1 << 20))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OSError(getattr(exc, "errno", None) or errno.EIO,
                      f"unreadable transaction journal ({getattr(exc, 'strerror', None) or exc});"
                      " restore the directory from version control", journal) from None


def is_transaction_file(name):
    """True for a file goldenal's writers keep beside the files they write, never content.

    The lock file, a journal, a staged temporary or a kept old file
    (``.goldenal-staged-*.tmp``), and the temporary of a fix
    (``.goldenal-fix-*.tmp``): a reader of the tree (``audit``) skips them.
    """
    return (name in (LOCK_NAME, JOURNAL_NAME) or bool(_STAGED.match(name))
            or bool(_FIX_TEMP.match(name)))


def pending_journal(directory):
    """True when an interrupted transaction left its journal in ``directory``."""
    return os.path.exists(os.path.join(directory, JOURNAL_NAME))


def settle_directories(directories):
    """Recover every directory of ``directories`` a write left a journal or a temporary in.

    What a reader of a tree (``audit``) runs on each directory before it
    reads a file there: after it, the directory holds the whole old or the
    whole new state of an interrupted write, and nothing beside it (see
    :func:`recover`, run under the directory's lock: a write under way is
    waited for).
    """
    for directory in sorted(directories):
        if pending_journal(directory) or any(
                _STAGED.match(name) or _FIX_TEMP.match(name) for name in os.listdir(directory)):
            with locked_directory(directory):
                pass


def recover(directory):
    """Finish a transaction a crash interrupted after its commit point; drop staged leftovers.

    Call only while holding the directory lock.  The journal is written (and
    renamed into place) only once every new file is staged, so its presence
    means "the new state is complete on disk": the renames it lists are
    replayed (a rename already done left no temporary, so replay is
    idempotent).  Without a journal, staged temporaries belong to a write that
    never reached its commit point and are removed: the old state stands (so
    is the temporary a :func:`replace_beneath` killed before its rename left).
    """
    journal = os.path.join(directory, JOURNAL_NAME)
    doc = _read_journal(journal)
    if isinstance(doc, dict) and doc.get("format") == 2:
        _recover_undo(directory, doc, journal)
        doc = None
    if doc is not None:
        try:
            moves = [(_plain_name(tmp), _plain_name(name)) for tmp, name in doc["moves"]]
            if not all(_STAGED.match(tmp) for tmp, _ in moves):
                raise ValueError("a move does not start from a staged temporary")
        except (KeyError, TypeError, ValueError) as exc:
            raise OSError(errno.EINVAL, f"malformed transaction journal ({exc}); restore the "
                          "directory from version control", journal) from None
        for tmp, name in moves:
            with contextlib.suppress(FileNotFoundError):
                os.replace(os.path.join(directory, tmp), os.path.join(directory, name))
        _fsync_directory(directory)
        os.unlink(journal)
        _fsync_directory(directory)
    for name in os.listdir(directory):
        if _STAGED.match(name) or _FIX_TEMP.match(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(directory, name))


def _recover_undo(directory, doc, journal):
    """Finish a :func:`write_texts_atomic` a crash interrupted (journal format 2).

    While the primary journal exists the write never committed: every
    directory of it gets its old files back (the primary first has the
    others rolled back, each under its own lock, then its own files).  A
    journal whose primary is gone belongs to a committed write: only its
    backups and the journal go.
    """
    try:
        txn = doc["txn"]
        moves = [(_plain_name(a), _plain_name(b), None if c is None else _plain_name(c))
                 for a, b, c in doc["moves"]]
        if not (isinstance(txn, str) and re.fullmatch(r"[0-9a-f]{32}", txn)) or not all(
                _STAGED.match(a) and (c is None or _STAGED.match(c)) for a, _, c in moves):
            raise ValueError("not a journal of goldenal's")
        others = [str(o) for o in doc.get("others", ())]
        primary = doc.get("primary")
    except (KeyError, TypeError, ValueError) as exc:
        raise OSError(errno.EINVAL, f"malformed transaction journal ({exc}); restore the "
                      "directory from version control", journal) from None
    if primary is None:
        for other in others:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                with locked_directory(os.path.join(directory, other)):
                    pass    # its recovery sees this journal: its files go back
        _roll_back(directory, moves)
    else:
        head = _read_journal(os.path.join(directory, str(primary), JOURNAL_NAME))
        if isinstance(head, dict) and head.get("txn") == txn:
            _roll_back(directory, moves)
        else:
            _drop(directory, moves)
    os.unlink(journal)
    _fsync_directory(directory)


@contextlib.contextmanager
def locked_directory(directory, *, timeout=None):
    """Hold ``directory``'s writer lock; on entry, recover an interrupted transaction first.

    On POSIX the lock is ``flock`` on the directory itself: it leaves no file
    behind in a version-controlled directory (a refused write changes
    nothing), and the kernel drops it when its holder dies, even by kill -9.
    Elsewhere a ``.goldenal.lock`` file held with :mod:`filelock`.  Raises
    OSError naming the directory when another writer holds it for
    ``timeout`` seconds (default :data:`LOCK_TIMEOUT`).

    Re-entrant within a thread: a writer that locked a directory before
    reading its files (``inject``, ``audit --fix``) enters it again to write
    them, without waiting for itself and without a second recovery.
    """
    try:
        st = os.stat(directory)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, directory) from None
    key = (st.st_dev, st.st_ino)
    held = _held()
    if key in held:
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    with _locked(directory, LOCK_TIMEOUT if timeout is None else timeout):
        held[key] = 1
        try:
            yield
        finally:
            del held[key]


@contextlib.contextmanager
def locked_directories(directories, *, timeout=None):
    """Hold the lock of every directory of ``directories``, taken in sorted order.

    One order for every writer, so two writers of overlapping sets never
    wait for each other in a cycle.  Each is :func:`locked_directory`.
    """
    with contextlib.ExitStack() as stack:
        for directory in sorted(set(map(os.fspath, directories))):
            stack.enter_context(locked_directory(directory, timeout=timeout))
        yield


_HELD = []      # the thread-local store, made on first use (``lookup`` never locks)


def _held():
    """``{(st_dev, st_ino): depth}`` of the directories this thread holds the lock of."""
    if not _HELD:
        import threading

        _HELD.append(threading.local())
    held = getattr(_HELD[0], "dirs", None)
    if held is None:
        held = _HELD[0].dirs = {}
    return held


@contextlib.contextmanager
def _locked(directory, timeout):
    import time

    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        fcntl = None
    if fcntl is None:  # pragma: no cover - Windows
        from filelock import FileLock, Timeout

        lock = FileLock(os.path.join(directory, LOCK_NAME), timeout=timeout)
        try:
            lock.acquire()
        except Timeout:
            raise OSError(errno.EWOULDBLOCK, f"another writer has held the lock for "
                          f"{timeout:g} s", directory) from None
        try:
            recover(directory)
            yield
        finally:
            lock.release()
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, directory) from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OSError(errno.EWOULDBLOCK, f"another writer has held the lock for "
                                  f"{timeout:g} s", directory) from None
                time.sleep(0.005)
        recover(directory)
        yield
    finally:
        os.close(fd)  # releases the lock


class DirectoryTransaction:
    """New contents for several files of one directory, committed all or nothing.

    Use inside :func:`locked_directory`.  :meth:`write` only records text;
    :meth:`commit` then refuses a read-only target before touching anything,
    writes every file to a temporary (flushed to disk), renames a journal
    listing the renames into place (the commit point), performs the renames
    and removes the journal.  A crash before the commit point leaves the old
    files (the temporaries are removed by the next :func:`recover`); a crash
    after it is finished by the next :func:`recover`.  Readers that find the
    journal wait for the lock and recover first (see
    :func:`goldenal.golden.registry.load_registry`).
    """

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        self.files = {}

    def write(self, name, text):
        """Stage ``text`` as the new content of ``name`` (a plain file name)."""
        self.files[_plain_name(name)] = text

    def commit(self):
        """Write every staged file, or none; OSError names the file concerned."""
        directory = self.directory
        for name in self.files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                raise PermissionError(errno.EPERM, "is a symbolic link; nothing written", path)
            _refuse_read_only(path, path)
        staged = []
        try:
            for name, text in self.files.items():
                path = os.path.join(directory, name)
                tmp = _stage(path, path, text.encode("utf-8"), prefix=_STAGED_PREFIX)
                staged.append((os.path.basename(tmp), name))
            _write_journal(directory, {"format": 1, "moves": staged})  # the commit point
        except BaseException:
            for tmp, _ in staged:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, tmp))
            raise
        # past the commit point: finish now; a crash here is finished by recover()
        recover(directory)
        return [os.path.join(directory, name) for name in self.files]
