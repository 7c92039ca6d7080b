"""Pictures of golden curves: AL against K, per-position acceptance, diffs.

Plot functions take a curve, fit or diff and an optional ``ax`` and return a
:class:`PlotArtists`; none calls ``plt.show()`` or picks a backend, and matplotlib and
numpy are imported inside them.  Per-position arithmetic: :mod:`goldenal.core.acceptance`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from types import SimpleNamespace

from goldenal.core.acceptance import (  # noqa: F401  (re-exported for plot users)
    exact_fraction, positive_k, accepted_drafts_distribution, accepted_drafts_variance, conditional_rates,
    implied_survival, is_survival, min_variance_schedule)
from goldenal.core.errors import UnknownCurve

THINKING_MODES = ("on", "off")
# Block-parallel drafting re-plans the whole block when K changes, so the K
# cells stand alone and AL(i) - AL(i-1) is no survival (docs/policy.md §4).
BLOCK_PARALLEL_METHODS = ("dspark", "dflash")
# One line style per thinking mode; one colour per curve (see curve_colors).
THINKING_STYLE = {"on": "-", "off": "--"}
SCHEDULE_COLOR = "0.55"
CEILING_COLOR = "0.35"
AL_XLABEL = "K = num_speculative_tokens (draft tokens per step)"
AL_YLABEL = "acceptance length AL (tokens per verification step)"
POSITION_XLABEL = "draft position i (1 = first drafted token)"
POSITION_YLABEL = "probability (per verification step)"
DIFF_YLABEL = "AL difference (tokens per verification step)"


@dataclass(frozen=True)
class PositionProfile:
    """Per-position acceptance of one cell, beside vLLM's schedule for its AL."""

    curve: str
    label: str
    thinking: str
    k: int
    al: object
    survival: tuple
    conditional: tuple
    schedule: tuple
    survival_low: tuple | None = None
    survival_high: tuple | None = None
    source: str = "implied"
    confidence_level: float | None = field(default=None, repr=False)
    note: str | None = field(default=None, repr=False)

    @property
    def variance(self):
        """Var of accepted drafts per step under this profile (None if invalid)."""
        try:
            return accepted_drafts_variance(self.survival)
        except ValueError:
            return None

    @property
    def schedule_variance(self):
        """Var of accepted drafts per step under vLLM's schedule."""
        return accepted_drafts_variance(self.schedule)

    def to_frame(self):
        """One row per position: survival, conditional, bounds, schedule."""
        import pandas as pd

        sched_cond = conditional_rates(self.schedule)
        return pd.DataFrame([{
            "position": i + 1,
            "survival": float(self.survival[i]),
            "survival_low": _nan_at(self.survival_low, i),
            "survival_high": _nan_at(self.survival_high, i),
            "conditional": _nan(self.conditional[i]),
            "schedule_survival": float(self.schedule[i]),
            "schedule_conditional": _nan(sched_cond[i]),
        } for i in range(self.k)])


def _nan(value):
    """``value`` as a float; NaN for None or a non-finite value."""
    if value is None:
        return math.nan
    value = float(value)
    return value if math.isfinite(value) else math.nan


def _nan_at(seq, i):
    return math.nan if seq is None else _nan(seq[i])


# --------------------------------------------------------------------------
# turning curves and fits into plottable series


@dataclass(frozen=True)
class ALSeries:
    """One line of an AL-vs-K plot: one curve (or fit), one thinking mode."""

    curve: str
    label: str
    thinking: str
    k: tuple
    al: tuple
    committed: tuple
    low: tuple | None = None
    high: tuple | None = None
    confidence_level: float | None = None
    flagged: tuple = ()


def head_label(curve):
    """Short name of a curve's draft head, with its sampling variant."""
    draft = tuple(getattr(curve, "draft", ()) or ())
    method = getattr(curve, "method", None)
    model = getattr(curve, "model", None)
    if draft:
        head = " + ".join(d.rstrip("/").rsplit("/", 1)[-1] for d in draft)
    else:  # the head lives in the checkpoint (MTP) or is not named: say whose
        kind = "native MTP" if (method or "mtp").lower() == "mtp" else method.upper()
        head = f"{model} {kind}" if model else kind
    variant = getattr(curve, "variant", None) or {}
    if variant:
        head += " [" + ", ".join(f"{k}={v}" for k, v in sorted(variant.items())) + "]"
    return head


def _legend_label(series):
    """``head, thinking on``; a variant goes on a second line to keep legends narrow."""
    head, sep, variant = series.label.partition(" [")
    return f"{head}, thinking {series.thinking}" + ("\n[" + variant if sep else "")


