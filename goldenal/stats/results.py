"""Result objects of the fits: frozen dataclasses, small and printable (bulky
internals are ``field(repr=False)``; plots delegate to :mod:`goldenal.plot`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from goldenal.core.tables import Tabular

# How each interval method is described to a reviewer (reports, JSON).
INTERVAL_METHODS = {
    "bootstrap": "studentized bootstrap over requests (resamples whole requests, takes the "
                 "ratio of totals and studentizes it by its linearised standard error; "
                 "bootstrap-t interval, widened on the side the residuals skew to)",
    "runs": "independent server runs as clusters (ratio of totals, linearised cluster "
            "standard error, Student t with runs - 1 degrees of freedom)",
    "batch-means": "batch means over logging windows, batches at least as long as the "
                   "longest request (ratio of totals, linearised standard error, Student t "
                   "with batches - 1 degrees of freedom)",
    "none": "no interval: fewer than 10 independent units (requests, runs or batches "
            "longer than a request), units that do not vary (e.g. every draft accepted), "
            "data contradicting the stated output cap, or printed means only",
}
# Every interval given is clipped to the support [1, K + 1] (docs/statistics.md).

# What every interval is an interval for.
ESTIMAND = ("AL of the prompt population the measured requests were drawn from: the ratio "
            "of expected tokens to expected verification steps per request; for the fixed "
            "benchmark prompt set itself the intervals are conservative")


def format_al(value):
    """Round an AL for a curve exactly as C ``printf("%.2f")`` does."""
    return "N/A" if value is None or not math.isfinite(value) else "%.2f" % value


class Check(NamedTuple):
    """The outcome of one check of a fit: ``status`` and, unless plain, why."""

    status: str
    reason: str | None = None

    def to_dict(self):
        return {"status": self.status, "reason": self.reason}


class ConfidenceInterval(NamedTuple):
    """A two-sided confidence interval (arrays for vector statistics)."""

    low: object
    high: object


def checks_dict(checks):
    """``{"cross_k": {"on": Check}}`` as plain JSON (nested mappings of checks)."""
    return {name: (c.to_dict() if isinstance(c, Check) else checks_dict(c))
            for name, c in checks.items()}


def level_label(level):
    return f"{100 * level:g}%"


def frame(rows, index):
    """A DataFrame of ``rows`` indexed by ``index`` (pandas imported only for tables)."""
    import pandas as pd

    return pd.DataFrame(rows).set_index(index)


def plotter(name, doc):
    """A ``plot(ax=None, **kwargs)`` method delegating to ``goldenal.plot.<name>``."""

    def plot(self, ax=None, **kwargs):
        from goldenal import plot as plotting  # lazily: fitting never needs matplotlib

        return getattr(plotting, name)(self, ax=ax, **kwargs)

    plot.__doc__ = doc
    return plot


@dataclass(frozen=True)
class PerPosition:
    """Per-position acceptance of one cell: survival S(i) and conditional a(i)."""

    positions: tuple
    counts: tuple
    n_steps: int
    survival: np.ndarray = field(repr=False, compare=False)
    conditional: np.ndarray = field(repr=False, compare=False)
    confidence_level: float = 0.95
    interval_method: str = "count"
    survival_low: np.ndarray = field(default=None, repr=False, compare=False)
    survival_high: np.ndarray = field(default=None, repr=False, compare=False)
    conditional_low: np.ndarray = field(default=None, repr=False, compare=False)
    conditional_high: np.ndarray = field(default=None, repr=False, compare=False)

    @property
    def probabilities(self):
        """Alias of ``survival`` (the scipy ``ecdf`` spelling)."""
        return self.survival

    def evaluate(self, k):
        """Survival S(k); S(0) = 1 and S(k) = 0 beyond the drafted positions."""
        full = np.concatenate([[1.0], self.survival, [0.0]])
        return full[np.clip(np.asarray(k), 0, len(self.survival) + 1)]

    def confidence_interval(self, kind="survival"):
        """Pointwise interval of ``kind`` = "survival" or "conditional"."""
        if kind not in ("survival", "conditional"):
            raise ValueError("`kind` must be 'survival' or 'conditional'")
        return ConfidenceInterval(getattr(self, f"{kind}_low"), getattr(self, f"{kind}_high"))

    def to_frame(self):
        """One row per position with counts, S(i), a(i) and their intervals."""
        lab = level_label(self.confidence_level)
        return frame({
            "position": list(self.positions), "accepted": list(self.counts),
            "survival": self.survival, f"survival lower {lab}": self.survival_low,
            f"survival upper {lab}": self.survival_high, "conditional": self.conditional,
            f"conditional lower {lab}": self.conditional_low,
            f"conditional upper {lab}": self.conditional_high,
        }, "position")

    def to_dict(self):
        """Plain JSON-ready dict (used by the distribution file)."""
        return {
            "positions": list(self.positions),
            "accepted_per_position": [int(c) for c in self.counts],
            "survival": _floats(self.survival),
            "survival_interval": [_floats(self.survival_low), _floats(self.survival_high)],
            "conditional": _floats(self.conditional),
            "conditional_interval": [_floats(self.conditional_low),
                                     _floats(self.conditional_high)],
            "interval_method": self.interval_method,
        }


def _num(v, nd=6):
    if v is None or not math.isfinite(float(v)):
        return None
    return round(float(v), nd)


def _floats(arr):
    return None if arr is None else [_num(v) for v in np.asarray(arr, float)]


def _by_k(mapping, nd=6):
    return {str(k): _num(v, nd) for k, v in sorted(mapping.items())}


@dataclass(frozen=True)
class CellFit(Tabular):
    """Estimate of one cell (model, head, variant, thinking mode, K)."""

    k: int
    thinking: str | None
    mean_acceptance_length: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    n_steps: int | None
    interval_method: str
    standard_error: float
    accepted: int | None = None
    draft_tokens: int | None = None
    n_clusters: int | None = None
    per_position: PerPosition | None = None
    sources: tuple = field(default=(), repr=False)
    failed: bool = False
    notes: tuple = field(default=(), repr=False)
    replicates: np.ndarray | None = field(default=None, repr=False, compare=False)
    interval_reason: str | None = field(default=None, repr=False)
    units: np.ndarray | None = field(default=None, repr=False, compare=False)
    unit_kind: str | None = field(default=None, repr=False)
    checks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def text(self):
        """The value as committed: ``printf "%.2f"`` rounding, "N/A" if failed."""
        return "N/A" if self.failed else format_al(self.mean_acceptance_length)

    @property
    def mean_only(self):
        """True when the cell rests on printed means, not counts."""
        return self.n_steps is None and not self.failed

    @property
    def interval_description(self):
        """How the interval was computed, in words."""
        return INTERVAL_METHODS.get(self.interval_method, self.interval_method)

    def __repr__(self):
        if self.failed:
            return f"<CellFit thinking={self.thinking} K={self.k}: failed (N/A)>"
        lo, hi = self.confidence_interval
        data = (f"{self.n_steps} steps" if self.n_steps is not None else "means only")
        if self.n_clusters:
            data += f" in {self.n_clusters} {self.unit_kind or 'units'}"
        interval = (f"[{lo:.3f}, {hi:.3f}] {level_label(self.confidence_level)} "
                    f"{self.interval_method}" if math.isfinite(lo) else "no interval")
        return (f"<CellFit thinking={self.thinking} K={self.k}: AL {self.text} "
                f"{interval}, {data}>")

    def to_dict(self):
        """Plain JSON-ready dict: estimate, interval, counts, per position."""
        lo, hi = self.confidence_interval
        return {
            "thinking": self.thinking, "k": self.k, "value": self.text,
            "estimate": _num(self.mean_acceptance_length, 9),
            "interval": {"low": _num(lo), "high": _num(hi), "level": self.confidence_level,
                         "method": self.interval_method, "reason": self.interval_reason},
            "standard_error": _num(self.standard_error), "n_steps": self.n_steps,
            "accepted": self.accepted, "draft_tokens": self.draft_tokens,
            "n_clusters": self.n_clusters, "units": self.unit_kind,
            "failed": self.failed, "mean_only": self.mean_only,
            "per_position": None if self.per_position is None else self.per_position.to_dict(),
            "sources": list(self.sources), "notes": list(self.notes),
            "checks": checks_dict(self.checks),
        }

    def to_frame(self):
        """One-row DataFrame; interval columns carry the level, e.g. ``AL lower 95%``."""
        lab = level_label(self.confidence_level)
        lo, hi = self.confidence_interval
        return frame([{
            "thinking": self.thinking, "K": self.k, "AL": self.mean_acceptance_length,
            "value": self.text, f"AL lower {lab}": lo, f"AL upper {lab}": hi,
            "se": self.standard_error, "method": self.interval_method,
            "steps": self.n_steps, "clusters": self.n_clusters,
        }], ["thinking", "K"])

    plot = plotter("plot_positions", "Per-position survival with intervals.")


@dataclass(frozen=True)
class ParametricFit:
    """A parametric conditional-acceptance profile and how well it fits."""

    form: str
    params: dict
    success: bool
    message: str
    statistic_name: str
    statistic: float
    df: int | None
    pvalue: float | None
    adequate: bool
    conditional: tuple = field(repr=False, default=())
    predicted_al: dict = field(repr=False, default_factory=dict)

    def to_dict(self):
        return {
            "form": self.form, "params": {k: _num(v) for k, v in self.params.items()},
            "success": self.success, "message": self.message,
            "statistic": {"name": self.statistic_name, "value": _num(self.statistic),
                          "df": self.df, "pvalue": _num(self.pvalue)},
            "adequate": self.adequate,
            "predicted_al": _by_k(self.predicted_al),
        }


class CellFlag(NamedTuple):
    """A cell whose measurement disagrees with the cross-K model."""

    thinking: str
    k: int
    measured: float
    predicted: float
    difference: float
    z: float | None
    message: str


@dataclass(frozen=True)
class ChainFit(Tabular):
    """Pooled chain-drafting model of one thinking mode (censored survival)."""

    thinking: str
    params: np.ndarray = field(compare=False)
    params_interval: ConfidenceInterval = field(repr=False, compare=False)
    predicted: dict = field(repr=False)
    predicted_interval: dict = field(repr=False)
    z_scores: dict = field(repr=False)
    flags: tuple
    success: bool
    message: str
    confidence_level: float = 0.95
    threshold: float = 1.96
    n_cells: int = 0
    n_steps: int = 0
    parametric: tuple = field(default=(), repr=False)
    kind: str = "chain"
    margin: float = 0.0
    detectable: dict = field(default_factory=dict, repr=False)
    power: float = 0.9
    check: Check = Check("done")

    @property
    def detectable_text(self):
        """The check's reach in words, e.g. "can detect +-0.120 AL at K=4, ..."; "" if none."""
        if not self.detectable:
            return ""
        parts = ", ".join(f"\u00b1{v:.3f} at K={k}" for k, v in sorted(self.detectable.items()))
        return (f"this run can detect shifts of {parts} (power {self.power:g}; differences "
                f"within \u00b1{self.margin:g} AL are never flagged)")

    def __repr__(self):
        return (f"<ChainFit thinking={self.thinking}: a(1..{len(self.params)}) pooled over "
                f"{self.n_cells} cells, {self.n_steps} steps; {len(self.flags)} flagged>")

    def to_frame(self):
        """One row per K: predicted AL, interval, z of the measured cell."""
        lab = level_label(self.confidence_level)
        return frame([{"K": k, "conditional": self.params[k - 1],
                       f"conditional lower {lab}": self.params_interval.low[k - 1],
                       f"conditional upper {lab}": self.params_interval.high[k - 1],
                       "predicted AL": self.predicted[k],
                       f"predicted lower {lab}": self.predicted_interval[k][0],
                       f"predicted upper {lab}": self.predicted_interval[k][1],
                       "z": self.z_scores.get(k), "detectable shift": self.detectable.get(k)}
                      for k in sorted(self.predicted)], "K")

    def to_dict(self):
        return {
            "kind": self.kind, "thinking": self.thinking, "success": self.success,
            "message": self.message, "conditional": _floats(self.params),
            "conditional_interval": [_floats(x) for x in self.params_interval],
            "predicted_al": _by_k(self.predicted),
            "predicted_interval": {str(k): [_num(v[0]), _num(v[1])]
                                   for k, v in sorted(self.predicted_interval.items())},
            "z": _by_k(self.z_scores, 3), "flag_threshold": _num(self.threshold, 3),
            "margin": _num(self.margin), "power": self.power,
            "detectable_shift": _by_k(self.detectable),
            "flags": [f._asdict() for f in self.flags],
            "parametric": [p.to_dict() for p in self.parametric],
            "check": self.check.to_dict(),
        }

    plot = plotter("plot_chain", "Measured cells against the pooled prediction.")


