"""``goldenal audit``: a linter for recipe repositories against the golden curves.

Walks a tree (nothing is executed), resolves every spec-decode config found
to its golden cell and reports like a linter; rules in :mod:`goldenal.auditing.rules`.
"""

import os
from typing import NamedTuple

from goldenal.auditing.rules import RULES, Finding, explain, get_rule

__all__ = ["audit", "audit_report", "AuditReport", "Finding", "RULES", "explain", "get_rule"]


def _codes(spec, flag="select"):
    """``--select``/``--ignore`` values (codes, prefixes such as ``GAL2``, or names) as a set;
    UsageError for anything else.
    """
    if not spec:
        return None
    if isinstance(spec, str):
        spec = spec.split(",")
    out = set()
    for item in spec:
        item = item.strip()
        if not item:
            continue
        rule = get_rule(item)
        if rule is None and not any(code.startswith(item.upper()) for code in RULES):
            raise _unknown_code(item, flag)
        out.add(rule.code if rule else item.upper())
    return out


def _unknown_code(item, flag):
    import difflib

    from goldenal.core.errors import UsageError
    from goldenal.auditing.rules import BY_NAME

    families = sorted({code[:4] for code in RULES})
    # a short prefix (GAL9) is answered by the list of prefixes, not a guess
    close = difflib.get_close_matches(item.upper(), list(RULES), n=2, cutoff=0.8) \
        if len(item) > 4 else []
    close += difflib.get_close_matches(item.lower(), list(BY_NAME), n=1, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return UsageError(f"--{flag}: no rule code, prefix or name {item!r}{hint} (codes "
                      f"{min(RULES)}-{max(RULES)}, prefixes {', '.join(families)}; "
                      "`goldenal audit --explain CODE` describes one)")


def _matches(code, codes):
    return any(code.startswith(c) for c in codes)


def default_root(paths):
    """The repository root of ``paths`` (so CI annotations name real files), else the
    one directory given, else the current one: what finding paths are relative to.
    """
    top = git_root(paths)
    return top if top is not None else _audited_dir(paths)


def _audited_dir(paths):
    return paths[0] if len(paths) == 1 and os.path.isdir(paths[0]) else os.getcwd()


def git_root(paths):
    """The nearest directory holding ``.git`` at or above all of ``paths``, or None."""
    full = [os.path.abspath(os.fspath(p)) for p in paths or ["."]]
    try:
        here = os.path.commonpath(full)
    except ValueError:          # paths on different drives
        return None
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    from goldenal.core.files import repository_root

    return repository_root(here)


class AuditReport(NamedTuple):
    """What one audit read, checked, skipped (``(path, reason)``) and found, the
    settings file used and ``notes`` said once for the whole audit.
    """

    findings: tuple
    files_read: int
    configs_checked: int
    skipped: tuple
    golden_dir: "str | None" = None
    settings: "str | None" = None
    notes: tuple = ()

    @property
    def assumptions(self):
        """The GAL305 findings: configs whose thinking mode was assumed."""
        return tuple(f for f in self.findings if f.code == "GAL305")

    def to_frame(self):
        """The findings as a pandas DataFrame, one row per finding."""
        import pandas as pd

        cols = list(Finding._fields)
        return pd.DataFrame([list(f) for f in self.findings], columns=cols)

    def __repr__(self):
        return (f"<AuditReport {len(self.findings)} findings: {self.configs_checked} serve "
                f"configs checked in {self.files_read} files read, {len(self.skipped)} "
                "skipped>")


def audit_report(paths=None, *, root=None, registry=None, golden_dir=None, select=None,
                 ignore=None, exclude=None, extend_exclude=None, respect_gitignore=None,
                 settings=True, cache=False, overlay=None):
    """Audit files or directories; the findings with what was read, checked and skipped.

    Parameters
    ----------
    paths : list of str, optional
        Files or directories (default: the current directory).
    root : str, optional
        Directory finding paths are relative to (default :func:`default_root`).
    registry : goldenal.golden.registry.Registry, optional
        Curves to audit against; default ``load_registry(golden_dir)``.
    golden_dir : str, optional
        Golden directory when ``registry`` is not given (default: the settings').
    select, ignore : iterable of str or str, optional
        Codes, code prefixes (``"GAL2"``) or rule names to keep / drop.
    exclude, extend_exclude : iterable of str, optional
        gitignore-style patterns never read; ``exclude`` replaces the default.
    respect_gitignore : bool, optional
        Honour ``.gitignore`` files (default true).
    settings : bool or str
        Read ``[tool.goldenal]`` from the nearest ``pyproject.toml`` (True), a
        given one (str) or none (False); arguments given here win.
    cache : bool, str or goldenal.auditing.cache.Cache
        The cache (per-file evidence, and whole runs over unchanged files): True
        (user cache directory), a directory, a ``Cache`` or False (default).
        Findings are identical either way.
    overlay : dict, optional
        ``{path: bytes}`` audited in place of those files (matched by real path);
        nothing is written.

    Returns
    -------
    AuditReport

    Raises
    ------
    goldenal.core.errors.ParseError
        None of ``paths`` exists, or invalid settings (exit code 2 in the CLI).
    """
    from goldenal.core.errors import ParseError
    from goldenal.auditing.settings import Settings, find_settings, read_settings
    from goldenal.auditing.walk import DEFAULT_EXCLUDE

    _codes(select, "select"), _codes(ignore, "ignore")     # a usage error comes first
    paths = [os.fspath(p) for p in (paths or ["."])]
    # settings are those of the audited directory; paths are reported from the repository root
    settings_dir = root if root is not None else _audited_dir(paths)
    if root is None:
        root = default_root(paths)
    if not any(os.path.exists(p) for p in paths):
        raise ParseError("nothing to audit: " + ", ".join(paths) + " not found", path=paths[0])
    if settings is True:
        conf = find_settings(settings_dir)
    elif settings:
        conf = read_settings(os.fspath(settings)) or Settings(path=os.fspath(settings))
    else:
        conf = Settings()
    select = select if select is not None else conf.select
    ignore = ignore if ignore is not None else conf.ignore
    base = tuple(exclude) if exclude is not None else (
        conf.exclude if conf.exclude is not None else DEFAULT_EXCLUDE)
    patterns = base + tuple(conf.extend_exclude) + tuple(extend_exclude or ())
    if respect_gitignore is None:
        respect_gitignore = conf.respect_gitignore
    if registry is None:
        from goldenal.golden.registry import load_registry

        registry = load_registry(golden_dir or conf.golden_dir)
    curves = list(registry.curves.values()) if hasattr(registry, "curves") else list(registry)
    from goldenal.auditing.runner import run

    store = None
    if cache is True or isinstance(cache, (str, os.PathLike)):
        from goldenal.auditing.cache import Cache

        store = Cache(root, None if cache is True else os.fspath(cache))
    elif cache:
        store = cache
    if overlay:
        overlay = {os.path.realpath(os.fspath(p)): data for p, data in overlay.items()}
    result = run(paths, root, curves, exclude=patterns, respect_gitignore=respect_gitignore,
                 cache=store, overlay=overlay)
    findings = result.findings
    sel, ign = _codes(select, "select"), _codes(ignore, "ignore")
    if sel:
        findings = [f for f in findings if _matches(f.code, sel)]
    if ign:
        findings = [f for f in findings if not _matches(f.code, ign)]
    unique = sorted(set(findings), key=lambda f: (f.path, f.line, f.col, f.code, f.message))
    return AuditReport(tuple(unique), result.files_read, result.configs_checked,
                       result.skipped, getattr(registry, "directory", None), conf.path,
                       tuple(getattr(registry, "warnings", ())))


def audit(paths=None, *, root=None, registry=None, golden_dir=None, select=None, ignore=None,
          **options):
    """Audit files or directories: the findings of :func:`audit_report` (same arguments).

    Returns
    -------
    list of Finding
        Sorted by path, line, column and code.
    """
    return list(audit_report(paths, root=root, registry=registry, golden_dir=golden_dir,
                             select=select, ignore=ignore, **options).findings)