def curve_name(obj):
    """The name a curve or fit goes by in legends and colours: curve id or run id."""
    if _is_curve_fit(obj):
        return _fit_name(obj)
    for name in ("id", "curve", "curve_id"):
        value = getattr(obj, name, None)
        if isinstance(value, str):
            return value
    return type(obj).__name__


def _is_registry_curve(obj):
    cells = getattr(obj, "cells", None)
    if not isinstance(cells, dict) or not isinstance(getattr(obj, "id", None), str):
        return False
    return all(isinstance(v, str) for mode in cells.values() if isinstance(mode, dict)
               for v in mode.values())


def _modes(thinking):
    if thinking is None:
        return THINKING_MODES
    mode = {"on": "on", "off": "off", "thinking_on": "on", "thinking_off": "off"}.get(
        str(thinking).lower())
    if mode is None:
        raise ValueError(f"`thinking` must be 'on' or 'off', got {thinking!r}")
    return (mode,)


def al_series(obj, *, thinking=None):
    """The AL-vs-K lines an object contributes, one per thinking mode."""
    modes = _modes(thinking)
    if isinstance(obj, ALSeries):
        return [obj] if obj.thinking in modes else []
    if _is_registry_curve(obj):
        out = []
        label = head_label(obj)
        for mode in modes:
            cells = obj.cells.get(mode) or {}
            pairs = [(int(k), float(v)) for k, v in sorted(cells.items(), key=lambda kv: int(kv[0]))
                     if str(v).strip().upper() != "N/A"]
            if pairs:
                ks, als = zip(*pairs)
                out.append(ALSeries(curve=obj.id, label=label, thinking=mode, k=ks, al=als,
                                    committed=(True,) * len(ks)))
        return out
    if _is_curve_fit(obj):
        return _fit_series(obj, modes)
    method = getattr(obj, "al_series", None)
    if callable(method):
        return [s for s in method(thinking=None) if s.thinking in modes]
    raise TypeError(f"cannot plot {type(obj).__name__} as an AL curve: expected a registry "
                    "Curve, a fit result or an ALSeries")


def _is_curve_fit(obj):
    return (isinstance(getattr(obj, "identity", None), dict)
            and isinstance(getattr(obj, "cells", None), dict)
            and isinstance(getattr(obj, "models", None), dict))


def _fit_head(fit):
    """:func:`head_label` of a fit, read from its identity."""
    return head_label(SimpleNamespace(**{attr: fit.identity.get(attr)
                                         for attr in ("model", "draft", "method", "variant")}))


def _fit_name(fit):
    ident = fit.identity
    return str(ident.get("run") or ident.get("curve") or "fit")


def _fit_label(fit, what="fit"):
    """Head label of a fit with ``(fit)`` after the head, before any variant."""
    if fit.identity.get("simulated"):
        what += ", simulated"
    head, sep, variant = _fit_head(fit).partition(" [")
    return f"{head} ({what})" + (sep + variant if sep else "")


def _fit_series(fit, modes):
    """Measured cells (intervals as bands) and the cross-K model's predictions."""
    name = _fit_name(fit)
    label = _fit_label(fit)
    level = getattr(fit, "confidence_level", None)
    out = []
    for mode in modes:
        cells = sorted((k, c) for (t, k), c in fit.cells.items()
                       if t == mode and not getattr(c, "failed", False))
        model = fit.models.get(mode)
        flagged = tuple(sorted(f.k for f in getattr(model, "flags", ()) or ()))
        if cells:
            ci = [c.confidence_interval for _, c in cells]
            out.append(ALSeries(
                curve=name, label=label, thinking=mode, k=tuple(k for k, _ in cells),
                al=tuple(float(c.mean_acceptance_length) for _, c in cells),
                committed=(True,) * len(cells), low=tuple(_nan(lo) for lo, _ in ci),
                high=tuple(_nan(hi) for _, hi in ci), confidence_level=level, flagged=flagged))
        if getattr(model, "predicted", None):
            out.append(_model_series(model, name, _fit_label(fit, "model"), mode, level))
    return out


def _model_series(model, name, label, mode, level=None):
    """A cross-K model's predictions as a line, its prediction intervals as the band."""
    ks = tuple(sorted(model.predicted))
    intervals = getattr(model, "predicted_interval", None) or {}
    low = high = None
    if intervals:
        low, high = (tuple(_nan(intervals.get(k, (None, None))[j]) for k in ks) for j in (0, 1))
    return ALSeries(curve=name, label=label, thinking=mode, k=ks,
                    al=tuple(float(model.predicted[k]) for k in ks), committed=(False,) * len(ks),
                    low=low, high=high, confidence_level=level)


