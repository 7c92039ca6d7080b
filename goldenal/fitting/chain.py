"""The cross-K model of chain drafting: one survival curve censored at K.

With chain drafting (EAGLE/EAGLE3, a separate draft model, MTP heads run as a
chain) the K=n draft is a prefix of the K=n+1 draft, so the conditional
acceptance a(i) of position i is the same in every cell with K >= i.  A cell
with K observes positions 1..K and is censored after K, so the maximum
likelihood estimate pools the cells that reach position i:

    a(i) = sum_{cells with K >= i} c_i / sum_{cells with K >= i} c_(i-1)

and AL(K) = 1 + sum_{i<=K} prod_{j<=i} a(j).  Intervals come from the cells'
resampling replicates (each cell resampled the way its own interval was
computed, cells independently), so the pooled intervals and the z of a cell
against the model carry the correlation within requests.
"""

from __future__ import annotations

import math

import numpy as np

from goldenal.errors import ConvergenceError
from goldenal.fitting.cell import _percentile
from goldenal.fitting.parametric import fit_parametric_counts
from goldenal.fitting.results import CellFlag, ChainFit, ConfidenceInterval

CHECKLIST = ("check that: the cells carry per-position counts (vLLM log lines or "
             "/metrics of 0.8.5+, per-request histograms); every cell has steps; "
             "the curve's method drafts as a chain (EAGLE/EAGLE3, draft model, MTP)")


def _pooled(counts_by_cell, kmax):
    """Pooled numerator c_i and denominator c_(i-1) per position.

    ``counts_by_cell`` is a list of (k, array[..., k + 1]) with columns
    N, c_1..c_k; leading axes (replicates) broadcast.
    """
    shape = counts_by_cell[0][1].shape[:-1]
    num = np.zeros(shape + (kmax,))
    den = np.zeros(shape + (kmax,))
    for k, arr in counts_by_cell:
        num[..., :k] += arr[..., 1:k + 1]
        den[..., :k] += arr[..., :k]
    return num, den


def _al_curve(a):
    return 1.0 + np.cumsum(np.cumprod(a, axis=-1), axis=-1)


