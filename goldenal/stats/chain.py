"""Across K for chain drafting: the pooled profile, and a cross-K check on requests
re-weighted by tokens, since per-step counts pooled across K flag clean runs (why and how:
docs/statistics.md, "The cross-K check")."""

from __future__ import annotations

import math

import numpy as np

from goldenal.core.errors import ConvergenceError
from goldenal.stats.cell import MIN_UNITS, _percentile
from goldenal.stats.parametric import fit_parametric_counts
from goldenal.stats.results import CellFlag, ChainFit, Check, ConfidenceInterval

CHECKLIST = ("check that: the cells carry per-position counts (vLLM log lines or "
             "/metrics of 0.8.5+, per-request histograms); every cell has steps; "
             "the curve's method drafts as a chain (EAGLE/EAGLE3, draft model, MTP)")

# Differences within this many AL are not flagged: below it lie the second-order
# effects the re-weighting leaves (segments within a request, ratio bias).
DEFAULT_MARGIN = 0.02
# Probability with which a shift of the reported detectable size is flagged.
DEFAULT_POWER = 0.9


def _pooled(counts_by_cell, kmax):
    """Pooled numerator c_i and denominator c_(i-1) per position."""
    shape = counts_by_cell[0][1].shape[:-1]
    num = np.zeros(shape + (kmax,))
    den = np.zeros(shape + (kmax,))
    for k, arr in counts_by_cell:
        num[..., :k] += arr[..., 1:k + 1]
        den[..., :k] += arr[..., :k]
    return num, den


def _al_curve(a):
    return 1.0 + np.cumsum(np.cumprod(a, axis=-1), axis=-1)


def _is_request_cell(c):
    """Per-request units with per-position counts, at least ``MIN_UNITS`` of them."""
    return (c.unit_kind == "requests" and c.units is not None and c.per_position is not None
            and c.units.shape[1] == c.k + 2 and c.units.shape[0] >= MIN_UNITS)


def reweighted_terms(cell, j):
    """Tokens T and steps W_j at K=j of every request of a request cell with K >= j."""
    u = cell.units
    n, acc = u[:, 0], u[:, 1]
    tokens = n + acc
    if j == cell.k:
        return tokens, n
    steps_at_j = n + u[:, 2:2 + j].sum(axis=1)  # = n * AL_j
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(steps_at_j > 0, tokens * n / np.where(steps_at_j > 0, steps_at_j, 1), 0.0)
    return tokens, w


def _estimate(parts):
    """Ratio sum T / sum W over independent cells, its variance and effective units."""
    t_all = sum(float(t.sum()) for t, _ in parts)
    w_all = sum(float(w.sum()) for _, w in parts)
    r = t_all / w_all
    var = 0.0
    units = 0
    for t, w in parts:
        m = len(t)
        if m > 1:
            e = t - r * w
            var += m / (m - 1) * float((e ** 2).sum())
        units += m
    return r, var / w_all ** 2, units


def _welch_df(v1, n1, v2, n2):
    den = (v1 ** 2 / max(n1 - 1, 1) if v1 > 0 else 0.0) + \
        (v2 ** 2 / max(n2 - 1, 1) if v2 > 0 else 0.0)
    return (v1 + v2) ** 2 / den if den > 0 else math.inf


def _comparison(cell, pool):
    """(j, estimate, reference, se, df, reference Ks) for ``cell`` against ``pool``; or None."""
    others = [c for c in pool if c is not cell]
    reach = [c for c in others if c.k >= cell.k]
    if reach:
        j = cell.k
    elif _is_request_cell(cell) and others:
        j = max(c.k for c in others)
        reach = [c for c in others if c.k >= j]
    else:
        return None
    if _is_request_cell(cell):
        est, v_est, n_est = _estimate([reweighted_terms(cell, j)])
    else:
        if not math.isfinite(cell.standard_error) or not cell.n_clusters:
            return None
        est, v_est, n_est = cell.mean_acceptance_length, cell.standard_error ** 2, \
            cell.n_clusters
    ref, v_ref, n_ref = _estimate([reweighted_terms(c, j) for c in reach])
    se = math.sqrt(v_est + v_ref)
    return j, est, ref, se, _welch_df(v_est, n_est, v_ref, n_ref), tuple(c.k for c in reach)