def curve_colors(curve_ids):
    """A colour per curve id, in order of first appearance."""
    import matplotlib

    palette = [c for i, c in enumerate(matplotlib.colormaps["tab10"].colors) if i != 7]
    out = {}
    for cid in curve_ids:
        out.setdefault(cid, palette[len(out) % len(palette)])
    return out


def stable_colors(known_ids, shown_ids):
    """Colours for the ids of one figure, stable across figures."""
    known = curve_colors(list(known_ids))
    out = {cid: known[cid] for cid in shown_ids if cid in known}
    spare = [c for c in curve_colors(range(9)).values() if c not in out.values()]
    spare = spare or list(curve_colors(range(9)).values())
    for cid in shown_ids:
        if cid not in out:
            out[cid] = spare[len([x for x in out if x not in known]) % len(spare)]
    return out


# --------------------------------------------------------------------------
# artists


@dataclass(frozen=True)
class PlotArtists:
    """What a plot function drew: the axes and its artists by role."""

    ax: object
    artists: dict

    def __repr__(self):
        roles = ", ".join(f"{len(v)} {k}" for k, v in self.artists.items() if v)
        return f"<PlotArtists on {self.ax.get_title().splitlines()[0]!r}: {roles}>"

    def __getitem__(self, role):
        return self.artists[role]

    def __iter__(self):
        for group in self.artists.values():
            yield from group

    @property
    def figure(self):
        return self.ax.figure


def _axes(ax):
    """``ax`` or a fresh one on a new pyplot figure (inline in notebooks)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(7.0, 4.5)).add_subplot()


def _as_list(obj):
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _with_colors(colors, ids):
    """``colors`` completed with a palette colour for each id it lacks."""
    colors = dict(colors or {})
    colors.update(curve_colors([cid for cid in ids if cid not in colors]))
    return colors


# a crimson ring marks a value that disagrees with what it is checked against
_RING = {"linestyle": "none", "marker": "o", "markerfacecolor": "none",
         "markeredgecolor": "crimson"}


def _key(**style):
    """A legend handle drawn as ``style``, for artists drawn without a label."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **style)


def _legend(ax, keys, **kwargs):
    """The legend of the labelled artists, then the ``(handle, text)`` of ``keys``."""
    handles, labels = ax.get_legend_handles_labels()
    handles += [handle for handle, _ in keys]
    labels += [text for _, text in keys]
    ax.legend(handles, labels, fontsize="small", frameon=False, **kwargs)


def _errorbar(ax, x, y, low, high, **style):
    import numpy as np

    return ax.errorbar(x, y, yerr=np.vstack([y - low, high - y]), fmt="none", capsize=3, **style)


# --------------------------------------------------------------------------
# AL against K


