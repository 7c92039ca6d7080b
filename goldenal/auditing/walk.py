"""Find the files worth auditing: a byte prefilter over a directory walk.

As ruff does, ``exclude`` patterns and every ``.gitignore`` on the way
(:mod:`pathspec`) decide what is never read; a file named on the command line
is always read.  Every other regular file is read once and kept only if it
names a synthetic knob, a speculative setting or a suppression; goldenal's
own reports are skipped.  A directory holding an interrupted write's journal
is settled first, and the files goldenal's writers keep beside their files
are never read.  Symlinks are followed only inside the audited root; loops
and links leading out are reported.  Nothing is executed.
"""

import os
import re
import stat
from dataclasses import dataclass

from goldenal.core.files import (JOURNAL_NAME, LOCK_NAME, is_transaction_file, open_regular,
                                 repository_root, settle_directories)
from goldenal.auditing import evidence as ev

DEFAULT_EXCLUDE = (".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                   ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache")
DOC_EXTS = (".md", ".rst", ".txt", ".html", ".htm", ".ipynb", ".adoc")
MAX_BYTES = 8 * 1024 * 1024
_OWN_PREFIX = ".goldenal"   # every name is_transaction_file knows starts so
SKIP_EXTS = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".ico", ".lock")

# goldenal's own output, in each format (audit never reads its reports)
_OWN_TEXT = re.compile(rb"\A\s*(?:\S+:\d+:\d+: GAL\d{3}[ \n]|Found \d+ findings? \()")
_OWN_GITHUB = re.compile(rb"\A::(?:error|warning|notice) file=[^\n]*title=GAL\d{3} ")
_OWN_JSON = re.compile(rb'\A\s*\[\s*\{\s*"code": "GAL\d{3}"')


def is_own_report(data):
    """True for a goldenal audit report in any output format (text, JSON, SARIF, GitHub)."""
    head = data[:2048]
    if b"GAL" not in head and b"Found" not in head and b'"$schema"' not in head:
        return False    # every format says one of these at its start
    if b'"$schema"' in head and b"sarif" in head:
        return b'"name": "goldenal"' in data
    return bool(_OWN_JSON.match(head) or _OWN_GITHUB.match(head) or _OWN_TEXT.match(head))


class _Names:
    """Aho-Corasick automata over the knob, setting and suppression names."""

    def __init__(self):
        import ahocorasick_rs

        def automaton(names):
            return ahocorasick_rs.BytesAhoCorasick(
                list(names), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)

        groups = (ev.KNOB_BYTES, ev.SPEC_BYTES, (b"goldenal:",))
        self.any = automaton(name for group in groups for name in group)
        self.group_of = [i for i, group in enumerate(groups) for _ in group]
        # one automaton a group: leftmost-first matches never overlap, so one name
        # can hide another behind it, but never every name of its own group
        self.groups = [automaton(group) for group in groups]

    def named(self, data):
        """``(knob, setting, suppression)`` named in ``data``, or None when none is."""
        hits = self.any.find_matches_as_indexes(data)
        if not hits:
            return None
        seen = {self.group_of[i] for i, _, _ in hits}
        # a group the first pass saw is named; only the others need their own pass
        return tuple(g in seen or bool(a.find_matches_as_indexes(data))
                     for g, a in enumerate(self.groups))


_NAMES = []


def names_in(data):
    """``(has_knob, has_setting, has_suppression)`` for ``data``, or None when it names
    none: one SIMD Aho-Corasick pass (:mod:`ahocorasick_rs`) for every name.
    """
    if not _NAMES:
        _NAMES.append(_Names())
    return _NAMES[0].named(data)


class WalkStats:
    """Counts the walk keeps for the summary line."""

    def __init__(self):
        self.read = 0
        self.skipped = []        # (relpath, reason) for files that mention a knob or setting


_GROUP_NAME = re.compile(r"\(\?P<[A-Za-z_]\w*>")