def fit_chain(cells, *, thinking=None, threshold=None, margin=DEFAULT_MARGIN,
              power=DEFAULT_POWER, parametric=True):
    """Fit the pooled profile and run the cross-K check on the cells of one thinking mode.

    Parameters
    ----------
    cells : sequence of CellFit
        Cells of one curve and thinking mode (different K); only cells with an
        interval are compared, and only request cells serve as references.
    thinking : str, optional
        Thinking mode (default: taken from the cells).
    threshold : float, optional
        Fixed critical value of (|D| - margin) / SE.  Default: Student t (Welch
        df) at the cells' level, Bonferroni-corrected over the compared cells.
    margin : float, default 0.02
        Differences within +-margin AL are never flagged.
    power : float, default 0.9
        Probability of flagging a shift of the reported detectable size.
    parametric : bool
        Also fit the constant and geometric conditional-acceptance forms.

    Returns
    -------
    ChainFit
        ``z_scores`` (D / SE per compared K), ``flags``, ``detectable``
        (minimum detectable shift per compared K) and the stated ``margin``.

    Raises
    ------
    ConvergenceError
        No cell carries per-position counts (nothing to pool).
    """
    from scipy.stats import norm, t

    if not 0 <= margin:
        raise ValueError("`margin` must be >= 0")
    if not 0 < power < 1:
        raise ValueError("`power` must be between 0 and 1")
    cells = [c for c in cells if not c.failed]
    usable = [c for c in cells if c.per_position is not None]
    if thinking is None and cells:
        thinking = cells[0].thinking
    if not usable:
        raise ConvergenceError(f"no cross-K fit for thinking {thinking}: no cell has "
                               f"per-position counts; {CHECKLIST}")
    level = usable[0].confidence_level
    alpha = 1 - level
    kmax = max(c.k for c in usable)
    requests = [c for c in usable if _is_request_cell(c)]
    compared = [c for c in cells if c.k <= kmax and math.isfinite(c.mean_acceptance_length)
                and (_is_request_cell(c) or math.isfinite(c.standard_error))]
    n_tests = max(1, len(compared)) if requests else 1
    per_test = alpha / n_tests

    def critical(df):
        if threshold is not None:
            return float(threshold)
        return float(t.ppf(1 - per_test / 2, df)) if math.isfinite(df) else \
            float(norm.ppf(1 - per_test / 2))

    # Backward elimination: the cell furthest beyond the margin (in its own critical
    # values) is flagged and left out of the others' references, so one bad cell does
    # not drag its neighbours with it.
    pool = list(requests)
    flagged = {}
    results = {}
    while requests:
        results = {}
        for c in compared:
            if c.k in flagged:
                continue
            r = _comparison(c, pool)
            if r is not None:
                results[c.k] = (c, r)
        worst, worst_excess = None, 1.0
        for k, (c, (j, est, ref, se, df, _)) in results.items():
            excess = (abs(est - ref) - margin) / se / critical(df) if se > 0 else \
                (math.inf if abs(est - ref) > margin else 0.0)
            if excess > worst_excess:
                worst, worst_excess = k, excess
        if worst is None:
            break
        flagged[worst] = results[worst]
        pool = [c for c in pool if c.k != worst]
    final = {**results, **flagged}

    z_scores, detectable, flags = {}, {}, []
    for k in sorted(final):
        c, (j, est, ref, se, df, ref_ks) = final[k]
        d = est - ref
        z = d / se if se > 0 else (0.0 if d == 0 else math.copysign(math.inf, d))
        z_scores[k] = z
        z_power = float(t.ppf(power, df)) if math.isfinite(df) else float(norm.ppf(power))
        detectable[k] = margin + (critical(df) + z_power) * se
        if k in flagged:
            src = ", ".join(f"K={x}" for x in ref_ks)
            what = (f"measured {est:.3f} vs {ref:.3f} from the requests of {src} re-weighted "
                    f"to K={j}" if j == k else
                    f"its requests imply AL({j}) = {est:.3f} vs {ref:.3f} from {src}")
            flags.append(CellFlag(thinking, k, est, ref, d, z,
                                  f"thinking {thinking} K={k}: {what} ({z:+.1f} SE; "
                                  f"detectable {detectable[k]:.3f}, margin {margin:g})"))

    model = _pool(usable, kmax, level)
    a, num, den, a_r, a_lo, a_hi, predicted, predicted_interval = model
    if requests:
        active = [c for c in requests if c.k not in flagged]
        for k in range(1, max((c.k for c in active), default=0) + 1):
            est, var, units = _estimate([reweighted_terms(c, k) for c in active if c.k >= k])
            q = float(t.ppf(0.5 + level / 2, max(units - 1, 1)))
            predicted[k] = est
            # clipped to the support [1, K + 1], as every cell interval is
            predicted_interval[k] = ConfidenceInterval(max(est - q * math.sqrt(var), 1.0),
                                                       min(est + q * math.sqrt(var), k + 1.0))
    success = bool(np.all(np.isfinite(a)))
    message = "pooled MLE over cells with K >= i" if success else \
        "some positions were never reached (a(i) undefined there)"
    if requests:
        message += (f"; cross-K check on requests re-weighted by tokens, margin {margin:g} AL, "
                    f"Bonferroni over {n_tests} cells")
    else:
        message += ("; no cross-K check: it needs per-request records (log windows and "
                    "aggregate counts cannot separate the step re-weighting across K)")
    if flagged:
        message += "; flagged cells left out of the references: " + \
            ", ".join(f"K={k}" for k in sorted(flagged))
    if not requests:
        check = Check("skipped", "no cell has 10 or more per-request records with per-position "
                                 "counts: log windows and aggregate counts cannot separate the "
                                 "step re-weighting across K")
    elif not final:
        check = Check("skipped", "no two cells to compare (one cell with per-request records "
                                 "and none at another K)")
    elif flags:
        check = Check("flagged", f"{len(flags)} of {len(final)} compared cells flagged")
    else:
        check = Check("done", f"{len(final)} cells compared, none beyond the margin")
    par = ()
    if parametric and success:
        par = fit_parametric_counts(num, den, replicates=a_r)
    crit = float(norm.ppf(1 - per_test / 2)) if threshold is None else float(threshold)
    return ChainFit(thinking=thinking, params=a, params_interval=ConfidenceInterval(a_lo, a_hi),
                    predicted=predicted, predicted_interval=predicted_interval,
                    z_scores=z_scores, flags=tuple(flags), success=success, message=message,
                    confidence_level=level, threshold=crit,
                    n_cells=len([c for c in usable if c.k not in flagged]),
                    n_steps=int(sum(c.n_steps for c in usable if c.k not in flagged)),
                    parametric=par, margin=margin, detectable=detectable, power=power,
                    check=check)