def plot_al_curve(curves_or_fits, *, thinking=None, ax=None, colors=None):
    """Plot AL against K, one line per curve and thinking mode.

    Committed values get filled markers, fitted predictions open ones;
    intervals, when known, are shaded bands; the dotted line ``AL = K + 1`` is
    the ceiling (every draft accepted).  ``UnknownCurve`` when no curve has a
    value (in the thinking mode asked for).

    Example
    -------
    >>> from goldenal import load_registry
    >>> reg = load_registry()
    >>> art = plot_al_curve([reg["minimaxm3_eagle3"], reg["minimaxm3_eagle3_gqa"]])
    >>> len(art["lines"])
    4
    """
    objs = _as_list(curves_or_fits)
    series = [s for obj in objs for s in al_series(obj, thinking=thinking)]
    if not series:
        names = ", ".join(curve_name(o) for o in objs)
        raise UnknownCurve(f"nothing to plot: {names} has no committed or fitted AL"
                           + (f" for thinking {thinking}" if thinking else ""))
    import numpy as np
    from matplotlib.patches import Patch

    ax = _axes(ax)
    colors = _with_colors(colors, [s.curve for s in series])
    art = {role: [] for role in ("lines", "committed", "predicted", "bands", "flags")}
    band_keys = []  # one legend entry per band, drawn as the band is
    for s in series:
        color = colors[s.curve]
        tag = f"{s.curve}:{s.thinking}"
        ks = np.asarray(s.k, dtype=float)
        al = np.asarray(s.al, dtype=float)
        mask = np.asarray(s.committed, dtype=bool)
        model_only = not mask.any()
        if model_only:  # a model's predictions: thin, no legend entry of their own
            art["predicted"] += ax.plot(ks, al, linestyle=":", color=color, linewidth=1.0,
                                        gid=f"model:{tag}")
        else:
            art["lines"] += ax.plot(ks, al, linestyle=THINKING_STYLE.get(s.thinking, "-"),
                                    color=color, linewidth=1.6, label=_legend_label(s),
                                    gid=f"al:{tag}")
        if s.low is not None and s.high is not None:
            low = np.asarray(s.low, dtype=float)
            high = np.asarray(s.high, dtype=float)
            known = np.isfinite(low) & np.isfinite(high)
            if known.any():
                alpha = 0.08 if model_only else 0.2
                art["bands"].append(ax.fill_between(ks, low, high, where=known, color=color,
                                                    alpha=alpha, linewidth=0, interpolate=False,
                                                    gid=f"band:{tag}"))
                level = f"{s.confidence_level:.0%} " if s.confidence_level else ""
                what = "band of the cross-K model" if model_only else "interval"
                band_keys.append((Patch(color=color, alpha=alpha, linewidth=0),
                                  f"{level}{what}: {_legend_label(s)}"))
        if mask.any():
            art["committed"] += ax.plot(ks[mask], al[mask], linestyle="none", marker="o",
                                        markersize=5, color=color, gid=f"committed:{tag}")
        if (~mask).any():
            art["predicted"] += ax.plot(ks[~mask], al[~mask], linestyle="none", marker="o",
                                        markersize=6, markerfacecolor="white",
                                        markeredgecolor=color, gid=f"predicted:{tag}")
        hit = np.isin(ks, np.asarray(s.flagged, dtype=float)) & mask
        if hit.any():
            art["flags"] += ax.plot(ks[hit], al[hit], markersize=13, markeredgewidth=1.5,
                                    gid=f"flagged:{tag}", **_RING)
    kmin = min(min(s.k) for s in series)
    kmax = max(max(s.k) for s in series)
    kk = np.arange(kmin, kmax + 1, dtype=float)
    ceiling = ax.plot(kk, kk + 1, linestyle=":", color=CEILING_COLOR, linewidth=1.2,
                      label="ceiling AL = K + 1", gid="ceiling")
    # marker legend entries explain filled vs open without repeating per curve
    keys = []
    if art["committed"] and art["predicted"]:
        keys += [(_key(linestyle="none", marker="o", color="0.3"), "measured / committed value"),
                 (_key(linestyle=":", marker="o", markerfacecolor="white", markeredgecolor="0.3",
                       color="0.3"), "fitted prediction (cross-K model)")]
    if art["flags"]:
        keys.append((_key(markersize=10, **_RING), "flagged: disagrees with the model"))
    _legend(ax, keys + band_keys, loc="best")
    # room for the highest value or interval bound
    top = max(np.nanmax(np.asarray([*s.al, *(s.high or ())], dtype=float)) for s in series)
    ax.set(xlabel=AL_XLABEL, ylabel=AL_YLABEL, xticks=kk, xlim=(kmin - 0.3, kmax + 0.3),
           ylim=(1.0, float(top) + 0.6))
    ax.grid(True, alpha=0.3)
    modes = sorted({s.thinking for s in series}, key=THINKING_MODES.index)
    ax.set_title("Acceptance length vs K (thinking " + "/".join(modes) + ")")
    return PlotArtists(ax, {**{role: tuple(v) for role, v in art.items()},
                            "ceiling": tuple(ceiling)})


# --------------------------------------------------------------------------
# per-position acceptance


def position_profile(cell_or_curve, *, k=None, thinking=None):
    """The per-position profile of one cell and vLLM's schedule for its AL."""
    if isinstance(cell_or_curve, PositionProfile):
        return cell_or_curve
    if _is_registry_curve(cell_or_curve):
        curve = cell_or_curve
        if k is None or thinking is None:
            raise ValueError("`k` and `thinking` are required to pick a cell of a curve")
        k = positive_k(k)
        (mode,) = _modes(thinking)
        cells = curve.cells.get(mode) or {}
        try:
            survival = implied_survival(cells, k)
        except KeyError as missing:
            have = ", ".join(str(x) for x in sorted(cells)) or "none"
            raise UnknownCurve(
                f"curve {curve.id}, thinking {mode}: no committed AL for K={missing.args[0]}, "
                f"needed to imply per-position survival up to K={k} (committed K: {have})"
            ) from None
        al_text = cells[k]
        block = (curve.method or "").lower() in BLOCK_PARALLEL_METHODS
        return PositionProfile(curve=curve.id, label=head_label(curve), thinking=mode, k=k,
                               al=al_text, survival=survival,
                               conditional=conditional_rates(survival),
                               schedule=min_variance_schedule(al_text, k),
                               source="implied, block-parallel" if block else "implied")
    if _is_curve_fit(cell_or_curve):
        fit = cell_or_curve
        if k is None or thinking is None:
            raise ValueError("`k` and `thinking` are required to pick a cell of a fit")
        (mode,) = _modes(thinking)
        cell = fit.cells.get((mode, k))
        if cell is None:
            have = ", ".join(f"thinking {t} K={kk}" for t, kk in sorted(fit.cells))
            raise UnknownCurve(f"the fit has no cell thinking {mode}, K={k} (cells: {have})")
        return _cell_profile(cell, name=_fit_name(fit), label=_fit_head(fit))
    if _is_cell_fit(cell_or_curve):
        return _cell_profile(cell_or_curve)
    method = getattr(cell_or_curve, "position_profile", None)
    if callable(method):
        return method()
    raise TypeError(f"cannot plot positions of {type(cell_or_curve).__name__}: expected a "
                    "registry Curve, a fitted cell or a PositionProfile")


