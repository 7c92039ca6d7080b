"""Files as goldenal reads and writes them: one reader, one writer, one journal
(docs/architecture.md, "One writer, one reader")."""

import contextlib
import errno
import os
import re
import stat

from goldenal.core.errors import ConflictError, ParseError

MAX_READ = 64 * 1024 * 1024
LOCK_NAME = ".goldenal.lock"
JOURNAL_NAME = ".goldenal-journal.json"
LOCK_TIMEOUT = 60.0
_STAGED_PREFIX = ".goldenal-staged-"
# a staged new file or a kept old one (``.goldenal-fix-*``: what earlier releases' fixes staged)
_is_temp = re.compile(r"\.goldenal-(?:staged-\w+|fix-[0-9a-f]+)\.tmp\Z", re.ASCII).match
_NOFOLLOW = (os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
             and hasattr(os, "O_DIRECTORY"))

# -- the reader --------------------------------------------------------------


def open_regular(path, *, limit=None, beneath=None):
    """The one way goldenal opens a file it reads: binary, never blocking, regular, bounded."""
    path = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    if beneath is None:
        fd = _open(path, flags, path)
    elif not _NOFOLLOW:  # pragma: no cover - Windows
        _refuse_links(beneath, _split_beneath(path), path)
        fd = _open(os.path.join(beneath, path), flags, path)
    else:
        dirs, name = _split_beneath(path)
        with _directory_beneath(beneath, dirs, path) as dfd:
            fd = _open(name, flags | os.O_NOFOLLOW, path, dfd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
            raise OSError(errno.EINVAL, f"is {kind}, not a regular file", path)
        if limit is not None and info.st_size > limit:
            raise OSError(errno.EFBIG, f"is larger than {size_text(limit)}", path)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular(path, limit=MAX_READ, *, beneath=None):
    """The bytes of a file, refused past ``limit`` (also when it grows while read)."""
    with open_regular(path, limit=limit, beneath=beneath) as fh:
        data = fh.read(min(limit, os.fstat(fh.fileno()).st_size) + 1)
        while len(data) <= limit and (more := fh.read(1 << 20)):   # it grew meanwhile
            data += more
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"is larger than {size_text(limit)}", os.fspath(path))
    return data


def read_text(path, *, limit=MAX_READ, universal=False):
    """A UTF-8 file (else ParseError); ``universal`` turns CRLF and CR into LF."""
    try:
        text = read_regular(path, limit).decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError("not a UTF-8 text file", path=os.fspath(path)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if universal else text


def _open(name, flags, shown, dir_fd=None, link="is a symbolic link; not followed"):
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if dir_fd is not None and _is_link(name, dir_fd):
            raise OSError(errno.ELOOP, link, shown) from None
        raise OSError(exc.errno, exc.strerror, shown) from None


def size_text(n):
    """``n`` bytes as a cap is spoken: whole MiB, else bytes."""
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


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
            step = _open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, shown, fd,
                         link="lies under a symbolic link; not followed")
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


def _refuse_links(root, split, shown):  # pragma: no cover - Windows
    here = root
    for part in split[0] + [split[1]]:
        here = os.path.join(here, part)
        if os.path.islink(here):
            raise OSError(errno.ELOOP, "is a symbolic link or lies under one; not followed",
                          shown)


def repository_root(path):
    """The nearest directory at or above ``path`` holding ``.git``, or None."""
    return nearest_holding(path, ".git")