@dataclass(frozen=True)
class MonotoneFit(Tabular):
    """Monotone survival profile fitted to a curve of means (no counts)."""

    thinking: str
    ks: tuple
    measured: dict = field(repr=False)
    implied_survival: np.ndarray = field(repr=False, compare=False)
    fitted_survival: np.ndarray = field(repr=False, compare=False)
    fitted: dict = field(repr=False)
    residuals: dict = field(repr=False)
    flags: tuple
    tolerance: float
    success: bool = True
    message: str = ""
    parametric: tuple = field(default=(), repr=False)
    kind: str = "monotone"

    @property
    def params(self):
        """Fitted survival S(1..K) (the monotone profile)."""
        return self.fitted_survival

    @property
    def predicted(self):
        return self.fitted

    def __repr__(self):
        return (f"<MonotoneFit thinking={self.thinking}: isotonic survival over "
                f"{len(self.ks)} means (K={min(self.ks)}..{max(self.ks)}); "
                f"{len(self.flags)} flagged>")

    def to_frame(self):
        return frame([{"K": k, "measured": self.measured.get(k),
                       "implied survival": self.implied_survival[k - 1],
                       "fitted survival": self.fitted_survival[k - 1],
                       "fitted AL": self.fitted[k], "residual": self.residuals.get(k)}
                      for k in range(1, max(self.ks) + 1)], "K")

    def to_dict(self):
        return {
            "kind": self.kind, "thinking": self.thinking, "success": self.success,
            "message": self.message, "tolerance": self.tolerance,
            "implied_survival": _floats(self.implied_survival),
            "fitted_survival": _floats(self.fitted_survival),
            "fitted_al": _by_k(self.fitted), "residuals": _by_k(self.residuals),
            "flags": [f._asdict() for f in self.flags],
            "parametric": [p.to_dict() for p in self.parametric],
        }

    plot = plotter("plot_chain", "Measured means against the monotone profile.")