def impossible_positions(survival, conditional=None):
    """What a profile claims that no acceptance process can, one text per position."""
    if conditional is None:
        conditional = conditional_rates(survival)
    out = []
    for i, (s_i, a_i) in enumerate(zip(survival, conditional), start=1):
        s_i = float(s_i)
        if s_i < 0:
            out.append(f"S({i}) = {s_i:.2f} < 0")
        elif s_i > 1:
            out.append(f"S({i}) = {s_i:.2f} > 1")
        elif a_i is not None and float(a_i) > 1:
            out.append(f"a_{i} = {float(a_i):.2f} > 1")
        elif a_i is not None and float(a_i) < 0:
            out.append(f"a_{i} = {float(a_i):.2f} < 0")
    return out


def meaningful_k(cells):
    """Largest K whose implied profile is a possible one (at least 1)."""
    last = _last_complete_k(cells)
    if last <= 1:
        return max(last, 1)
    survival = implied_survival(cells, last)
    k = 1
    while k < last and is_survival(survival[:k + 1]):
        k += 1
    return k


def _is_cell_fit(obj):
    return hasattr(obj, "mean_acceptance_length") and hasattr(obj, "per_position")


def _cell_profile(cell, *, name="fitted cell", label="measured"):
    """Profile of a fitted cell: measured survival with its pointwise interval."""
    pp = cell.per_position
    if pp is None or getattr(cell, "failed", False):
        raise ValueError(f"cell thinking {cell.thinking}, K={cell.k} has no per-position "
                         "counts (its source printed means only, or it failed)")
    survival = tuple(float(v) for v in pp.survival)
    conditional = tuple(None if not math.isfinite(float(v)) else float(v)
                        for v in pp.conditional)
    low, high = (None if bound is None else tuple(_nan(v) for v in bound)
                 for bound in (pp.survival_low, pp.survival_high))
    return PositionProfile(curve=name, label=label, thinking=cell.thinking or "?", k=cell.k,
                           al=cell.text, survival=survival, conditional=conditional,
                           schedule=min_variance_schedule(cell.text, cell.k),
                           survival_low=low, survival_high=high, source="measured",
                           confidence_level=pp.confidence_level)


def plot_chain(model, ax=None, *, color=None):
    """A cross-K model of one thinking mode: predictions, band, flagged cells."""
    if not getattr(model, "predicted", None):
        raise ValueError("the model has no predictions to plot")
    mode = getattr(model, "thinking", None) or "on"
    name = f"{getattr(model, 'kind', 'model')} model"
    series = [_model_series(model, name, "cross-K", mode)]
    measured = dict(getattr(model, "measured", None) or {})
    for flag in getattr(model, "flags", ()) or ():
        measured.setdefault(flag.k, flag.measured)
    if measured:
        mk = tuple(sorted(k for k, v in measured.items() if v is not None))
        series.insert(0, ALSeries(
            curve=name, label="measured", thinking=mode, k=mk,
            al=tuple(float(measured[k]) for k in mk), committed=(True,) * len(mk),
            flagged=tuple(sorted(f.k for f in getattr(model, "flags", ()) or ()))))
    art = plot_al_curve(series, ax=ax, colors={name: color} if color else None)
    if measured and getattr(model, "measured", None) is None:
        # only the flagged cells' measurements are known: points, not a line
        for line in art["lines"]:
            line.set_linestyle("none")
    return art


