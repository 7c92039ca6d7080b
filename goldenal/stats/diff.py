"""Compare two curves cell by cell: delta, and whether it is inside the uncertainty (a
committed curve has uncertainty only from the ``<curve-id>.distribution.json`` beside it)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import NamedTuple

from goldenal.core.tables import Tabular
from goldenal.core.errors import ParseError, UnknownCurve
from goldenal.stats.results import CurveFit, frame, level_label, plotter

# Variance of the error of a two-decimal rounding (uniform on +-0.005): 0.01^2 / 12.
ROUNDING_VARIANCE = 0.01 ** 2 / 12


def combined_standard_error(se_a, se_b, *, rounded_a=False, rounded_b=False):
    """Standard error of B - A, or None when neither side has one."""
    if se_a is None and se_b is None:
        return None
    var = 0.0
    for se, rounded in ((se_a, rounded_a), (se_b, rounded_b)):
        if se is not None:
            var += se * se
        elif rounded:
            var += ROUNDING_VARIANCE
    return math.sqrt(var)


class Side(NamedTuple):
    """One side of a comparison: values, and standard errors where known."""

    label: str
    kind: str  # "committed", "fitted"
    curve_id: str | None
    texts: dict  # (thinking, k) -> committed spelling ("N/A" for failed)
    estimates: dict  # (thinking, k) -> float
    errors: dict  # (thinking, k) -> standard error (absent when unknown)
    methods: dict  # (thinking, k) -> interval method


class DiffRow(NamedTuple):
    """One cell of a comparison (delta = B - A)."""

    thinking: str
    k: int
    a: str | None
    b: str | None
    delta: float | None
    se: float | None
    z: float | None
    status: str  # "inside", "outside", "no interval", "only in A", "only in B", "failed"
    a_method: str | None
    b_method: str | None


def _side_from_fit(curvefit, label):
    texts, est, err, methods = {}, {}, {}, {}
    for key, cell in curvefit.cells.items():
        texts[key] = cell.text
        if not cell.failed:
            est[key] = cell.mean_acceptance_length
            methods[key] = cell.interval_method
            if math.isfinite(cell.standard_error):
                err[key] = cell.standard_error
    return Side(label, "fitted", curvefit.curve_id, texts, est, err, methods)


def _distribution_beside(curve_path):
    path = os.path.splitext(curve_path)[0] + ".distribution.json"
    if not os.path.exists(path):
        return None
    from goldenal.core.files import read_regular

    try:
        return json.loads(read_regular(path))
    except ValueError as exc:
        raise ParseError(f"distribution file is not JSON: {exc}", path=path) from None


def _side_from_cells(cells, label, curve_id, distribution=None):
    texts, est, err, methods = {}, {}, {}, {}
    for thinking, mode in cells.items():
        for k, value in mode.items():
            texts[(thinking, k)] = value
            if value != "N/A":
                est[(thinking, k)] = float(value)
    for cell in (distribution or {}).get("cells", []):
        key = (cell.get("thinking"), cell.get("k"))
        if key not in texts or cell.get("value") != texts[key]:
            continue  # the distribution no longer describes the committed value
        se = cell.get("standard_error")
        if se is not None:
            # the committed value stays the estimate (it is what binds); the
            # distribution only supplies its uncertainty
            err[key] = float(se)
            methods[key] = (cell.get("interval") or {}).get("method")
    return Side(label, "committed", curve_id, texts, est, err, methods)


def resolve_curve(spec, *, golden_dir=None):
    """A committed curve named by a curve file or a curve id, with its distribution."""
    spec = os.fspath(spec)
    if os.path.isfile(spec):
        from goldenal.golden.curvefile import curve_from_file, read_curve_file

        parsed = read_curve_file(spec).check()
        curve = curve_from_file(parsed, curve_id=os.path.splitext(os.path.basename(spec))[0])
        return curve, spec, _distribution_beside(spec)
    from goldenal.golden.registry import load_registry

    registry = load_registry(golden_dir)
    curve = registry.curves.get(spec)
    if curve is None:
        known = ", ".join(sorted(registry.curves)) or "none"
        raise UnknownCurve(f"{spec!r} is neither a file, a run directory nor a curve id of "
                           f"{registry.directory} (curves: {known})")
    path = os.path.join(registry.directory, curve.file) if registry.directory and curve.file \
        else None
    return curve, path, _distribution_beside(path) if path else None


def resolve_side(spec, *, golden_dir=None, fit_kwargs=None, identity=None,
                 allow_simulated=False):
    """Turn a CLI/library argument into a :class:`Side`."""
    if isinstance(spec, CurveFit):
        return _side_from_fit(spec, spec.name)
    if hasattr(spec, "cells") and hasattr(spec, "id"):  # registry Curve
        return _side_from_cells(spec.cells, spec.id, spec.id)
    spec = os.fspath(spec)
    if os.path.isdir(spec):
        from goldenal.stats import fit
        from goldenal.stats.output import load_run_for_fit

        run = load_run_for_fit(spec, identity, allow_simulated=allow_simulated)
        return _side_from_fit(fit(run, **(fit_kwargs or {})), spec)
    curve, _, dist = resolve_curve(spec, golden_dir=golden_dir)
    return _side_from_cells(curve.cells, spec, curve.id, dist)


@dataclass(frozen=True)
class CurveDiff(Tabular):
    """Cell-by-cell comparison of two curves (delta = B - A)."""

    a: Side = field(repr=False)
    b: Side = field(repr=False)
    rows: tuple = field(repr=False)
    confidence_level: float = 0.95

    @property
    def outside(self):
        """Rows whose delta exceeds the combined uncertainty."""
        return tuple(r for r in self.rows if r.status == "outside")

    @property
    def judged(self):
        """How many cells have an interval to judge their delta by."""
        return sum(r.status in ("inside", "outside") for r in self.rows)

    @property
    def no_interval(self):
        return sum(r.status == "no interval" for r in self.rows)

    @property
    def quantile(self):
        """The normal quantile of the band a delta must exceed."""
        return _quantile(self.confidence_level)

    def __repr__(self):
        def name(side):
            return side.label + (" (fitted)" if side.kind == "fitted" else "")

        return (f"<CurveDiff {name(self.a)} vs {name(self.b)}: {len(self.rows)} cells, "
                f"{len(self.outside)} outside the uncertainty>")

    def to_frame(self):
        return frame([r._asdict() for r in self.rows], ["thinking", "k"])

    def to_dict(self):
        return {**{name: {"label": side.label, "kind": side.kind, "curve": side.curve_id}
                   for name, side in (("a", self.a), ("b", self.b))},
                "confidence_level": self.confidence_level,
                "cells": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                           for k, v in r._asdict().items()} for r in self.rows],
                "outside": len(self.outside)}

    plot = plotter("plot_diff", "B - A per K with its uncertainty.")

    def format_text(self):
        """The plain-text table ``goldenal diff`` prints."""
        lines = [f"A: {self.a.label} ({self.a.kind})", f"B: {self.b.label} ({self.b.kind})",
                 f"{'thinking':<8} {'K':>2}  {'A':>5}  {'B':>5}  {'B-A':>7}  "
                 f"{'±' + level_label(self.confidence_level):>7}  {'z':>6}  verdict"]
        q = self.quantile
        for r in self.rows:
            delta = f"{round(r.delta, 3) + 0.0:+.3f}" if r.delta is not None else "-"
            z = f"{round(r.z, 1) + 0.0:+.1f}" if r.z is not None else "-"
            band = f"{q * r.se:.3f}" if r.se else "-"
            lines.append(f"{r.thinking:<8} {r.k:>2}  {r.a or '-':>5}  {r.b or '-':>5}  "
                         f"{delta:>7}  {band:>7}  {z:>6}  {r.status}")
        tail = f"{len(self.outside)} of {self.judged} cells with an interval differ beyond it"
        if self.no_interval:
            tail += f"; {self.no_interval} cells have no interval on either side"
        lines.append(tail + ".")
        return "\n".join(lines) + "\n"


def _quantile(confidence_level):
    from scipy.stats import norm

    return norm.ppf(0.5 + confidence_level / 2)


def diff_curves(a, b, *, confidence_level=0.95, golden_dir=None, fit_kwargs=None,
                identity=None, allow_simulated=False):
    """Compare two curves cell by cell.

    Parameters
    ----------
    a, b : str, os.PathLike, CurveFit or Curve
        Curve ids (of ``golden_dir``), curve files, run directories or fits.
    confidence_level : float
        Level of the band a delta must exceed to count as "outside".
    golden_dir : str, optional
        Golden directory for curve ids (default: packaged curves).
    fit_kwargs : dict, optional
        Passed to :func:`goldenal.stats.fit` for run directories.
    identity : dict, optional
        Identity for InferenceX results directories (model, draft, ...).
    allow_simulated : bool
        Accept simulated run directories (refused by default, as by ``fit``).

    Returns
    -------
    CurveDiff
    """
    if not 0 < confidence_level < 1:
        raise ValueError("`confidence_level` must be between 0 and 1")
    fit_kwargs = dict(fit_kwargs or {})
    fit_kwargs.setdefault("confidence_level", confidence_level)
    sa, sb = (resolve_side(side, golden_dir=golden_dir, fit_kwargs=fit_kwargs,
                           identity=identity, allow_simulated=allow_simulated) for side in (a, b))
    q = _quantile(confidence_level)
    rows = []
    order = {"on": 0, "off": 1}
    for key in sorted(set(sa.texts) | set(sb.texts), key=lambda t: (order.get(t[0], 2), t[1])):
        ta, tb = sa.texts.get(key), sb.texts.get(key)
        delta = se = z = None
        if ta is None or tb is None:
            status = "only in B" if ta is None else "only in A"
        elif key not in sa.estimates or key not in sb.estimates:
            status = "failed"
        else:
            delta = sb.estimates[key] - sa.estimates[key]
            se = combined_standard_error(sa.errors.get(key), sb.errors.get(key),
                                         rounded_a=sa.kind == "committed",
                                         rounded_b=sb.kind == "committed")
            status = "no interval"
        if se is not None:
            z = delta / se if se > 0 else (0.0 if delta == 0 else math.copysign(math.inf, delta))
            status = "inside" if abs(z) <= q else "outside"
        rows.append(DiffRow(*key, ta, tb, delta, se, z, status, sa.methods.get(key),
                            sb.methods.get(key)))
    return CurveDiff(a=sa, b=sb, rows=tuple(rows), confidence_level=confidence_level)