class _Ignore:
    """A gitignore spec (:mod:`pathspec`) behind one regex of all its patterns:
    only a path some pattern matches goes to pathspec, which decides.
    """

    def __init__(self, lines):
        import pathspec
        from pathspec.util import normalize_file

        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self.normalize = normalize_file
        self.any = None
        parts = []
        for pattern in self.spec.patterns:
            if pattern.include is None:
                continue                # a blank line or comment: matches nothing
            regex = getattr(pattern, "regex", None)
            if regex is None or not isinstance(regex.pattern, str) or regex.flags != re.U:
                return                  # not a plain regex pattern: pathspec alone decides
            parts.append("(?:" + _GROUP_NAME.sub("(?:", regex.pattern) + ")")
        try:
            self.any = re.compile("|".join(parts)) if parts else re.compile(r"(?!)")
        except re.error:
            self.any = None

    def check(self, path):
        """True (ignored), False (re-included by a negation) or None (no pattern matches)."""
        if os.sep != "/" or path.startswith(("./", "/")):
            path = self.normalize(path)     # else already as pathspec would make it
        if self.any is not None and not self.any.search(path):
            return None
        return self.spec.check_file(path).include


def _read_gitignore(directory):
    # a regular file only, opened without blocking: a named pipe called .gitignore
    # would hang a plain open() for ever
    try:
        data = _head(os.path.join(directory, ".gitignore"))[:MAX_BYTES]
    except OSError:
        return None
    # lines end at \n, a CR before it dropped, as git reads them (dir.c)
    text = data.decode("utf-8", errors="replace")
    return _Ignore(line.removesuffix("\r") for line in text.split("\n"))


@dataclass
class Candidate:
    """One file that passed the prefilter."""

    relpath: str
    data: bytes
    kind: str            # "script", "master", "recipe", "yaml", "json", "other"
    has_knob: bool
    has_spec: bool
    scenario: str = ""   # the path relative to the repository root (decides agentic)


@dataclass
class Problem:
    """A file or link that could not be audited (reported as GAL306)."""

    relpath: str
    message: str
    severity: str = "warning"


def _kind(relpath, data):
    low = relpath.lower()
    if low.endswith((".sh", ".bash")) or (data[:2] == b"#!" and b"sh" in data[:80].split(b"\n")[0]):
        return "script"
    if low.endswith((".yaml", ".yml")):
        from goldenal.auditing.master import is_master

        if is_master(relpath, data):
            return "master"
        # srt-slurm: the 1.x layout's backend block, or the 2.0 layout's roles beside
        # its engine or schema
        if b"backend:" in data or (b"roles:" in data and (b"engine:" in data
                                                         or b"schema:" in data)):
            return "recipe"
        return "yaml"
    if low.endswith(".json"):
        return "json"
    if low.endswith(DOC_EXTS):
        return "doc"
    return "other"


_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


_CHUNK = 64 * 1024