def plot_positions(cell_or_curve, *, k=None, thinking=None, ax=None, color=None):
    """Bars of per-position survival and conditional acceptance for one cell.

    Three bars per draft position i: the cell's survival ``S(i)`` (with its
    interval when known), its conditional acceptance ``a_i`` (hatched), and
    vLLM's minimum-variance schedule ``r_i`` for the same AL (grey), the
    survival a synthetic-acceptance run would realise.

    Example
    -------
    >>> from goldenal import load_registry
    >>> art = plot_positions(load_registry()["minimaxm3_eagle3"], k=3, thinking="on")
    >>> [f"{bar.get_height():.2f}" for bar in art["schedule"][0]]
    ['1.00', '0.83', '0.00']
    """
    prof = position_profile(cell_or_curve, k=k, thinking=thinking)
    import numpy as np

    ax = _axes(ax)
    color = color or curve_colors([prof.curve])[prof.curve]
    pos = np.arange(1, prof.k + 1, dtype=float)
    width = 0.27
    surv = np.array([float(s) for s in prof.survival])
    cond = np.array([_nan(c) for c in prof.conditional])
    sched = np.array([float(r) for r in prof.schedule])
    kind = "measured" if prof.source == "measured" else "implied by AL(i) - AL(i-1)"
    # A probability lies in [0, 1] and a survival does not rise; noisy means can
    # imply otherwise.  Such values are not drawn: the position is marked and
    # the figure says what the means imply.
    impossible = impossible_positions(prof.survival, prof.conditional)
    bad_surv = np.array([not (np.isfinite(v) and 0 <= v <= 1) for v in surv])
    bad_cond = np.array([not (np.isfinite(v) and 0 <= v <= 1) for v in cond])
    b_surv = _gid_bars(ax.bar(pos - width, np.where(bad_surv, 0.0, surv), width, color=color,
                              label=f"survival S(i), {kind}"), "survival")
    errorbars = []
    if prof.survival_low is not None and prof.survival_high is not None:
        low = np.array([_nan_at(prof.survival_low, i) for i in range(prof.k)])
        high = np.array([_nan_at(prof.survival_high, i) for i in range(prof.k)])
        known = np.isfinite(low) & np.isfinite(high) & ~bad_surv
        if known.any():
            level = f"{prof.confidence_level:.0%} " if prof.confidence_level else ""
            errorbars.append(_errorbar(ax, pos[known] - width, surv[known], low[known],
                                       high[known], ecolor="black", elinewidth=1,
                                       label=f"{level}interval of S(i)"))
    b_cond = _gid_bars(ax.bar(pos, np.where(bad_cond, 0.0, cond), width, color=color, alpha=0.45,
                              hatch="//", edgecolor=color,
                              label="conditional acceptance a_i = S(i)/S(i-1)"), "conditional")
    b_sched = _gid_bars(ax.bar(pos + width, sched, width, color=SCHEDULE_COLOR,
                               label=f"vLLM min-variance schedule for AL {_al_text(prof.al)}"),
                        "schedule")
    ax.axhline(0.0, color="black", linewidth=0.6)
    # headroom above 1 holds the legend and the notes
    ax.set(xticks=pos, xlabel=POSITION_XLABEL, ylabel=POSITION_YLABEL, ylim=(-0.05, 1.5),
           yticks=[0.0, 0.25, 0.5, 0.75, 1.0])
    marks = []
    for offset, bad in ((-width, bad_surv), (0.0, bad_cond)):
        for x in pos[bad]:
            marks.append(ax.text(x + offset, 0.0, "×", ha="center", va="bottom",
                                 fontsize="small", color="0.3", gid="impossible"))
    note = None
    if prof.source == "implied, block-parallel":
        note = ("block-parallel drafting: each K is drafted afresh,\n"
                "so AL(i) - AL(i-1) is no survival; orientation only")
    elif impossible:
        shown = "\n".join(impossible[:3]) + ("\n..." if len(impossible) > 3 else "")
        note = ("impossible profile, not drawn (×):\n" + shown +
                "\n(neighbouring AL means differ\nby less than their noise)")
    notes = [] if note is None else [ax.text(0.01, 0.98, note, transform=ax.transAxes,
                                             fontsize="x-small", color="0.3", va="top")]
    ax.grid(True, axis="y", alpha=0.3)
    # who on the first line(s), which cell on the last: long variant names wrap
    import textwrap

    who = textwrap.fill(f"{prof.curve} ({prof.label})", width=72)
    note = f"\n{prof.note}" if prof.note else ""
    ax.set_title(f"{who}\nthinking {prof.thinking}, K={prof.k}, AL={_al_text(prof.al)}{note}",
                 fontsize="medium")
    ax.legend(fontsize="small", loc="upper right", frameon=False)
    return PlotArtists(ax, {"survival": (b_surv,), "conditional": (b_cond,),
                            "schedule": (b_sched,), "errorbars": tuple(errorbars),
                            "notes": tuple(notes), "impossible": tuple(marks)})


def _gid_bars(bars, role):
    """``bars``, each named ``role:i`` (a BarContainer is no artist) for saved SVGs."""
    for i, patch in enumerate(bars.patches, start=1):
        patch.set_gid(f"{role}:{i}")
    return bars


def _al_text(al):
    return al if isinstance(al, str) else f"{float(al):.2f}"


# --------------------------------------------------------------------------
# cell-by-cell difference