def nearest_holding(path, name, test=os.path.lexists):
    """The nearest directory at or above ``path`` whose ``name`` passes ``test``, or None."""
    here = os.path.abspath(os.fspath(path))
    while True:
        if test(os.path.join(here, name)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def inside(directory, path):
    """True when ``path``, every symbolic link followed, lies in ``directory`` (also resolved)."""
    root = os.path.realpath(directory)
    return os.path.commonpath((root, os.path.realpath(path))) == root

# -- the writer --------------------------------------------------------------

@contextlib.contextmanager
def locked_directory(directory, *, timeout=None):
    """Hold the directory's writer lock (re-entrant per thread), recovering a crash first."""
    try:
        st = os.stat(directory)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, directory) from None
    key, held = (st.st_dev, st.st_ino), _held()
    with contextlib.ExitStack() as stack:
        if key not in held:
            stack.enter_context(_locked(directory, LOCK_TIMEOUT if timeout is None else timeout))
        held[key] = held.get(key, 0) + 1
        try:
            yield
        finally:
            held[key] -= 1
            if not held[key]:
                del held[key]


@contextlib.contextmanager
def locked_directories(directories, *, timeout=None):
    """Lock each directory in sorted order, so overlapping writers never deadlock."""
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
    if not hasattr(_HELD[0], "dirs"):
        _HELD[0].dirs = {}
    return _HELD[0].dirs


@contextlib.contextmanager
def _locked(directory, timeout):
    busy = OSError(errno.EWOULDBLOCK, f"another writer has held the lock for {timeout:g} s",
                   directory)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        from filelock import FileLock, Timeout

        lock = FileLock(os.path.join(directory, LOCK_NAME), timeout=timeout)
        try:
            lock.acquire()
        except Timeout:
            raise busy from None
        release = lock.release
    else:
        import time

        fd = _open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), directory)

        def release():      # closing the descriptor releases the lock
            os.close(fd)

        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise busy from None
                    time.sleep(0.005)
        except BaseException:
            release()
            raise
    try:
        recover(directory)
        yield
    finally:
        release()


def write_texts_atomic(texts, *, expected=None, beneath=None, links=True):
    """The one writer: ``{path: text or bytes}``, all or nothing even across a crash
    (docs/architecture.md, "One writer"); ``expected``: ``{path: text read}``."""
    if not texts:
        return []       # nothing to write: no lock, no journal
    groups = {}
    for path, data in texts.items():
        path = os.fspath(path)
        target = _target(path, beneath, links)
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        groups.setdefault(os.path.dirname(target), []).append((path, target, data))
    with locked_directories(groups):
        for path, text in (expected or {}).items():
            _check_unchanged(path, text, beneath)
        _Transaction(groups, guarded=beneath is not None or not links).run()
    return [os.fspath(path) for path in texts]


def write_text_atomic(path, text):
    """Write one file through :func:`write_texts_atomic`."""
    write_texts_atomic({path: text})


@contextlib.contextmanager
def atomic_open(path, mode="w"):
    """A buffer that replaces ``path`` when the block ends without an error."""
    import io

    buf = io.BytesIO() if "b" in mode else io.StringIO(newline="")
    yield buf
    write_texts_atomic({path: buf.getvalue()})


def replace_beneath(root, relpath, data, *, expected):
    """Replace ``root/relpath`` if it still holds ``expected``, never through a link."""
    try:
        write_texts_atomic({relpath: data}, expected={relpath: expected}, beneath=root)
    except ConflictError:
        raise OSError(errno.EAGAIN, "changed since it was read", relpath) from None


def _target(path, beneath, links):
    """The real path a write of ``path`` renames over, once refusals are checked."""
    if beneath is not None:
        open_regular(path, beneath=beneath).close()     # no link on the way, a regular file
        target = os.path.join(os.path.realpath(beneath), path)
        _refuse_read_only(target, path, "file is read-only")
        return target
    if not links and os.path.islink(path):
        raise PermissionError(errno.EPERM, "is a symbolic link; nothing written", path)
    target = os.path.realpath(path)
    if not os.path.isdir(os.path.dirname(target)):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    _refuse_read_only(target, path)
    return target


def _refuse_read_only(target, shown, why="file is read-only; nothing written"):
    # the mode bits count too: ``os.access`` says yes to root
    with contextlib.suppress(FileNotFoundError):
        if not os.stat(target).st_mode & 0o222 or not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, why, shown)


