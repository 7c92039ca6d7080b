"""Find the files worth auditing: a byte prefilter over a directory walk.

Every regular file under the roots is read as bytes once and kept only if it
mentions a synthetic knob, a speculative setting or a suppression comment.
Symlinks are followed only while they stay inside the audited root; loops and
links leading outside are reported, never followed.  Nothing is executed.
"""

import os
from dataclasses import dataclass

from goldenal.lint import evidence as ev

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
             ".mypy_cache", ".pytest_cache"}
DOC_EXTS = (".md", ".rst", ".txt", ".html", ".htm", ".ipynb", ".adoc")
MAX_BYTES = 8 * 1024 * 1024
SKIP_EXTS = DOC_EXTS + (".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".ico", ".lock")


@dataclass
class Candidate:
    """One file that passed the prefilter."""

    relpath: str
    data: bytes
    kind: str            # "script", "master", "recipe", "yaml", "json", "other"
    has_knob: bool
    has_spec: bool


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
        from goldenal.lint.master import is_master

        if is_master(relpath, data):
            return "master"
        if b"backend:" in data:
            return "recipe"
        return "yaml"
    if low.endswith(".json"):
        return "json"
    if low.endswith(DOC_EXTS):
        return "doc"
    return "other"


def walk(paths, root):
    """Yield :class:`Candidate` and :class:`Problem` objects for ``paths`` under ``root``."""
    real_root = os.path.realpath(root)
    seen_dirs = set()

    root_abs = os.path.abspath(root)
    prefix = root_abs.rstrip(os.sep) + os.sep

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

    def visit_file(p, shown):
        try:
            fd = os.open(p, os.O_RDONLY)
            try:
                data = os.read(fd, MAX_BYTES + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            yield Problem(shown(), f"unreadable: {exc.strerror or exc}")
            return
        # a few cheap gates first: most files mention none of them
        # (every TensorRT-LLM config with max_draft_len also says speculative_config)
        if not (b"_ACC" in data or b"acceptance" in data or b"speculative" in data
                or b"goldenal:" in data):
            return
        has_knob = any(b in data for b in ev.KNOB_BYTES)
        has_spec = has_knob or any(b in data for b in ev.SPEC_BYTES)
        has_supp = b"goldenal:" in data
        if not (has_spec or has_supp):
            return
        shown = shown()
        if b"\0" in data[:8192]:
            if has_knob:
                yield Problem(shown, "binary file skipped", "info")
            return
        if len(data) > MAX_BYTES:
            yield Problem(shown, f"larger than {MAX_BYTES} bytes; skipped", "info")
            return
        yield Candidate(shown, data, _kind(shown, data), has_knob, has_spec)

    ancestors = set()

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
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Problem(rel(d), f"unreadable directory: {exc.strerror or exc}")
            return
        ancestors.add(ident)
        try:
            yield from visit_entries(entries)
        finally:
            ancestors.discard(ident)

    def visit_entries(entries):
        for e in entries:
            if e.name in SKIP_DIRS:
                continue
            p = e.path
            try:
                if e.is_symlink():
                    target = os.path.realpath(p)
                    if not os.path.exists(target):
                        yield Problem(rel(p), "broken or looping symlink; not followed", "info")
                        continue
                    if not inside(target):
                        yield Problem(rel(p), "symlink leads outside the audited root; "
                                              "not followed", "info")
                        continue
                if e.is_dir():
                    yield from visit_dir(p)
                elif e.is_file():
                    if e.name.endswith(SKIP_EXTS):
                        continue    # documentation and images: never a serve config
                    yield from visit_file(p, lambda p=p: rel(p))
            except OSError as exc:
                yield Problem(rel(p), f"unreadable: {exc.strerror or exc}")

    for path in paths:
        path = os.path.abspath(path)
        if os.path.isdir(path):
            yield from visit_dir(path)
        elif os.path.isfile(path):
            yield from visit_file(path, lambda p=path: rel(p))
        elif os.path.lexists(path):
            yield Problem(rel(path), "not a regular file or directory; skipped", "info")
        else:
            yield Problem(rel(path), "no such file or directory")
