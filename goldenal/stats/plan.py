"""How many requests (or runs) give an interval of a stated half-width, from a pilot
(the rule and its check: docs/statistics.md, "Planning a measurement")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from goldenal.stats.cell import MIN_UNITS, is_int, short_and_full
from goldenal.stats.results import _num

# Beyond this many units a plan is reported as not reachable (a typo in the target).
_MAX_UNITS = 10_000_000
# How sure a plan is that MIN_UNITS of its requests fall short of K (see _short_of_k_floor).
SHORT_OF_K_ASSURANCE = 0.9


def _plan_iv(half_width, confidence_level, runs):
    if isinstance(half_width, bool) or not isinstance(half_width, (int, float)) \
            or not math.isfinite(half_width) or half_width <= 0:
        raise ValueError("`half_width` must be a positive number (AL)")
    if not 0 < confidence_level < 1:
        raise ValueError("`confidence_level` must be between 0 and 1")
    if runs is not None and (not is_int(runs) or runs < MIN_UNITS):
        raise ValueError(f"`runs` must be an integer >= {MIN_UNITS} (fewer independent runs "
                         "give no interval)")


@dataclass(frozen=True)
class CellPlan:
    """The plan of one cell: units needed for the target half-width, or why none."""

    thinking: str | None
    k: int
    unit_kind: str | None
    pilot_units: int
    pilot_half_width: float | None
    units_needed: int | None
    planned_half_width: float | None = None
    per_run: int | None = None
    reason: str | None = None
    note: str | None = None

    def to_dict(self):
        return {"thinking": self.thinking, "k": self.k, "units": self.unit_kind,
                "pilot_units": self.pilot_units, "pilot_half_width": _num(self.pilot_half_width),
                "units_needed": self.units_needed,
                "planned_half_width": _num(self.planned_half_width),
                "requests_per_run": self.per_run, "reason": self.reason, "note": self.note}


@dataclass(frozen=True)
class MeasurementPlan:
    """Units needed per cell for an interval of ``half_width`` at ``confidence_level``."""

    half_width: float
    confidence_level: float
    cells: tuple
    runs: int | None = None

    @property
    def planned(self):
        return tuple(c for c in self.cells if c.units_needed is not None)

    @property
    def needed(self):
        """Largest units needed over the planned cells (None if none could be planned)."""
        return max((c.units_needed for c in self.planned), default=None)

    @property
    def unit_kind(self):
        kinds = {c.unit_kind for c in self.planned}
        return kinds.pop() if len(kinds) == 1 else ("units" if kinds else None)

    def to_dict(self):
        return {"half_width": self.half_width, "confidence_level": self.confidence_level,
                "runs": self.runs, "needed": self.needed, "units": self.unit_kind,
                "per_run": (None if self.runs is None or self.needed is None
                            else math.ceil(self.needed / self.runs)),
                "cells": [c.to_dict() for c in self.cells]}

    def __repr__(self):
        return (f"<MeasurementPlan ±{self.half_width:g} AL at {100 * self.confidence_level:g}%: "
                f"{self.needed} {self.unit_kind} per cell over {len(self.planned)} of "
                f"{len(self.cells)} cells>")


def units_needed(spread, mean_steps, half_width, *, confidence_level=0.95, runs=None,
                 at_least=MIN_UNITS):
    """Smallest number of units, at least ``at_least``, whose interval half-width is at
    most ``half_width``."""
    from scipy.stats import t

    p = 0.5 + confidence_level / 2
    scale = spread / mean_steps
    least = max(MIN_UNITS, at_least)

    def width(m):
        df = (runs if runs is not None else m) - 1
        return float(t.ppf(p, df)) * scale / math.sqrt(m)

    m = least
    if width(m) <= half_width:
        return m, width(m)
    # the t quantile falls with m: start from the normal answer and step up
    m = max(least, math.ceil((float(t.ppf(p, 10 ** 9)) * scale / half_width) ** 2))
    while width(m) > half_width:
        m = max(m + 1, math.ceil(m * (width(m) / half_width) ** 2))
        if m > _MAX_UNITS:
            return None, math.nan
    while m > least and width(m - 1) <= half_width:
        m -= 1
    return m, width(m)


def _short_of_k_floor(units, k):
    """(requests, note): enough requests that ``MIN_UNITS`` fall short of K, or (0, None).

    Where some requests accept every draft and others fall short of K, the interval
    rests on the ones short of K (the zero-inflated interval of docs/statistics.md); with
    fewer than ``MIN_UNITS`` of them its width follows their count, not the spread this
    plan scales from the pilot.  The floor is the least count M with
    P(Binomial(M, pilot share short of K) >= MIN_UNITS) >= ``SHORT_OF_K_ASSURANCE``.
    """
    from scipy.stats import binom

    short, full = short_and_full(units, k)
    if short == 0 or full < 2:
        return 0, None
    share = short / units.shape[0]

    def enough(m):
        return binom.sf(MIN_UNITS - 1, m, share) >= SHORT_OF_K_ASSURANCE

    lo, hi = MIN_UNITS - 1, max(MIN_UNITS, math.ceil(MIN_UNITS / share))
    while not enough(hi):
        lo, hi = hi, 2 * hi
        if hi > _MAX_UNITS:
            return _MAX_UNITS + 1, None
    while hi - lo > 1:  # enough(hi) and not enough(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    note = (f"at least {hi} requests, so that {MIN_UNITS} or more fall short of K with "
            f"{100 * SHORT_OF_K_ASSURANCE:g}% probability ({short} of the pilot's "
            f"{units.shape[0]} did, {full} accepted every draft); with fewer, the interval "
            "rests on those few (docs/statistics.md)")
    return hi, note


def plan_cell(cell, half_width, *, confidence_level=0.95, runs=None):
    """The :class:`CellPlan` of one fitted cell (its units, see ``CellFit.units``)."""
    lo, hi = cell.confidence_interval
    now = (hi - lo) / 2 if math.isfinite(lo) else None
    units = cell.units
    base = dict(thinking=cell.thinking, k=cell.k, unit_kind=cell.unit_kind,
                pilot_units=0 if units is None else int(units.shape[0]), pilot_half_width=now)

    def unplanned(reason):
        return CellPlan(**base, units_needed=None, reason=reason)

    if cell.failed or units is None:
        return unplanned("the cell failed" if cell.failed else (
            "no independent units in the pilot (log windows or aggregate counts show no "
            "single request); measure a pilot with per-request records (goldenal measure), "
            "or 10 or more independent runs"))
    if units.shape[0] < 2:
        return unplanned("one unit: no spread to plan from; measure 20 or more")
    if runs is not None and cell.unit_kind != "requests":
        return unplanned(f"--runs splits requests, and the pilot's units are {cell.unit_kind}")
    n, a = units[:, 0], units[:, 1]
    m = units.shape[0]
    r = a.sum() / n.sum()
    spread = math.sqrt(float(((a - r * n) ** 2).sum()) / (m - 1))
    if spread <= 1e-12 * float(n.sum()):
        return unplanned("the pilot's units do not vary (e.g. every draft accepted): no "
                         "spread to plan from; measure requests that do")
    floor, note = 0, None
    if cell.unit_kind == "requests" and runs is None:
        floor, note = _short_of_k_floor(units, cell.k)
    needed, width = units_needed(spread, float(n.mean()), half_width,
                                 confidence_level=confidence_level, runs=runs, at_least=floor)
    if needed is None or needed > _MAX_UNITS:
        return unplanned(f"more than {_MAX_UNITS} {cell.unit_kind}: the target is out of reach")
    per_run = None if runs is None else math.ceil(needed / runs)
    return CellPlan(**base, units_needed=needed, planned_half_width=width, per_run=per_run,
                    note=note if needed == floor else None)


def plan_measurement(pilot, *, half_width, confidence_level=0.95, runs=None, rng=0):
    """Units per cell for an interval of ``half_width``, estimated from a pilot.

    Parameters
    ----------
    pilot : CurveFit or anything :func:`goldenal.stats.fit` accepts
        The pilot run (fitted with few resamples unless already a fit).
    half_width : float
        Target half-width of every cell's interval, in AL.
    confidence_level : float, default 0.95
    runs : int, optional
        Split each cell's requests into this many (>= 10) independent runs.
    rng : int or numpy.random.Generator
        Seed of the pilot's fit.

    Returns
    -------
    MeasurementPlan

    Examples
    --------
    >>> from goldenal.testing.simulate import simulate_run
    >>> pilot = simulate_run({"on": [0.8, 0.7]}, [1, 2], rng=1, n_requests=30)
    >>> plan = plan_measurement({key: c.observations() for key, c in pilot.cells.items()},
    ...                         half_width=0.05)
    >>> plan.unit_kind
    'requests'
    """
    import warnings

    from goldenal.core.errors import LowSampleWarning
    from goldenal.stats.results import CurveFit

    _plan_iv(half_width, confidence_level, runs)
    if not isinstance(pilot, CurveFit):
        from goldenal.stats.curve import fit

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LowSampleWarning)
            pilot = fit(pilot, confidence_level=confidence_level, n_resamples=200, rng=rng,
                        chain=False)
    cells = tuple(plan_cell(c, float(half_width), confidence_level=confidence_level, runs=runs)
                  for _, c in sorted(pilot.cells.items(),
                                     key=lambda kv: (str(kv[0][0]), kv[0][1])))
    return MeasurementPlan(half_width=float(half_width), confidence_level=confidence_level,
                           cells=cells, runs=runs)