# Committed values are rounded to two decimals, so each is within 0.005 of
# what was measured and a difference of two is within 0.01: the only
# uncertainty known when neither side has an interval.
ROUNDING_BOUND = 0.01


def diff_frame(diff_result):
    """One row per cell of a diff: delta, interval bounds, verdict."""
    import numpy as np
    import pandas as pd

    frame = diff_result.to_frame()
    if "thinking" not in frame.columns:
        frame = frame.reset_index()
    out = frame[["thinking", "k"]].copy()
    out["delta"] = frame["delta"].astype(float)
    out["status"] = frame["status"] if "status" in frame.columns else None
    lowc = next((c for c in frame.columns if "low" in str(c).lower()), None)
    highc = next((c for c in frame.columns if "high" in str(c).lower()), None)
    if lowc and highc:
        out["low"] = frame[lowc].astype(float)
        out["high"] = frame[highc].astype(float)
        out["interval"] = "given"
        return out
    from statistics import NormalDist

    level = getattr(diff_result, "confidence_level", 0.95)
    q = NormalDist().inv_cdf(0.5 + level / 2)
    # the standard error of each row is goldenal.stats.diff.combined_standard_error's, the one
    # rule for both the verdict and the drawing; only with none at all is the
    # +-0.01 bound of two roundings drawn
    se = (frame["se"] if "se" in frame.columns else
          np.full(len(frame), np.nan)).astype(float).to_numpy()
    has_se = np.isfinite(se)
    half = np.where(has_se, q * np.nan_to_num(se), ROUNDING_BOUND)
    out["low"] = out["delta"] - half
    out["high"] = out["delta"] + half
    known = np.isfinite(out["delta"].to_numpy())
    out["interval"] = pd.Series([("se" if s else "rounding") if d else None
                                 for s, d in zip(has_se, known)], index=out.index, dtype=object)
    return out


def plot_diff(diff_result, ax=None, *, thinking=None, colors=None):
    """Plot a cell-by-cell difference of two curves, with its uncertainty."""
    return _plot_diff_frame(diff_frame(diff_result), ax=ax, title=_diff_title(diff_result),
                            colors=colors, modes=_modes(thinking),
                            level=getattr(diff_result, "confidence_level", None))


def _diff_title(diff_result):
    return (f"{_side_name(getattr(diff_result, 'b', None), 'B')} minus "
            f"{_side_name(getattr(diff_result, 'a', None), 'A')}, per cell")


def _side_name(side, default):
    names = (getattr(side, attr, None) for attr in ("label", "curve_id", "id"))
    name = next((n for n in names if isinstance(n, str) and n), None)
    if name is None:
        return default
    return name + (" (fitted)" if getattr(side, "kind", None) == "fitted" else "")


def _plot_diff_frame(frame, *, ax=None, title=None, colors=None, modes=THINKING_MODES,
                     level=None):
    import numpy as np

    ax = _axes(ax)
    lines, errorbars, outside, interval_kinds = [], [], [], set()
    offsets = {"on": -0.08, "off": 0.08}
    mode_colors = {"on": "tab:blue", "off": "tab:orange", **(colors or {})}
    for mode in modes:
        part = frame[frame["thinking"] == mode].sort_values("k")
        part = part[np.isfinite(part["delta"].to_numpy(dtype=float))]
        if part.empty:
            continue
        ks = part["k"].to_numpy(dtype=float) + offsets[mode]
        delta = part["delta"].to_numpy(dtype=float)
        color = mode_colors[mode]
        lines += ax.plot(ks, delta, linestyle=THINKING_STYLE[mode], marker="o", color=color,
                         label=f"thinking {mode}", gid=f"diff:{mode}")
        low = part["low"].to_numpy(dtype=float)
        high = part["high"].to_numpy(dtype=float)
        kinds = part["interval"].to_numpy()
        for kind, ecolor in (("se", color), ("given", color), ("rounding", "0.6")):
            sel = (kinds == kind) & np.isfinite(low) & np.isfinite(high)
            if sel.any():
                eb = _errorbar(ax, ks[sel], delta[sel], low[sel], high[sel], ecolor=ecolor,
                               elinewidth=1.2)
                eb.lines[2][0].set_gid(f"interval:{kind}:{mode}")
                errorbars.append(eb)
                interval_kinds.add(kind)
        off = part["status"].to_numpy() == "outside"
        if off.any():
            outside += ax.plot(ks[off], delta[off], markersize=12, markeredgewidth=1.5,
                               gid=f"outside:{mode}", **_RING)
    if not lines:
        raise ValueError("nothing to plot: the diff has no cell present on both sides")
    zero = ax.axhline(0.0, color="black", linewidth=0.8, gid="zero")
    pct = f"{level:.0%} " if level else ""
    keys = []
    if interval_kinds & {"se", "given"}:
        keys.append((_key(color="0.2", marker="|", markersize=8, linestyle="-"),
                     f"{pct}interval of the difference"))
    if "rounding" in interval_kinds:
        keys.append((_key(color="0.6", marker="|", markersize=8, linestyle="-"),
                     "±0.01: two-decimal rounding only (no interval known)"))
    if outside:
        keys.append((_key(markersize=10, **_RING), "outside the interval"))
    ax.set(xticks=sorted({int(k) for k in frame["k"]}), xlabel=AL_XLABEL, ylabel=DIFF_YLABEL)
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title, fontsize="medium")
    _legend(ax, keys, loc="best")
    return PlotArtists(ax, {"lines": tuple(lines), "errorbars": tuple(errorbars),
                            "outside": tuple(outside), "zero": (zero,)})