def _pool(cells, kmax, level):
    """Pooled per-step a(i), its replicate interval and the AL(K) it implies."""
    point = [(c.k, np.concatenate([[c.n_steps], c.per_position.counts]).astype(float))
             for c in cells]
    num, den = _pooled(point, kmax)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    pred = _al_curve(np.nan_to_num(a))
    predicted = {k: float(pred[k - 1]) for k in range(1, kmax + 1)}
    nan = np.full(kmax, np.nan)
    with_reps = all(c.replicates is not None and c.replicates.shape[1] == c.k + 2
                    for c in cells)
    if not with_reps:
        predicted_interval = {k: ConfidenceInterval(math.nan, math.nan)
                              for k in range(1, kmax + 1)}
        return a, num, den, None, nan, nan, predicted, predicted_interval
    b = min(c.replicates.shape[0] for c in cells)
    reps = [(c.k, np.delete(c.replicates[:b], 1, axis=1)) for c in cells]  # drop accepted
    num_r, den_r = _pooled(reps, kmax)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_r = np.where(den_r > 0, num_r / np.where(den_r > 0, den_r, 1), np.nan)
    a_lo, a_hi = _percentile(a_r, level)
    pred_r = _al_curve(np.nan_to_num(a_r))
    p_lo, p_hi = _percentile(pred_r, level)
    predicted_interval = {k: ConfidenceInterval(float(p_lo[k - 1]), float(p_hi[k - 1]))
                          for k in range(1, kmax + 1)}
    return a, num, den, a_r, a_lo, a_hi, predicted, predicted_interval