@dataclass(frozen=True)
class CurveFit(Tabular):
    """A fitted curve: every cell, plus the cross-K model per thinking mode."""

    identity: dict
    cells: dict = field(repr=False)
    models: dict = field(repr=False)
    chain: bool
    confidence_level: float = 0.95
    warnings: tuple = field(default=(), repr=False)
    checks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def curve_id(self):
        return self.identity.get("curve")

    @property
    def run_id(self):
        """The measurement run's own name (``run:`` of run.yaml), or None."""
        return self.identity.get("run")

    @property
    def name(self):
        """What labels, titles and reprs call this fit: its run id, else its curve id."""
        return self.run_id or self.curve_id or "fitted"

    @property
    def estimand(self):
        """What every interval is an interval for, in words."""
        return ESTIMAND

    @property
    def flags(self):
        """Every flagged cell of every thinking mode."""
        return tuple(f for m in self.models.values() if m is not None for f in m.flags)

    @property
    def params(self):
        return {t: (m.params if m is not None else None) for t, m in self.models.items()}

    @property
    def success(self):
        return all(m is None or m.success for m in self.models.values())

    @property
    def message(self):
        return "; ".join(f"{t}: {m.message}" for t, m in self.models.items()
                         if m is not None and m.message)

    def __repr__(self):
        steps = sum(c.n_steps or 0 for c in self.cells.values())
        failed = sum(c.failed for c in self.cells.values())
        kind = "chain (pooled across K)" if self.chain else "cells stand alone"
        run = f" from run {self.run_id}" if self.run_id and self.run_id != self.curve_id else ""
        return (f"<CurveFit {self.curve_id or '?'}{run}: {len(self.cells)} cells"
                f"{f' ({failed} failed)' if failed else ''}, {steps} steps, {kind}; "
                f"{len(self.flags)} flagged>")

    def values(self):
        """``{"on": {K: "2.83", ...}, "off": {...}}`` as committed."""
        out = {}
        for (thinking, k), cell in self.cells.items():
            out.setdefault(thinking, {})[k] = cell.text
        return out

    def to_frame(self):
        """One row per cell (the ``summary`` of every CellFit, stacked)."""
        import pandas as pd

        return pd.concat([c.summary for c in self.cells.values()])

    def to_dict(self):
        """The distribution file's content (plain JSON types)."""
        return {
            "schema": "goldenal.apply.distribution/1", "curve": self.curve_id,
            "identity": {k: v for k, v in self.identity.items() if k != "cells"},
            "confidence_level": self.confidence_level, "estimand": ESTIMAND,
            "pooled_across_k": self.chain,
            "interval_methods": {m: d for m, d in INTERVAL_METHODS.items()
                                 if any(c.interval_method == m for c in self.cells.values())},
            "cells": [c.to_dict() for c in self.cells.values()],
            "models": {t: (m.to_dict() if m is not None else None)
                       for t, m in sorted(self.models.items())},
            "checks": checks_dict(self.checks),
            "warnings": list(self.warnings),
        }

    plot = plotter("plot_al_curve", "AL vs K with intervals.")