def _check_unchanged(path, text, beneath=None):
    """ConflictError naming ``path`` unless it still holds ``text`` (missing counts as ``""``)."""
    want = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    try:
        now = read_regular(path, max(len(want), 1), beneath=beneath)
    except FileNotFoundError:
        now = b""
    except OSError as exc:
        if exc.errno != errno.EFBIG:
            raise
        now = None      # grown past what was read
    if now != want:
        raise ConflictError("changed since it was read (another writer); nothing written: "
                            "run again", path=os.fspath(path))


def _identity(target):
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(target)
        return st.st_dev, st.st_ino, stat.S_ISREG(st.st_mode)
    return None


class _Transaction:
    """The files of :func:`write_texts_atomic`, replaced under undo journals."""

    def __init__(self, groups, *, guarded):
        self.groups = groups
        self.dirs = sorted(groups)
        self.txn = os.urandom(16).hex()
        self.moves = {d: [] for d in self.dirs}       # [staged, name, backup or None]
        self.journals = []                              # written, primary first
        self.before = ({t: _identity(t) for d in self.dirs for _, t, _ in groups[d]}
                       if guarded else None)

    def run(self):
        primary = self.dirs[0]
        try:
            for directory in self.dirs:
                for path, target, data in self.groups[directory]:
                    staged = _stage(path, target, data)
                    move = [os.path.basename(staged), os.path.basename(target), None]
                    self.moves[directory].append(move)
                    backup = _keep(path, target)
                    move[2] = backup and os.path.basename(backup)
            self._check_unswapped()
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
            if directory != primary:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(directory, JOURNAL_NAME))

    def _check_unswapped(self):
        """A guarded file must still be the one checked: a link put there stays a link."""
        for directory in self.dirs if self.before is not None else ():
            for path, target, _ in self.groups[directory]:
                if _identity(target) != self.before[target]:
                    raise OSError(errno.EAGAIN, "changed since it was read", path)

    def _journal(self, directory, **link):
        _write_journal(directory, {"format": 2, "txn": self.txn,
                                   "moves": self.moves[directory], **link})
        self.journals.append(directory)

    def _replace(self):
        for directory in self.dirs:
            for (path, _, _), (staged, name, _) in zip(self.groups[directory],
                                                       self.moves[directory]):
                try:
                    os.replace(os.path.join(directory, staged), os.path.join(directory, name))
                except OSError as exc:
                    raise OSError(exc.errno, exc.strerror or str(exc), path) from None
        for directory in self.dirs:
            _fsync_directory(directory)

    def _abort(self):
        """Put every old file back; the journals go last, the primary's after all others."""
        with contextlib.suppress(OSError):
            for directory in self.dirs:
                _roll_back(directory, self.moves[directory])
            for directory in reversed(self.journals):
                os.unlink(os.path.join(directory, JOURNAL_NAME))


def _stage(path, target, data):
    """A flushed temporary beside ``target`` holding ``data``, with the old file's bits."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=_STAGED_PREFIX, suffix=".tmp",
                                   dir=os.path.dirname(target))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            bits = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            bits = 0o644
        os.chmod(tmp, bits)
    except OSError as exc:
        raise _naming(exc, path, tmp) from None
    return tmp


def _naming(exc, path, leftover):
    """``exc`` as an OSError naming ``path``, once the half-made ``leftover`` is removed."""
    with contextlib.suppress(OSError):
        os.unlink(leftover)
    return OSError(exc.errno, exc.strerror or str(exc), path)


def _keep(path, target):
    """A second name for the old ``target`` (None when there is none yet), to put back."""
    if not os.path.lexists(target):
        return None
    for _ in range(100):
        name = os.path.join(os.path.dirname(target),
                            _STAGED_PREFIX + os.urandom(8).hex() + ".tmp")
        try:
            os.link(target, name, follow_symlinks=False)
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
    """Put back the old files of ``moves`` (idempotent: a staged file left was never moved)."""
    for staged, name, backup in reversed(moves):
        staged_path = os.path.join(directory, staged)
        with contextlib.suppress(FileNotFoundError):
            if os.path.lexists(staged_path):
                os.unlink(staged_path)
                if backup is not None:
                    os.unlink(os.path.join(directory, backup))
            elif backup is not None:
                os.replace(os.path.join(directory, backup), os.path.join(directory, name))
            else:
                os.unlink(os.path.join(directory, name))
    _fsync_directory(directory)


def _drop(directory, moves):
    """Remove what a committed write left: its backups (and any staged temporary)."""
    for staged, _, backup in moves:
        for leftover in (staged, backup):
            if leftover is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(directory, leftover))


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_journal(directory, doc):
    """Put ``doc`` in place as the directory's journal: flushed, then renamed (atomic)."""
    import json

    journal = os.path.join(directory, JOURNAL_NAME)
    tmp = _stage(journal, journal, (json.dumps(doc) + "\n").encode())
    try:
        _fsync_directory(directory)
        os.replace(tmp, journal)
        _fsync_directory(directory)
    except OSError as exc:
        raise _naming(exc, journal, tmp) from None


