"""A persistent cache of what each file says, as ruff keeps one: warm audits re-read nothing.

What is cached is the per-file evidence only: the serve configs a launcher
script or an srt-slurm recipe holds (:func:`goldenal.auditing.shell.script_configs`,
:func:`goldenal.auditing.recipe.recipe_configs`) and the sequence-length scenarios
a master config runs its recipes under.  Each is a function of three things:
the file's bytes, its path within the repository (which decides agentic or
fixed-sequence-length) and goldenal's own code; so are the injection
requests of a master config (:func:`goldenal.auditing.master.injections`).  The key holds all three:

* a BLAKE2 digest of the path, the repository path, the kind and the bytes;
* a stamp of the code: goldenal's version, the Python version and the size
  and modification time of every module of the package.

Nothing that involves the curves or another file is cached: matching a
config to its golden cell, master-config injections, citations, suppressions
and fixes are computed afresh on every run, so a changed registry or master
config can never be answered from the cache.  A file that fails to parse is
never cached.

The cache lives outside the audited tree, in the user cache directory
(``$GOLDENAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/goldenal``, else
``~/.cache/goldenal``), one file per audited root, written atomically.
Values are stored with :mod:`marshal` (plain values only: nothing in the file
can run code when it is read); an unreadable, foreign or stale file is an
empty cache.  ``goldenal audit --no-cache`` neither reads nor writes it.

The cache can make an audit faster, never change its verdict:

* every entry carries a BLAKE2 checksum of its key and its own payload (the
  marshalled bytes): an entry edited, truncated or moved to another key is a
  miss, and the file is parsed afresh;
* the directory is used only when it is a real directory (not a link) owned
  by the user and writable by no one else; the temporary a save writes is
  created with ``O_EXCL`` there (:func:`tempfile.mkstemp`), so a name planted
  in advance is never followed;
* the cache file is read without following a link or waiting (a named pipe),
  only when it is a regular file of at most :data:`MAX_BYTES`; anything else
  at its path is an empty cache and is never replaced.
"""

import hashlib
import marshal
import os
import stat
import sys
from dataclasses import fields

from goldenal.auditing.evidence import Config
from goldenal.auditing.master import Injection

FORMAT = 2
MAX_BYTES = 256 * 1024 * 1024
# the record type of each kind of evidence kept; other kinds hold plain values
TYPES = {"script": Config, "recipe": Config, "markdown": Config,
         "injections": Injection}
_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in set(TYPES.values())}


def cache_dir():
    """The directory audit caches live in (created when first written)."""
    explicit = os.environ.get("GOLDENAL_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "goldenal")


def code_stamp():
    """goldenal's version, the Python version and every package module's size and mtime."""
    import goldenal

    package = os.path.dirname(os.path.abspath(goldenal.__file__))
    parts = [FORMAT, getattr(goldenal, "__version__", "?"), sys.version]
    for top, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".c", ".so")):
                st = os.stat(os.path.join(top, name))
                parts.append((os.path.relpath(os.path.join(top, name), package), st.st_size,
                              st.st_mtime_ns))
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


def _pack(cls, records):
    return tuple(tuple(getattr(r, name) for name in _FIELDS[cls]) for r in records)


def _unpack(cls, rows):
    return [cls(**dict(zip(_FIELDS[cls], row))) for row in rows]


def usable_directory(path):
    """True when ``path`` is a directory (not a link) owned by the user, writable by no one else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    owner = os.getuid() if hasattr(os, "getuid") else st.st_uid
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == owner
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _checksum(key, payload):
    return hashlib.blake2b(key + b"\0" + payload, digest_size=16).digest()


class Cache:
    """Per-file evidence of one audited root; :meth:`save` writes what this run used.

    With ``read_only=True`` the file is read and never written (``audit --diff``).
    """

    def __init__(self, root, directory=None, *, read_only=False):
        self.directory = directory or cache_dir()
        self.name = ("audit-" + hashlib.blake2b(os.path.abspath(root).encode(),
                                                digest_size=12).hexdigest() + ".marshal")
        self.path = os.path.join(self.directory, self.name)
        self.stamp = code_stamp()
        self.new = {}
        self.changed = False
        self.read_only = read_only
        self.old = self._load()

    def _load(self):
        """The entries of the cache file, or ``{}`` (none, unusable, foreign or stale)."""
        from goldenal.core.files import read_regular

        if not usable_directory(self.directory):
            return {}
        try:
            # no link followed, no waiting on a pipe, a regular file only, bounded
            data = marshal.loads(read_regular(self.name, MAX_BYTES, beneath=self.directory))
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if not isinstance(data, dict) or data.get("stamp") != self.stamp:
            return {}
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}

    @staticmethod
    def key(kind, candidate):
        h = hashlib.blake2b(digest_size=16)
        for part in (kind, candidate.relpath, candidate.scenario or ""):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        h.update(candidate.data)
        return h.digest()

    def get(self, kind, candidate):
        """``(hit, value)`` for a file's cached evidence of ``kind``; a bad entry is a miss."""
        k = self.key(kind, candidate)
        entry = self.new.get(k) or self.old.get(k)
        if entry is None:
            return False, None
        try:
            payload, checksum = entry
            if not isinstance(payload, bytes) or checksum != _checksum(k, payload):
                return False, None
            stored_kind, rows = marshal.loads(payload)
            if stored_kind != kind:
                return False, None
            value = _unpack(TYPES[kind], rows) if kind in TYPES else rows
        except (TypeError, ValueError, IndexError, EOFError):
            return False, None
        self.new[k] = entry
        return True, value

    def put(self, kind, candidate, value):
        """Remember ``value`` (a list of configs, or plain values) for the next run."""
        try:
            payload = marshal.dumps((kind, _pack(TYPES[kind], value) if kind in TYPES
                                     else value))
        except ValueError:
            return          # something not plain in it: never cached
        k = self.key(kind, candidate)
        self.new[k] = (payload, _checksum(k, payload))
        self.changed = True

    def save(self):
        """Write the entries this run used (stale ones drop out), atomically; errors ignored.

        Nothing is written unless the directory is the user's own (created
        ``0700`` when missing) and the cache path is a regular file or free.
        """
        from goldenal.core.files import write_texts_atomic

        if self.read_only or (not self.changed and len(self.new) == len(self.old)):
            return
        try:
            if not os.path.lexists(self.directory):
                os.makedirs(self.directory, mode=0o700)
            if not usable_directory(self.directory):
                return
            with _suppressed():
                if not stat.S_ISREG(os.lstat(self.path).st_mode):
                    return      # a link, a pipe, a directory: left alone
            write_texts_atomic({self.path: marshal.dumps({"stamp": self.stamp,
                                                          "entries": self.new})}, links=False)
        except OSError:
            pass


def _suppressed(*errors):
    import contextlib

    return contextlib.suppress(*(errors or (FileNotFoundError,)))