# --------------------------------------------------------------------------
# whole figures, as ``goldenal plot`` draws them

KINDS = ("al", "positions", "diff")
FORMATS = ("png", "svg", "pdf")


def _new_figure(width, height):
    """A pyplot-free figure on an Agg canvas (no global state, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _last_complete_k(cells):
    """Largest K such that every K from 1 up to it has a committed number."""
    k = 0
    while str(cells.get(k + 1, "N/A")).strip().upper() != "N/A":
        k += 1
    return k


def _committed_cells(curve, mode):
    """``{K: committed text}`` of one thinking mode of a curve or fit."""
    if _is_curve_fit(curve):
        return {k: c.text for (t, k), c in curve.cells.items() if t == mode}
    return (getattr(curve, "cells", {}) or {}).get(mode) or {}


def figure(curves, *, kind="al", thinking=None, k=None, diff=None, golden_dir=None,
           colors=None):
    """Draw a whole figure of one kind, as ``goldenal plot`` saves it."""
    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(KINDS)}, got {kind!r}")
    curves = _as_list(curves)
    if not curves:
        raise ValueError("`curves` is empty")
    colors = _with_colors(colors, [curve_name(c) for c in curves])
    if kind == "al":
        fig = _new_figure(8.0, 5.0)
        plot_al_curve(curves, thinking=thinking, ax=fig.add_subplot(), colors=colors)
        return fig
    if kind == "diff":
        if len(curves) != 2:
            raise ValueError(f"a diff needs exactly two curves, got {len(curves)}")
        if diff is None:
            raise ValueError("a diff figure needs `diff` (goldenal.diff_curves)")
        a, b = curves
        if golden_dir is not None and all(_is_registry_curve(c) for c in curves):
            # by id, so the diff finds <id>.distribution.json beside each curve
            result = diff(a.id, b.id, golden_dir=golden_dir)
        else:
            result = diff(a, b)
        fig = _new_figure(8.0, 4.5)
        plot_diff(result, ax=fig.add_subplot(), thinking=thinking)
        return fig
    cells = [(curve, mode, have) for curve in curves for mode in _modes(thinking)
             if (have := _committed_cells(curve, mode))]
    if not cells:
        raise UnknownCurve("no committed cells to plot" + (f" for thinking {thinking}"
                                                            if thinking else ""))
    ncols = 2 if len(cells) > 1 else 1
    nrows = math.ceil(len(cells) / ncols)
    fig = _new_figure(7.0 * ncols, 4.2 * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (curve, mode, have) in zip(axes, cells):
        # default K: a fit's largest cell, a curve's largest with a possible profile
        last = _last_complete_k(have)
        kk = k if k is not None else last if _is_curve_fit(curve) else meaningful_k(have)
        target = curve
        if k is None and kk < last:
            target = dataclasses.replace(position_profile(curve, k=kk, thinking=mode), note=(
                f"(committed up to K={last}; beyond K={kk} the means imply an impossible "
                "profile)"))
        plot_positions(target, k=kk, thinking=mode, ax=ax, color=colors[curve_name(curve)])
    for ax in axes[len(cells):]:
        ax.set_visible(False)
    return fig


def save_figure(fig, path):
    """Save a figure atomically; the format follows the extension (png, svg, pdf)."""
    import os

    import matplotlib

    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"output must end in .png, .svg or .pdf, got {path!r}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        import errno

        raise FileNotFoundError(errno.ENOENT, "no such directory", directory)
    metadata = {"png": {"Software": None}, "svg": {"Date": None},
                "pdf": {"CreationDate": None, "ModDate": None}}[ext]
    from goldenal.core.files import atomic_open

    with atomic_open(path, "wb") as fh, matplotlib.rc_context(
            {"svg.fonttype": "none", "svg.hashsalt": "goldenal"}):
        fig.savefig(fh, format=ext, dpi=120, metadata=metadata)
    return path