def _read_journal(journal):
    """The journal's document, None when there is none; OSError naming it when unreadable."""
    import json

    try:
        return json.loads(read_regular(journal, 1 << 20))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OSError(getattr(exc, "errno", None) or errno.EIO,
                      f"unreadable transaction journal ({getattr(exc, 'strerror', None) or exc});"
                      " restore the directory from version control", journal) from None


def is_transaction_file(name):
    """True for what goldenal's writer keeps beside the files it writes, never content."""
    return name in (LOCK_NAME, JOURNAL_NAME) or bool(_is_temp(name))


def pending_journal(directory):
    """True when an interrupted transaction left its journal in ``directory``."""
    return os.path.exists(os.path.join(directory, JOURNAL_NAME))


def settle_directories(directories):
    """Recover every directory a write left a journal or a temporary in (before a read)."""
    for directory in sorted(directories):
        if pending_journal(directory) or any(map(_is_temp, os.listdir(directory))):
            with locked_directory(directory):
                pass


def recover(directory):
    """Finish a write a crash interrupted, under the directory's lock (docs/architecture.md)."""
    journal = os.path.join(directory, JOURNAL_NAME)
    doc = _read_journal(journal)
    if doc is not None:
        try:
            legacy = doc.get("format") == 1
            if not legacy and doc.get("format") != 2:
                raise ValueError(f"format {doc.get('format')!r}, not one this goldenal knows")
            moves = [_move(*move, None) if legacy else _move(*move) for move in doc["moves"]]
            txn = None if legacy else doc["txn"]
            if not legacy and not (isinstance(txn, str) and re.fullmatch(r"[0-9a-f]{32}", txn)):
                raise ValueError("not a journal of goldenal's")
            others = [str(o) for o in doc.get("others", ())]
            primary = doc.get("primary")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise OSError(errno.EINVAL, f"malformed transaction journal ({exc}); restore the "
                          "directory from version control", journal) from None
        if legacy:
            for staged, name, _ in moves:
                with contextlib.suppress(FileNotFoundError):
                    os.replace(os.path.join(directory, staged), os.path.join(directory, name))
        elif primary is None:
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
        _fsync_directory(directory)
        os.unlink(journal)
        _fsync_directory(directory)
    for name in os.listdir(directory):
        if _is_temp(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(directory, name))


def _move(staged, name, backup):
    """One ``[staged, name, backup]`` of a journal, checked to name files beside it."""
    if not _is_temp(_plain_name(staged)) or (
            backup is not None and not _is_temp(_plain_name(backup))):
        raise ValueError("a move does not start from a staged temporary")
    return staged, _plain_name(name), backup


def _plain_name(name):
    """A file name directly inside the directory (never a path)."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name
            or "\\" in name or "\0" in name):
        raise ValueError(f"not a plain file name: {name!r}")
    return name
