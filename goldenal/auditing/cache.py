"""A persistent cache of what each file says, as ruff keeps one.

Per-file evidence is kept (a launcher's or recipe's configs, a master
config's scenarios and injections), keyed by a BLAKE2 digest of the path,
the repository path, the kind and the bytes, under a stamp of goldenal's
code; nothing involving the curves or another file, nor a file that fails
to parse.  Whole runs are kept too, keyed by their options and curves, each
answered only while every file the run would read has the stat it had then.
One :mod:`marshal` file per audited root in the user cache directory,
written atomically.  It can never change a verdict: every
entry carries a checksum of its key and payload (a bad one is a miss); the
directory is used only when it is the user's own and writable by no one
else; the file is read without following a link or waiting, bounded by
:data:`MAX_BYTES`, and anything but a regular file there is left alone.
"""

import hashlib
import marshal
import os
import stat
import sys
from dataclasses import fields

from goldenal.auditing.evidence import Config
from goldenal.auditing.master import Injection
from goldenal.auditing.rules import Finding

FORMAT = 3
RUNS = 8            # whole runs kept (options, paths or curves differing)
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
    """goldenal's and Python's versions and every module's size and mtime, once a process."""
    if not _STAMP:
        _STAMP.append(_code_stamp())
    return _STAMP[0]


_STAMP = []


def _code_stamp():
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
    # the fields as stored, without running a frozen dataclass's __init__ (as Config.with_)
    names, out = _FIELDS[cls], []
    for row in rows:
        if len(row) != len(names):
            raise ValueError("a record of another shape")
        record = object.__new__(cls)
        record.__dict__.update(zip(names, row))
        out.append(record)
    return out


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
    """Per-file evidence of one audited root; ``read_only`` (``audit --diff``) never writes."""

    def __init__(self, root, directory=None, *, read_only=False):
        self.directory = directory or cache_dir()
        self.name = ("audit-" + hashlib.blake2b(os.path.abspath(root).encode(),
                                                digest_size=12).hexdigest() + ".marshal")
        self.path = os.path.join(self.directory, self.name)
        self.stamp = code_stamp()
        self.new = {}
        self.changed = False
        self.read_only = read_only
        doc = self._load()
        self.old, self.runs = (doc.get(part) for part in ("entries", "runs"))

    def _load(self):
        """The cache file's per-file entries and runs, both empty when it is missing,
        unusable, foreign or stale."""
        from goldenal.core.files import read_regular

        empty = {"entries": {}, "runs": {}}
        if not usable_directory(self.directory):
            return empty
        try:
            # no link followed, no waiting on a pipe, a regular file only, bounded
            data = marshal.loads(read_regular(self.name, MAX_BYTES, beneath=self.directory))
        except (OSError, ValueError, EOFError, TypeError):
            return empty
        if not isinstance(data, dict) or data.get("stamp") != self.stamp:
            return empty
        return {part: data[part] if isinstance(data.get(part), dict) else {} for part in empty}

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

    def get_run(self, key, state):
        """``(findings, files_read, configs_checked, skipped)`` of the run kept under
        ``key`` when its tree had ``state``, else None; a bad entry is a miss."""
        try:
            stored, payload, checksum = self.runs[key]
            if stored != state or checksum != _checksum(key + state, payload):
                return None
            findings, *counts = marshal.loads(payload)
            return [Finding(*row) for row in findings], *counts
        except (KeyError, TypeError, ValueError, EOFError):
            return None

    def put_run(self, key, state, result):
        findings, *counts = result
        payload = marshal.dumps((tuple(tuple(f) for f in findings), *counts))
        runs = {k: v for k, v in self.runs.items() if k != key}
        self.runs = {**dict(list(runs.items())[1 - RUNS:]), key: (state, payload,
                                                                  _checksum(key + state, payload))}
        self.changed = True

    def save(self):
        """Write the entries this run used, atomically, only into the user's own directory
        and over a regular file; errors are ignored.
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
            doc = {"stamp": self.stamp, "entries": self.new, "runs": self.runs}
            write_texts_atomic({self.path: marshal.dumps(doc)}, links=False)
        except OSError:
            pass


def _suppressed(*errors):
    import contextlib

    return contextlib.suppress(*(errors or (FileNotFoundError,)))