def fit_chain(cells, *, thinking=None, threshold=None, parametric=True):
    """Fit the pooled chain model to the cells of one thinking mode.

    Parameters
    ----------
    cells : sequence of CellFit
        Cells of one curve and thinking mode (different K).  Cells without
        per-position counts or failed cells do not enter the pooled model
        but are still compared with it.
    thinking : str, optional
        Thinking mode (default: taken from the cells).
    threshold : float, optional
        |z| above which a cell is flagged.  Default: the two-sided normal
        quantile of the cells' confidence level, Bonferroni-corrected for the
        number of cells compared (so a clean curve is flagged with
        probability about 1 - level).
    parametric : bool
        Also fit the constant and geometric conditional-acceptance forms.

    Returns
    -------
    ChainFit

    Raises
    ------
    ConvergenceError
        No cell carries per-position counts (nothing to pool).
    """
    from scipy.stats import norm

    cells = [c for c in cells if not c.failed]
    usable = [c for c in cells if c.per_position is not None and c.replicates is not None
              and c.replicates.shape[1] == c.k + 2]
    if thinking is None and cells:
        thinking = cells[0].thinking
    if not usable:
        raise ConvergenceError(f"no cross-K fit for thinking {thinking}: no cell has "
                               f"per-position counts; {CHECKLIST}")
    level = usable[0].confidence_level
    kmax = max(c.k for c in usable)
    b = min(c.replicates.shape[0] for c in usable)
    compared = [c for c in cells if c.k <= kmax and math.isfinite(c.mean_acceptance_length)]
    if threshold is None:
        threshold = float(norm.ppf(1 - (1 - level) / (2 * max(1, len(compared)))))

    # Backward elimination: the cell furthest from the pooled model (in SE) is flagged
    # and, when other cells still cover its positions, left out of the pool, so one
    # bad cell does not drag its neighbours' predictions with it.
    active = list(usable)
    flagged_ids = set()
    while True:
        model = _pool(active, kmax, b, level)
        z_scores, deltas = _compare(compared, model, usable, b)
        candidates = [c for c in active if id(c) not in flagged_ids and c.k in z_scores]
        if not candidates:
            break
        worst = max(candidates, key=lambda c: abs(z_scores[c.k]))
        if abs(z_scores[worst.k]) <= threshold:
            break
        flagged_ids.add(id(worst))
        if any(c is not worst and c.k >= worst.k for c in active):
            active = [c for c in active if c is not worst]
    a, num, den, a_r, a_lo, a_hi, predicted, predicted_interval, pred_r = model
    success = bool(np.all(np.isfinite(a)))
    message = "pooled MLE over cells with K >= i" if success else \
        "some positions were never reached (a(i) undefined there)"
    if len(active) < len(usable):
        left = ", ".join(f"K={c.k}" for c in usable if not any(c is x for x in active))
        message += f"; flagged cells left out of the pool: {left}"
    flags = []
    for c in compared:
        z = z_scores[c.k]
        if id(c) in flagged_ids or (abs(z) > threshold and not any(c is u for u in usable)):
            d = deltas[c.k]
            flags.append(CellFlag(thinking, c.k, c.mean_acceptance_length, predicted[c.k], d, z,
                                  f"thinking {thinking} K={c.k}: measured "
                                  f"{c.mean_acceptance_length:.3f} vs pooled "
                                  f"{predicted[c.k]:.3f} ({z:+.1f} SE"
                                  + ("; count-based SE, optimistic)"
                                     if c.interval_method == "count" else ")")))
    par = ()
    if parametric and success:
        par = fit_parametric_counts(num, den, replicates=a_r)
    return ChainFit(thinking=thinking, params=a, params_interval=ConfidenceInterval(a_lo, a_hi),
                    predicted=predicted, predicted_interval=predicted_interval,
                    z_scores=z_scores, flags=tuple(flags), success=success, message=message,
                    confidence_level=level, threshold=threshold, n_cells=len(active),
                    n_steps=int(sum(c.n_steps for c in active)), parametric=par)


def _pool(cells, kmax, b, level):
    """Pooled a(i), its replicates and the predicted AL(K) of ``cells``."""
    point = [(c.k, np.concatenate([[c.n_steps], c.per_position.counts]).astype(float))
             for c in cells]
    num, den = _pooled(point, kmax)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    reps = [(c.k, np.delete(c.replicates[:b], 1, axis=1)) for c in cells]  # drop accepted
    num_r, den_r = _pooled(reps, kmax)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_r = np.where(den_r > 0, num_r / np.where(den_r > 0, den_r, 1), np.nan)
    a_lo, a_hi = _percentile(a_r, level)
    pred = _al_curve(np.nan_to_num(a))
    pred_r = _al_curve(np.nan_to_num(a_r))
    p_lo, p_hi = _percentile(pred_r, level)
    predicted = {k: float(pred[k - 1]) for k in range(1, kmax + 1)}
    predicted_interval = {k: ConfidenceInterval(float(p_lo[k - 1]), float(p_hi[k - 1]))
                          for k in range(1, kmax + 1)}
    return a, num, den, a_r, a_lo, a_hi, predicted, predicted_interval, pred_r


def _compare(compared, model, usable, b):
    """z of every cell against the pooled prediction, from joint replicates."""
    predicted, pred_r = model[6], model[8]
    z_scores, deltas = {}, {}
    for c in compared:
        d = c.mean_acceptance_length - predicted[c.k]
        if any(c is u for u in usable):
            rep = c.replicates[:b]
            # the cell's own replicate minus the pool's: covariance included when the
            # cell is in the pool, independence when it was left out
            d_r = (1 + rep[:, 1] / rep[:, 0]) - pred_r[:, c.k - 1]
            se = float(np.std(d_r, ddof=1))
        else:
            se = float(np.std(pred_r[:, c.k - 1], ddof=1))
            if math.isfinite(c.standard_error):
                se = math.hypot(se, c.standard_error)
        z_scores[c.k] = d / se if se > 0 else (0.0 if d == 0 else math.copysign(math.inf, d))
        deltas[c.k] = d
    return z_scores, deltas
