"""Monotone survival profile for curves known only by their means (docs/statistics.md,
"Curves known only by their means")."""

from __future__ import annotations

import math

import numpy as np

from goldenal.core.acceptance import pava_nonincreasing
from goldenal.stats.parametric import fit_parametric_means
from goldenal.stats.results import CellFlag, MonotoneFit

# Published means carry two decimals, so a difference of two of them is off
# by up to 0.01; flag cells further than this from the monotone curve.
DEFAULT_TOLERANCE = 0.03


def isotonic_decreasing(y, w=None):
    """Non-increasing isotonic regression: scipy's when available, else PAVA."""
    try:
        from scipy.optimize import isotonic_regression  # scipy >= 1.12
    except ImportError:
        return np.asarray(pava_nonincreasing(y, w))
    return np.asarray(isotonic_regression(np.asarray(y, float), weights=w,
                                          increasing=False).x)


def _means_iv(means):
    out = {}
    for k, v in means.items():
        k = int(k)
        if k < 1:
            raise ValueError("`means` keys must be K >= 1")
        if v is None or isinstance(v, str) and v.strip().upper() == "N/A":
            continue
        if math.isfinite(float(v)):
            out[k] = float(v)
    if not out:
        raise ValueError("`means` holds no finite value")
    return out


def fit_curve_means(means, *, thinking="on", tolerance=DEFAULT_TOLERANCE, parametric=True):
    """Fit a monotone survival profile to a curve of means (chain drafting).

    Parameters
    ----------
    means : dict
        ``{K: AL}``; values may be committed strings, "N/A" cells are skipped.
    thinking : str
        Thinking mode, recorded on the result and the flags.
    tolerance : float, default 0.03
        A cell is flagged when |measured - fitted| exceeds this.
    parametric : bool
        Also fit the constant and geometric forms.

    Returns
    -------
    MonotoneFit

    Examples
    --------
    >>> fit = fit_curve_means({1: 1.84, 2: 2.52, 3: 2.93, 4: 3.41, 5: 3.59,
    ...                        6: 3.57, 7: 3.85, 8: 4.06}, thinking="off")
    >>> [f.k for f in fit.flags]
    [3, 6, 7]
    """
    means = _means_iv(means)
    ks = tuple(sorted(means))
    kmax = ks[-1]
    values, spans = [], []
    prev_k, prev_al = 0, 1.0
    for k in ks:
        values.append((means[k] - prev_al) / (k - prev_k))
        spans.append(k - prev_k)
        prev_k, prev_al = k, means[k]
    fitted_blocks = np.clip(isotonic_decreasing(values, np.array(spans, float)), 0.0, None)
    implied = np.repeat(values, spans)
    fitted_s = np.repeat(fitted_blocks, spans)
    fitted_al = 1.0 + np.cumsum(fitted_s)
    fitted = {k: float(fitted_al[k - 1]) for k in range(1, kmax + 1)}
    residuals = {k: means[k] - fitted[k] for k in ks}
    flags = tuple(CellFlag(thinking, k, means[k], fitted[k], d, None,
                           f"thinking {thinking} K={k}: {means[k]:.2f} is {d:+.3f} from the "
                           f"monotone profile ({fitted[k]:.3f})")
                  for k, d in residuals.items() if abs(d) > tolerance)
    violations = int(np.sum(np.abs(fitted_s - implied) > 1e-12))
    par = fit_parametric_means(means, tolerance=tolerance) if parametric and len(ks) >= 2 else ()
    return MonotoneFit(
        thinking=thinking, ks=ks, measured=dict(means), implied_survival=implied,
        fitted_survival=fitted_s, fitted=fitted, residuals=residuals, flags=flags,
        tolerance=tolerance, success=True,
        message=("implied survival already monotone" if violations == 0 else
                 f"{violations} positions adjusted to make the survival monotone"),
        parametric=par)
