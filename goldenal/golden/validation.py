"""Check a golden directory: the values, the manifest, the index, the provenance."""

import contextlib
import os

from goldenal.core.files import pending_journal, read_regular
from goldenal.golden.curvefile import Problem, load_directory, read_manifest, render_index
from goldenal.golden.curves import curve_identity
from goldenal.golden.policy import show_variant
from goldenal.core.errors import ParseError, RegistryError
from goldenal.golden.registry import (INDEX_NAME, MANIFEST_NAME, NOT_AVAILABLE, default_dir,
                               finish_interrupted_write)


class ValidationReport:
    """Problems found in one golden directory; ``ok`` when none is an error."""

    __slots__ = ("directory", "problems", "curves")

    def __init__(self, directory, problems, curves):
        self.directory, self.problems, self.curves = directory, tuple(problems), curves

    errors = property(lambda self: [p for p in self.problems if p.severity == "error"])
    warnings = property(lambda self: [p for p in self.problems if p.severity == "warning"])
    unreadable = property(lambda self: [p for p in self.problems if p.severity == "unreadable"])
    ok = property(lambda self: not self.errors and not self.unreadable)

    def __repr__(self):
        return (f"<ValidationReport {self.directory}: {self.curves} curves, "
                f"{len(self.errors)} errors, {len(self.warnings)} warnings>")

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([(p.severity, p.path, p.line, p.message) for p in self.problems],
                            columns=["severity", "path", "line", "message"])


def _index_is_current(directory, registry, overlay):
    try:
        if INDEX_NAME in overlay:
            text = overlay[INDEX_NAME]
        else:
            text = read_regular(os.path.join(directory, INDEX_NAME)).decode("utf-8")
        return text == render_index(directory, registry.curves, overlay=overlay)
    except (OSError, UnicodeDecodeError):
        return False


def validate(path=None, *, overlay=None):
    """Validate a golden directory: the checks of ``goldenal validate --help``.

    Parameters
    ----------
    path : str, optional
        Default :func:`goldenal.golden.registry.default_dir`.
    overlay : dict, optional
        File name -> the text it is about to have: a writer validates before writing.

    Returns
    -------
    ValidationReport

    Raises
    ------
    RegistryError
        The directory itself cannot be read.
    """
    directory = os.fspath(path) if path is not None else default_dir()
    if not os.path.isdir(directory):
        raise RegistryError("not a directory", path=directory)
    overlay = overlay or {}
    if not overlay and pending_journal(directory):
        finish_interrupted_write(directory)
    problems = []
    registry = load_directory(directory, collect=problems, overlay=overlay)
    has_manifest = read_manifest(directory, overlay=overlay) is not None
    manifest = os.path.join(directory, MANIFEST_NAME)
    owner, identities = {}, {}
    for curve in registry:
        where = os.path.join(directory, curve.file or curve.id)
        ident = curve_identity(curve.model, curve.method, curve.draft, curve.variant)
        # without a manifest draft and variant are unknown, so identities cannot be told apart
        if has_manifest and ident in identities:
            problems.append(Problem("error", manifest, None,
                                    f"curves {identities[ident]} and {curve.id} have the same "
                                    f"identity (model {curve.model}, method {curve.method}, "
                                    f"draft {', '.join(curve.draft) or 'none'}, variant "
                                    f"{show_variant(curve.variant)}); lookups cannot tell "
                                    "them apart: remove one or give them different variants"))
        identities.setdefault(ident, curve.id)
        if not curve.source:
            problems.append(Problem("error", where, 1, "provenance has no source run URL"))
        if curve.provenance.get("not_golden"):
            problems.append(Problem("warning", where, 1,
                                    f"curve {curve.id} was fitted from a run marked not_golden "
                                    f"({curve.provenance['not_golden']}): keep it out of a "
                                    "committed golden directory"))
        if has_manifest and not curve.method:
            problems.append(Problem("error", manifest, None, f"curve {curve.id!r} has no method"))
        for name in curve.names:
            key = name.lower()
            if key in owner and owner[key][1] != curve.model:
                problems.append(Problem("error", manifest, None,
                                        f"name {name!r} is given to models {owner[key][1]} "
                                        f"({owner[key][0]}) and {curve.model} ({curve.id})"))
            owner.setdefault(key, (curve.id, curve.model))
        for mode, cells in curve.cells.items():
            previous = None
            for k in sorted(cells):
                text, line = cells[k], curve.lines.get(mode, {}).get(k)
                if text == NOT_AVAILABLE:
                    previous = None
                    continue
                if len(text.partition(".")[2]) != 2:
                    problems.append(Problem("warning", where, line,
                                            f"thinking_{mode} K={k}: {text} is not written "
                                            "with two decimals"))
                if previous is not None and float(text) < float(previous[1]):
                    problems.append(Problem("warning", where, line,
                                            f"thinking_{mode}: AL decreases from K={previous[0]} "
                                            f"({previous[1]}) to K={k} ({text})"))
                previous = (k, text)
    if not len(registry) and not problems:
        problems.append(Problem("error", directory, None, "no curve files (expected *.yaml)"))
    defects = any(p.severity != "warning" for p in problems)
    index_path = os.path.join(directory, INDEX_NAME)
    if INDEX_NAME in overlay or os.path.exists(index_path):
        # with defects it cannot be rebuilt; else it must be exactly what `index` would write
        if not defects and not _index_is_current(directory, registry, overlay):
            problems.append(Problem("error", index_path, None, "out of date with the curve "
                                    "files or manifest; rebuild it with `goldenal index`"))
    elif has_manifest:
        problems.append(Problem("warning", index_path, None, "missing: lookups parse YAML on "
                                "every call; build it with `goldenal index`"))
    return ValidationReport(directory, problems, len(registry))


def refuse_invalid(directory, overlay):
    """Raise for the first error :func:`validate` finds after a write and not before it."""
    before = set()
    if os.path.isdir(directory) and os.listdir(directory):
        with contextlib.suppress(RegistryError, ParseError):
            old = validate(directory)
            before = {str(p) for p in old.errors + old.unreadable}
    report = validate(directory, overlay=overlay)
    for problem in report.unreadable + report.errors:
        if str(problem) not in before:
            raise RegistryError(f"{problem.message} (the same check as `goldenal validate`; "
                                "nothing written)", path=problem.path, line=problem.line)
