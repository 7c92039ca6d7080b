"""One cell: pooled acceptance length, its interval, per-position acceptance.

Counts follow DESIGN.md "Data notes": N verification steps, c_i steps whose
first i drafts were all accepted, AL = 1 + sum(accepted) / N,
S(i) = c_i / N, a(i) = c_i / c_(i-1) with c_0 = N.

The interval method follows the granularity of the data:

* per-request observations -> cluster bootstrap over requests (resampling
  whole requests keeps the correlation of steps within a request);
* per-interval observations (log lines) -> batch means over consecutive
  logging windows (windows share requests, so neighbouring windows are
  grouped into batches before the variance is estimated);
* otherwise (one aggregate count, e.g. a Prometheus delta) -> a count-based
  interval that treats steps as independent; it is reported as optimistic.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from goldenal.errors import LowSampleWarning, ParseError
from goldenal.fitting.results import CellFit, ConfidenceInterval, PerPosition

METHODS = ("auto", "bootstrap", "batch-means", "count")

# Fewer clusters than this make a resampling or batch interval doubtful.
MIN_CLUSTERS = 10
MIN_WINDOWS = 5
# Rows of the weight matrix generated at once (bounds memory to ~chunk x n).
_CHUNK_CELLS = 4_000_000


def _fit_cell_iv(k, confidence_level, method, n_resamples):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError("`k` must be a positive integer")
    if not 0 < confidence_level < 1:
        raise ValueError("`confidence_level` must be between 0 and 1")
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {', '.join(METHODS)}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 100:
        raise ValueError("`n_resamples` must be an integer >= 100")


def _where(o):
    return {"path": o.source, "line": o.line}


def _cell_name(thinking, k):
    return (f"thinking {thinking}, " if thinking else "") + f"K={k}"


def _check_k(observations, k, thinking):
    for o in observations:
        if o.k is not None and o.k != k:
            raise ParseError(f"observation has K={o.k} but the cell "
                             f"({_cell_name(thinking, k)}) is K={k}: the run manifest and "
                             "the file disagree", **_where(o))
        pp = o.accepted_per_position
        if pp is not None and not o.mean_only and len(pp) != k:
            raise ParseError(f"per-position counts have {len(pp)} entries but the cell "
                             f"({_cell_name(thinking, k)}) is K={k}", **_where(o))


def _table(observations, k, per_position):
    """(n, 2 [+ k]) float array: steps, accepted[, c_1..c_k] per observation."""
    cols = 2 + (k if per_position else 0)
    out = np.empty((len(observations), cols))
    for j, o in enumerate(observations):
        out[j, 0] = o.drafts
        out[j, 1] = o.accepted
        if per_position:
            out[j, 2:] = o.accepted_per_position
    return out


def _group(observations, keyfunc):
    groups = {}
    for o in observations:
        groups.setdefault(keyfunc(o), []).append(o)
    return list(groups.values())


def bootstrap_weights_apply(table, n_resamples, rng):
    """Totals of ``n_resamples`` cluster-bootstrap resamples of ``table`` rows.

    Each resample draws n rows with replacement; its totals are the
    resampling counts (a multinomial weight vector) times the per-cluster
    totals, computed as one matrix product per chunk of resamples.

    Returns
    -------
    ndarray, shape (n_resamples, table.shape[1])
    """
    n = table.shape[0]
    out = np.empty((n_resamples, table.shape[1]))
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n))
        # counts[r, j] = how often cluster j was drawn in resample r
        flat = idx + (np.arange(b) * n)[:, None]
        counts = np.bincount(flat.ravel(), minlength=b * n).reshape(b, n)
        out[start:start + b] = counts @ table
    return out


def _batch(table, size):
    n = table.shape[0]
    m = max(n // size, 1)
    index = np.minimum(np.arange(n) // size, m - 1)  # the remainder joins the last batch
    out = np.zeros((m, table.shape[1]))
    np.add.at(out, index, table)
    return out


def batch_windows(table):
    """Group consecutive windows into batches for the batch-means variance.

    Windows share long requests, so neighbouring windows are correlated;
    batches of about sqrt(n) consecutive windows (the remainder joins the
    last batch) make the batch sums nearly independent while leaving about
    sqrt(n) batches for the variance.

    Parameters
    ----------
    table : ndarray, shape (windows, columns)
        Per-window steps, accepted[, c_1..c_K], in time order.

    Returns
    -------
    ndarray, shape (batches, columns)
    """
    n = table.shape[0]
    size = max(1, math.isqrt(n))
    if n >= 2 and n // size < 2:
        size = n // 2
    return _batch(table, size)


def autocorrelation_time(x):
    """Integrated autocorrelation time of a series (Geyer's initial positive sequence).

    Sums of adjacent autocorrelation pairs are added while positive and made
    non-increasing (Geyer 1992, "Practical Markov chain Monte Carlo", Stat.
    Sci. 7, sec. 3.3); tau = 2 * sum - 1, at least 1.
    """
    x = np.asarray(x, float) - np.mean(x)
    n = len(x)
    g0 = float(x @ x) / n
    if n < 4 or g0 <= 0:
        return 1.0
    rho = [1.0] + [float(x[h:] @ x[:-h]) / n / g0 for h in range(1, n - 1)]
    total, prev = 0.0, math.inf
    for i in range(0, len(rho) - 1, 2):
        pair = min(rho[i] + rho[i + 1], prev)
        if pair <= 0:
            break
        total += pair
        prev = pair
    return max(1.0, 2 * total - 1)


def _ratio_ci_batch(num, den, level):
    """Ratio estimator sum(num)/sum(den) over batches with a t interval."""
    m = len(num)
    r = num.sum() / den.sum()
    e = num - r * den
    var = m / (m - 1) * (e ** 2).sum() / den.sum() ** 2
    se = math.sqrt(var)
    from scipy.stats import t

    q = t.ppf(0.5 + level / 2, m - 1)
    return r, se, r - q * se, r + q * se


def _wilson(successes, trials, level):
    """Wilson score interval for binomial proportions (vectorised)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2)
    s = np.asarray(successes, float)
    n = np.asarray(trials, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        denom = 1 + z ** 2 / n
        centre = (p + z ** 2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z ** 2 / (4 * n ** 2)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def _conditional(c, n):
    prev = np.concatenate([[n], c[:-1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(prev > 0, c / np.where(prev > 0, prev, 1), np.nan)


def _percentile(x, level, n_clusters=None):
    """Percentile interval of replicate rows; with ``n_clusters``, expanded.

    The expanded percentile interval (Hesterberg 2015, "What teachers should
    know about the bootstrap", sec. 4.2) widens the tail probability to
    2 * Phi(-sqrt(n / (n - 1)) * t_(n-1)) so that the bootstrap's narrowness
    in small samples (variance divided by n instead of n - 1, normal instead
    of t quantiles) is undone.
    """
    alpha = 1 - level
    if n_clusters is not None and n_clusters > 1:
        from scipy.stats import norm, t

        q = t.ppf(1 - alpha / 2, n_clusters - 1) * math.sqrt(n_clusters / (n_clusters - 1))
        alpha = 2 * norm.sf(q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        lo, hi = np.nanquantile(x, [alpha / 2, 1 - alpha / 2], axis=0)
    return lo, hi


def _replicate_stats(rep, k, per_position):
    """AL, survival and conditional of every replicate row."""
    n = rep[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        al = 1 + rep[:, 1] / n
        if not per_position:
            return al, None, None
        c = rep[:, 2:]
        surv = c / n[:, None]
        prev = np.concatenate([n[:, None], c[:, :-1]], axis=1)
        cond = np.where(prev > 0, c / np.where(prev > 0, prev, 1), np.nan)
    return al, surv, cond


def _count_replicates(totals, k, per_position, n_resamples, rng):
    """Replicates for aggregate counts: steps drawn independently."""
    n, a = totals[0], totals[1]
    rep = np.empty((n_resamples, len(totals)))
    rep[:, 0] = n
    if per_position:
        c = totals[2:]
        # histogram of accepted lengths: h_j = c_j - c_(j+1), j = 0..k
        full = np.concatenate([[n], c, [0.0]])
        h = np.clip(full[:-1] - full[1:], 0, None)
        draws = rng.multinomial(int(n), h / h.sum(), size=n_resamples).astype(float)
        cstar = np.cumsum(draws[:, ::-1], axis=1)[:, ::-1][:, 1:]  # c_i = sum_{j>=i} h_j
        rep[:, 2:] = cstar
        rep[:, 1] = cstar.sum(axis=1)
    else:
        m = a / n
        sd = math.sqrt(max(m * (k - m), 0.0))  # Bhatia-Davis bound on the step variance
        rep[:, 1] = a + math.sqrt(n) * sd * rng.standard_normal(n_resamples)
    return rep


def _step_variance(totals, k, per_position):
    """Variance of accepted drafts per step from the survival counts."""
    n = totals[0]
    m = totals[1] / n
    if per_position:
        s = totals[2:] / n
        i = np.arange(1, k + 1)
        # E[L^2] = sum_i (2i - 1) P(L >= i)
        return max(float(((2 * i - 1) * s).sum() - m ** 2), 0.0), False
    return max(m * (k - m), 0.0), True


def fit_cell(observations, *, k, confidence_level=0.95, method="auto", n_resamples=9999,
             rng=None, thinking=None):
    """Estimate one cell's acceptance length with an interval.

    Parameters
    ----------
    observations : sequence of Observation
        The records of one cell (one model, head, variant, thinking mode and
        K).  Per-request records (``request`` set) allow a cluster bootstrap,
        per-interval records (``line`` set) batch means; anything else gets
        the count-based interval.  An empty sequence gives a failed cell
        (committed as ``N/A``).
    k : int
        Number of speculative tokens of the cell.
    confidence_level : float, default 0.95
    method : {"auto", "bootstrap", "batch-means", "count"}
        Interval method; "auto" picks the best the data allow.
    n_resamples : int, default 9999
        Bootstrap resamples (also used for the replicates the cross-K model
        pools).
    rng : numpy.random.Generator or int or None
        Seed or generator for the resampling.
    thinking : {"on", "off"} or None
        Thinking mode, recorded on the result.

    Returns
    -------
    CellFit

    Raises
    ------
    ParseError
        The cell has zero verification steps, or an observation's K (or
        per-position length) disagrees with ``k``.

    Warns
    -----
    LowSampleWarning
        Fewer than 10 requests (bootstrap) or 5 windows (batch means) back the
        interval, or the requested method is not possible and a weaker one is
        used.

    Examples
    --------
    >>> from goldenal.observation import Observation
    >>> obs = [Observation("a.log", 1, "vllm", "vllm-log", k=2, drafts=100,
    ...                    accepted=120, accepted_per_position=(70, 50))]
    >>> fit_cell(obs, k=2, rng=0).text
    '2.20'
    """
    _fit_cell_iv(k, confidence_level, method, n_resamples)
    rng = np.random.default_rng(rng)
    observations = list(observations)
    _check_k(observations, k, thinking)
    sources = tuple(dict.fromkeys(o.source for o in observations))
    nan_ci = ConfidenceInterval(math.nan, math.nan)
    if not observations:
        return CellFit(k=k, thinking=thinking, mean_acceptance_length=math.nan,
                       confidence_interval=nan_ci, confidence_level=confidence_level,
                       n_steps=None, interval_method="none", standard_error=math.nan,
                       failed=True, notes=("no observations: the cell failed",))

    counted = [o for o in observations if not o.mean_only]
    notes = []
    if not counted:
        means = [o.mean_al for o in observations if o.mean_al is not None]
        if not means:
            raise ParseError(f"cell {_cell_name(thinking, k)} has neither counts nor a mean",
                             **_where(observations[0]))
        if len(means) > 1:
            notes.append(f"plain average of {len(means)} printed means (no counts to weight by)")
        return CellFit(k=k, thinking=thinking, mean_acceptance_length=float(np.mean(means)),
                       confidence_interval=nan_ci, confidence_level=confidence_level,
                       n_steps=None, interval_method="none", standard_error=math.nan,
                       sources=sources, notes=tuple(notes))
    if len(counted) < len(observations):
        notes.append(f"{len(observations) - len(counted)} mean-only observations ignored "
                     "(counts present)")

    per_position = all(o.accepted_per_position is not None for o in counted)
    table = _table(counted, k, per_position)
    totals = table.sum(axis=0)
    n_steps = totals[0]
    if n_steps <= 0:
        raise ParseError(f"cell {_cell_name(thinking, k)} has zero verification steps: "
                         "was speculative decoding enabled and did the window cover traffic?",
                         **_where(counted[0]))
    al = 1.0 + totals[1] / n_steps

    per_request = all(o.request is not None for o in counted)
    windows = [o for o in counted if o.request is None and o.line is not None]
    chosen = method
    if method == "auto":
        if per_request:
            chosen = "bootstrap"
        elif len(windows) == len(counted) and len(windows) >= MIN_WINDOWS:
            chosen = "batch-means"
        else:
            chosen = "count"
    elif method == "bootstrap" and not per_request:
        warnings.warn(f"cell {_cell_name(thinking, k)}: no per-request data, "
                      "using the count-based interval", LowSampleWarning, stacklevel=2)
        chosen = "count"
    elif method == "batch-means" and len(counted) < 2:
        warnings.warn(f"cell {_cell_name(thinking, k)}: one window only, "
                      "using the count-based interval", LowSampleWarning, stacklevel=2)
        chosen = "count"
    if method == "auto" and len(windows) == len(counted) and 1 < len(windows) < MIN_WINDOWS:
        warnings.warn(f"cell {_cell_name(thinking, k)}: only {len(windows)} logging windows; "
                      "using the count-based interval (optimistic)", LowSampleWarning,
                      stacklevel=2)

    n_clusters = None
    level = confidence_level
    if chosen == "bootstrap":
        clusters = _group(counted, lambda o: (o.source, o.request))
        ctable = np.array([_table(g, k, per_position).sum(axis=0) for g in clusters])
        n_clusters = len(clusters)
        if n_clusters < MIN_CLUSTERS:
            warnings.warn(f"cell {_cell_name(thinking, k)}: bootstrap over only {n_clusters} "
                          "requests; the interval is doubtful", LowSampleWarning, stacklevel=2)
        rep = bootstrap_weights_apply(ctable, n_resamples, rng)
        al_r, surv_r, cond_r = _replicate_stats(rep, k, per_position)
        lo, hi = _percentile(al_r, level, n_clusters)
        se = float(np.std(al_r, ddof=1))
    elif chosen == "batch-means":
        ordered = sorted(counted, key=lambda o: (o.source, o.line or 0))
        wtable = _table(ordered, k, per_position)
        btable = batch_windows(wtable)
        m = n_clusters = btable.shape[0]
        if m < MIN_WINDOWS:
            warnings.warn(f"cell {_cell_name(thinking, k)}: batch means over only {m} batches; "
                          "the interval is doubtful", LowSampleWarning, stacklevel=2)
        else:
            ratio = totals[1] / n_steps
            tau = autocorrelation_time(wtable[:, 1] - ratio * wtable[:, 0])
            size = len(ordered) // m
            if tau > size:
                warnings.warn(f"cell {_cell_name(thinking, k)}: logging windows stay correlated "
                              f"over ~{tau:.0f} windows, longer than a batch ({size}); the "
                              "interval may be too narrow (log a longer run)", LowSampleWarning,
                              stacklevel=2)
        _, se_r, lo_r, hi_r = _ratio_ci_batch(btable[:, 1], btable[:, 0], level)
        lo, hi, se = 1 + lo_r, 1 + hi_r, se_r
        rep = bootstrap_weights_apply(btable, n_resamples, rng)
    else:
        var, bound = _step_variance(totals, k, per_position)
        se = math.sqrt(var / n_steps)
        from scipy.stats import norm

        q = norm.ppf(0.5 + level / 2)
        lo, hi = al - q * se, al + q * se
        notes.append("count-based interval: optimistic, it ignores correlation within requests")
        if bound:
            notes.append("no per-position counts: step variance bounded (Bhatia-Davis)")
        rep = _count_replicates(totals, k, per_position, n_resamples, rng)

    pp = None
    if per_position:
        c = totals[2:]
        surv = c / n_steps
        cond = _conditional(c, n_steps)
        if chosen == "bootstrap":
            s_lo, s_hi = _percentile(surv_r, level, n_clusters)
            c_lo, c_hi = _percentile(cond_r, level, n_clusters)
        elif chosen == "batch-means":
            s_lo, s_hi, c_lo, c_hi = (np.empty(k) for _ in range(4))
            prev = np.concatenate([btable[:, :1], btable[:, 2:-1]], axis=1)
            for i in range(k):
                _, _, s_lo[i], s_hi[i] = _ratio_ci_batch(btable[:, 2 + i], btable[:, 0], level)
                if prev[:, i].sum() > 0:
                    _, _, c_lo[i], c_hi[i] = _ratio_ci_batch(btable[:, 2 + i], prev[:, i],
                                                             level)
                else:
                    c_lo[i] = c_hi[i] = np.nan
            s_lo, s_hi = np.clip(s_lo, 0, 1), np.clip(s_hi, 0, 1)
            c_lo, c_hi = np.clip(c_lo, 0, 1), np.clip(c_hi, 0, 1)
        else:
            s_lo, s_hi = _wilson(c, n_steps, level)
            c_lo, c_hi = _wilson(c, np.concatenate([[n_steps], c[:-1]]), level)
        pp = PerPosition(positions=tuple(range(1, k + 1)), counts=tuple(int(x) for x in c),
                         n_steps=int(n_steps), survival=surv, conditional=cond,
                         confidence_level=level, interval_method=chosen,
                         survival_low=s_lo, survival_high=s_hi,
                         conditional_low=c_lo, conditional_high=c_hi)

    draft_tokens = None
    if all(o.draft_tokens is not None for o in counted):
        draft_tokens = int(sum(o.draft_tokens for o in counted))
    return CellFit(k=k, thinking=thinking, mean_acceptance_length=float(al),
                   confidence_interval=ConfidenceInterval(float(lo), float(hi)),
                   confidence_level=level, n_steps=int(n_steps), interval_method=chosen,
                   standard_error=float(se), accepted=int(totals[1]),
                   draft_tokens=draft_tokens, n_clusters=n_clusters, per_position=pp,
                   sources=sources, notes=tuple(notes), replicates=rep)