def _head(path):
    """Up to ``MAX_BYTES + 1`` bytes of a regular file, as :func:`open_regular` opens it
    (never waiting on a pipe), without a buffered file object per file.  A file shorter
    than one chunk (most are) costs one read; only a longer one is checked to be a
    regular file before it is read on.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        fd = None
    try:
        data = os.read(fd, _CHUNK) if fd is not None else None
        if data is not None and len(data) < _CHUNK:
            return data
        info = os.fstat(fd) if fd is not None else None
        if info is not None and stat.S_ISREG(info.st_mode):
            # sized to the file: a buffer of MAX_BYTES per file costs more than the read
            want = min(info.st_size, MAX_BYTES) + 1
            # a short read, or a file grown since: read on (not when all its bytes came)
            while len(data) < want and len(data) != info.st_size and \
                    (more := os.read(fd, want - len(data))):
                data += more
            return data
    except OSError:
        pass        # a directory or a device: open_regular names what it is
    finally:
        if fd is not None:
            os.close(fd)
    with open_regular(path) as fh:          # raises its error, naming what the file is
        return fh.read(MAX_BYTES + 1)


def stat_key(path):
    """What a file is taken to be unchanged by: size, modification and change times, inode."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return (exc.errno,)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def walk(paths, root, *, exclude=DEFAULT_EXCLUDE, respect_gitignore=True, stats=None,
         overlay=None, stat_only=False):
    """Yield :class:`Candidate` and :class:`Problem` objects for ``paths`` under ``root``;
    ``overlay`` maps real paths to bytes read in their place.  ``stat_only`` reads no
    file: it yields ``(relpath, scenario, *stat_key)`` for each file, and
    ``(directory, ".gitignore", *stat_key)`` for each ignore file looked for.
    """
    stats = stats if stats is not None else WalkStats()
    real_root = os.path.realpath(root)
    seen_dirs = set()
    # bare names (".git", "node_modules") match any path component: a set lookup;
    # only real patterns go through the gitignore matcher
    exclude = tuple(exclude or ())
    names = {p.rstrip("/") for p in exclude if not any(ch in p for ch in "*?[]!/\\")}
    names |= {p[:-1] for p in exclude if p.endswith("/") and p.count("/") == 1
              and not any(ch in p for ch in "*?[]!\\")}
    patterns = [p for p in exclude if p.rstrip("/") not in names]
    excluded = _Ignore(patterns) if patterns else None

    root_abs = os.path.abspath(root)
    prefix = root_abs.rstrip(os.sep) + os.sep
    # agentic or not is read from the path within the file's repository (its git
    # root, else the audited root), whatever the repository's location
    repos = {}

    def git_root(d):
        # _git_root, remembered for every directory on the way up
        if d not in repos:
            if os.path.exists(os.path.join(d, ".git")):
                repos[d] = d
            else:
                parent = os.path.dirname(d)
                repos[d] = None if parent == d else git_root(parent)
        return repos[d]

    in_repo = {}        # directory as walked -> its path in its repository, "/"-ended

    def scenario(p):
        d, sep, name = p.rpartition(os.sep)
        d = d or sep        # "/x" lies in "/", a bare name in the working directory
        if d not in in_repo:
            a = os.path.abspath(d)
            top = git_root(a)
            in_repo[d] = None if top is None else "" if a == top else \
                a[len(top.rstrip(os.sep)) + 1:].replace(os.sep, "/") + "/"
        return rel(p) if in_repo[d] is None else in_repo[d] + name

    def rel(p):
        # string slicing: paths from scandir start with the root as given
        a = p if os.path.isabs(p) else os.path.join(root_abs, p) if not p.startswith(root) else p
        a = os.path.abspath(a) if not a.startswith(prefix) else a
        if a.startswith(prefix):
            return a[len(prefix):].replace(os.sep, "/")
        r = os.path.relpath(p, root)
        return p if r.startswith("..") else r.replace(os.sep, "/")

    def inside(real):
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    def visit_file(p):
        """The file's Candidate or Problem, or None (nothing to audit in it)."""
        if stat_only:
            return (rel(p), scenario(p)) + stat_key(p)
        try:
            data = _head(p)
        except OSError as exc:
            return Problem(rel(p), f"unreadable: {exc.strerror or exc}")
        if overlay:
            data = overlay.get(os.path.realpath(p), data)
        stats.read += 1
        # one pass over the bytes for every name at once; most files mention none
        named = names_in(data)
        if named is None:
            return None
        has_knob, has_spec, has_supp = named
        has_spec = has_spec or has_knob
        if not (has_spec or has_supp):
            return None
        shown = rel(p)
        if b"\0" in data[:8192]:
            if has_knob:
                return Problem(shown, "binary file skipped", "info")
            stats.skipped.append((shown, "binary file"))
            return None
        if len(data) > MAX_BYTES:
            return Problem(shown, f"larger than {MAX_BYTES} bytes; skipped", "info")
        if is_own_report(data):
            stats.skipped.append((shown, "a goldenal audit report"))
            return None
        return Candidate(shown, data, _kind(shown, data), has_knob, has_spec, scenario(p))

    ancestors = set()
    ignores = []            # (directory, spec) of the .gitignore files in force, outermost first
    outer = []              # (directory, ".gitignore", *stat_key) above a directory given

    def ignored(p, name, is_dir):
        # "build/" names directories only; "build" names both, as in .gitignore
        if name in names and (is_dir or name in exclude):
            return True
        if excluded is None and not ignores:
            return False
        tail = "/" if is_dir else ""
        if excluded is not None and excluded.check(rel(p) + tail):
            return True
        for base, spec in reversed(ignores):      # the deepest .gitignore decides
            # p lies under base (scandir paths extend the directory's): slice, don't relpath
            sub = p[len(base) + 1:] if p.startswith(base + os.sep) else os.path.relpath(p, base)
            include = spec.check(sub.replace(os.sep, "/") + tail)
            if include is not None:
                return include
        return False

    def listing(d):
        with os.scandir(d) as it:
            return sorted(it, key=lambda e: e.name)

    def visit_dir(d):
        try:
            st = os.stat(d)
            ident = (st.st_dev, st.st_ino)     # cheaper than realpath, same test
            if ident in ancestors:
                yield Problem(rel(d), "symlink loop; not followed", "info")
                return
            if ident in seen_dirs:
                return      # a link to a directory audited under its own path
            seen_dirs.add(ident)
            entries = listing(d)
            if any(e.name.startswith(_OWN_PREFIX) and e.name != LOCK_NAME
                   and is_transaction_file(e.name) for e in entries):
                problem = recovered(d)
                if problem is not None:
                    yield problem
                    return
                entries = listing(d)
        except OSError as exc:
            yield Problem(rel(d), f"unreadable directory: {exc.strerror or exc}")
            return
        spec = None
        if respect_gitignore and any(e.name == ".gitignore" for e in entries):
            spec = _read_gitignore(d)
            if stat_only:
                yield (rel(d), ".gitignore") + stat_key(os.path.join(d, ".gitignore"))
        if spec is not None:
            ignores.append((d, spec))
        ancestors.add(ident)
        try:
            yield from visit_entries(entries)
        finally:
            ancestors.discard(ident)
            if spec is not None:
                ignores.pop()

    def recovered(d):
        """None once an interrupted write in ``d`` is finished or undone, else a Problem."""
        try:
            settle_directories([d])
        except OSError as exc:
            return Problem(rel(d), "a write a crash interrupted could not be recovered "
                           f"({exc.strerror or exc}); its files may be a mix of old and new: "
                           "not audited", "error")
        return None

    def visit_entries(entries):
        for e in entries:
            p = e.path
            if e.name.startswith(_OWN_PREFIX) and is_transaction_file(e.name):
                continue    # a journal or temporary of goldenal's writers: never content
            try:
                is_dir = e.is_dir()
                if ignored(p, e.name, is_dir):
                    continue
                if e.is_symlink():
                    target = os.path.realpath(p)
                    if not os.path.exists(target):
                        yield Problem(rel(p), "broken or looping symlink; not followed", "info")
                        continue
                    if not inside(target):
                        yield Problem(rel(p), "symlink leads outside the audited root; "
                                              "not followed", "info")
                        continue
                if is_dir:
                    yield from visit_dir(p)
                elif e.is_file():
                    if e.name.endswith(SKIP_EXTS):
                        continue    # images and lock files: never a serve config
                    item = visit_file(p)
                    if item is not None:
                        yield item
            except OSError as exc:
                yield Problem(rel(p), f"unreadable: {exc.strerror or exc}")

    def outer_ignores(directory):
        """The .gitignore files between the repository root and ``directory`` (exclusive)."""
        top = repository_root(directory)
        if top is None:
            return []
        chain, here = [], os.path.dirname(directory)
        while len(here) >= len(top):
            chain.append(here)
            if here == top:
                break
            here = os.path.dirname(here)
        out = []
        for d in reversed(chain):
            spec = _read_gitignore(d)
            if stat_only:       # one made or removed above the audited directory counts too
                outer.append((d, ".gitignore") + stat_key(os.path.join(d, ".gitignore")))
            if spec is not None:
                out.append((d, spec))
        return out

    for path in paths:
        path = os.path.abspath(path)
        if os.path.isdir(path):
            if respect_gitignore:
                outer.clear()
                ignores[:] = outer_ignores(path)
                if stat_only:
                    yield from outer
            yield from visit_dir(path)
            ignores.clear()
        elif is_transaction_file(os.path.basename(path)):
            yield Problem(rel(path), "a journal or temporary of goldenal's writers; not read",
                          "info")
        elif os.path.isfile(path):
            if os.path.lexists(os.path.join(os.path.dirname(path), JOURNAL_NAME)):
                # (the file itself is read; leftovers beside it are not and may stay)
                problem = recovered(os.path.dirname(path))
                if problem is not None:
                    yield problem
                    continue
            if not os.path.isfile(path):    # created by the write the recovery undid
                yield Problem(rel(path), "no such file or directory")
                continue
            item = visit_file(path)
            if item is not None:
                yield item
        elif os.path.lexists(path):
            yield Problem(rel(path), "not a regular file or directory; skipped", "info")
        else:
            yield Problem(rel(path), "no such file or directory")
