"""A persistent cache of what each file says, as ruff keeps one: warm audits re-read nothing.

What is cached is the per-file evidence only: the serve configs a launcher
script or an srt-slurm recipe holds (:func:`goldenal.lint.shell.script_configs`,
:func:`goldenal.lint.recipe.recipe_configs`) and the sequence-length scenarios
a master config runs its recipes under.  Each is a function of three things:
the file's bytes, its path within the repository (which decides agentic or
fixed-sequence-length) and goldenal's own code; so are the injection
requests of a master config (:func:`goldenal.lint.master.injections`).  The key holds all three:

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
"""

import hashlib
import marshal
import os
import sys
from dataclasses import fields

from goldenal.lint.evidence import Config
from goldenal.lint.master import Injection

FORMAT = 1
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


class Cache:
    """Per-file evidence of one audited root; :meth:`save` writes what this run used.

    With ``read_only=True`` the file is read and never written (``audit --diff``).
    """

    def __init__(self, root, directory=None, *, read_only=False):
        self.path = os.path.join(
            directory or cache_dir(),
            "audit-" + hashlib.blake2b(os.path.abspath(root).encode(),
                                       digest_size=12).hexdigest() + ".marshal")
        self.stamp = code_stamp()
        self.old = {}
        self.new = {}
        self.changed = False
        self.read_only = read_only
        try:
            with open(self.path, "rb") as fh:
                data = marshal.load(fh)
            if isinstance(data, dict) and data.get("stamp") == self.stamp:
                self.old = data["entries"]
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            self.old = {}

    @staticmethod
    def key(kind, candidate):
        h = hashlib.blake2b(digest_size=16)
        for part in (kind, candidate.relpath, candidate.scenario or ""):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        h.update(candidate.data)
        return h.digest()

    def get(self, kind, candidate):
        """``(hit, value)`` for a file's cached evidence of ``kind``."""
        k = self.key(kind, candidate)
        entry = self.new.get(k) or self.old.get(k)
        if entry is None:
            return False, None
        try:
            value = _unpack(TYPES[kind], entry[1]) if kind in TYPES else entry[1]
        except (TypeError, ValueError, IndexError):
            return False, None      # a damaged entry is a miss
        self.new[k] = entry
        return True, value

    def put(self, kind, candidate, value):
        """Remember ``value`` (a list of configs, or plain values) for the next run."""
        packed = (kind, _pack(TYPES[kind], value) if kind in TYPES else value)
        try:
            marshal.dumps(packed)
        except ValueError:
            return          # something not plain in it: never cached
        self.new[self.key(kind, candidate)] = packed
        self.changed = True

    def save(self):
        """Write the entries this run used (stale ones drop out), atomically; errors ignored."""
        if self.read_only or (not self.changed and len(self.new) == len(self.old)):
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            tmp = f"{self.path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                marshal.dump({"stamp": self.stamp, "entries": self.new}, fh)
            os.replace(tmp, self.path)
        except OSError:
            pass
