"""One cell: pooled acceptance length, its interval, per-position acceptance.

Counts follow docs/formats.md §0.2: N verification steps, c_i steps whose
first i drafts were all accepted, AL = 1 + sum(accepted) / N,
S(i) = c_i / N, a(i) = c_i / c_(i-1) with c_0 = N.

The estimand is the AL of the prompt population, E[tokens] / E[steps].  A
request's steps share its profile and a request can span many log windows,
so intervals come only from independent units: requests (bootstrap-t of the
ratio of totals), at least ``MIN_UNITS`` runs, or batches of log windows at
least one request span long (linearised SE, Student t).  Otherwise, or when
every unit accepted every draft (or none), or the data contradict the stated
output cap, the cell gets its value, no interval, and the reason.  Intervals
are clipped to [1, K + 1].  Why each rule: docs/statistics.md.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from goldenal.core.errors import LowSampleWarning, ParseError
from goldenal.stats.results import Check, CellFit, ConfidenceInterval, PerPosition

METHODS = ("auto", "bootstrap", "runs", "batch-means")

# Fewer independent units than this give no interval (a t interval on 4 batches is
# wider than the AL range it is meant to pin, and resampling 5 requests is not a sample).
MIN_UNITS = 10
# What the mixed study of docs/statistics.md measured for the zero-inflated interval.
ZERO_INFLATED_COVERAGE = "94-98%"
# Where a cell without an interval is told how to get one.
PLAN_POINTER = ("see `goldenal plan` and docs/statistics.md, \"Planning a measurement\", "
                "for the requests or runs an interval needs")
# Rows of the weight matrix generated at once (bounds memory to ~chunk x n).
_CHUNK_CELLS = 4_000_000


def is_int(x):
    """An integer, numpy's included, but not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _fit_cell_iv(k, confidence_level, method, n_resamples, max_request_windows):
    if not is_int(k) or k < 1:
        raise ValueError("`k` must be a positive integer")
    if not 0 < confidence_level < 1:
        raise ValueError("`confidence_level` must be between 0 and 1")
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {', '.join(METHODS)}")
    if not is_int(n_resamples) or n_resamples < 100:
        raise ValueError("`n_resamples` must be an integer >= 100")
    if max_request_windows is not None and (not is_int(max_request_windows)
                                            or max_request_windows < 1):
        raise ValueError("`max_request_windows` must be a positive integer or None")


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
    """Totals of ``n_resamples`` cluster-bootstrap resamples of ``table`` rows."""
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


def batch_windows(table, size):
    """Sums of consecutive windows in batches of ``size`` (the remainder joins the last)."""
    n = table.shape[0]
    m = max(n // size, 1)
    index = np.minimum(np.arange(n) // size, m - 1)
    out = np.zeros((m, table.shape[1]))
    np.add.at(out, index, table)
    return out


def ratio_interval(num, den, level):
    """Ratio of totals with its linearised cluster standard error and a t interval."""
    from scipy.stats import t

    num = np.asarray(num, float)
    den = np.asarray(den, float)
    m = len(num)
    r = num.sum() / den.sum()
    e = num - r * den
    se = math.sqrt(m / (m - 1) * float((e ** 2).sum())) / den.sum()
    q = t.ppf(0.5 + level / 2, m - 1)
    return r, se, r - q * se, r + q * se


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


def _replicate_stats(rep, per_position):
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


def studentized_ratio_interval(units, level, n_resamples, rng, *, k=None):
    """Bootstrap-t interval of AL = 1 + sum(accepted) / sum(steps), widened on its skewed side.

    Whole units (requests) are resampled and every resample's ratio r* is
    studentized by its own linearised standard error; q is the ``level``
    quantile of |r* - r| / se* (the symmetric bootstrap-t; Hall 1992, "The
    Bootstrap and Edgeworth Expansion", sec. 3.6).  On the side the residuals
    e = a - r n skew towards (the lower side when sum e^3 < 0), the quantile
    is at least Student t's with the Satterthwaite degrees of freedom of the
    variance estimate, (sum e^2)^2 / sum e^4: the standard error rests on the
    few large residuals of long requests, and a sample short of them has a
    high estimate and a small standard error at once, which its resamples
    cannot show (docs/statistics.md, "Short requests that accept everything").

    With ``k`` (as ``fit_cell`` calls it), q is at least t's with the units
    that accepted some but not every draft, minus one, as degrees of freedom;
    and where a few units short of K sit among units that accept every draft
    (:func:`zero_inflated_case`), the interval (if the resamples have spread)
    is :func:`zero_inflated_interval`.
    """
    from scipy.stats import t

    steps, acc = units[:, 0], units[:, 1]
    m = units.shape[0]
    extra = np.column_stack([acc * acc, acc * steps, steps * steps])
    rep_all = bootstrap_weights_apply(np.column_stack([units, extra]), n_resamples, rng)
    rep = rep_all[:, :units.shape[1]]
    s_aa, s_an, s_nn = rep_all[:, -3], rep_all[:, -2], rep_all[:, -1]
    r = acc.sum() / steps.sum()
    e = acc - r * steps
    se = math.sqrt(m / (m - 1) * float((e ** 2).sum())) / steps.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        r_star = rep[:, 1] / rep[:, 0]
        # sum of w (a - r* n)^2 over the resample, expanded in the resampled sums
        ss = s_aa - 2 * r_star * s_an + r_star ** 2 * s_nn
        # the expansion cancels: below rounding noise of its terms it is exactly no spread
        ss = np.where(ss <= 1e-9 * (s_aa + r_star ** 2 * s_nn), 0.0, ss)
        se_star = np.sqrt(m / (m - 1) * ss) / rep[:, 0]
        t_star = np.abs(r_star - r) / se_star
    if se == 0:
        return math.nan, math.nan, se, rep
    # A resample without spread (se* = 0, e.g. only requests that accepted every draft)
    # has no studentized value: it counts as infinite, never as absent, so that a
    # sample resting on a few deviating units gets no interval rather than a narrow one.
    t_star = np.sort(np.where(np.isfinite(t_star), t_star, np.inf))
    if not np.isfinite(t_star[math.ceil(level * (t_star.size - 1))]):
        return math.nan, math.nan, se, rep
    q = float(np.quantile(t_star, level))
    if k is not None:
        if zero_inflated_case(units, k):
            return (*zero_inflated_interval(units, k, level), se, rep)
        short = acc < k * steps
        q = max(q, float(t.ppf(0.5 + level / 2, max(int((short & (acc > 0)).sum()) - 1, 1))))
    q_low, q_high = _skewed_side(e, q, level)
    return 1 + r - q_low * se, 1 + r + q_high * se, se, rep


def _nu(e):
    """Satterthwaite's degrees of freedom of the variance estimate sum e^2."""
    e2 = e ** 2
    return float(e2.sum() ** 2 / (e2 ** 2).sum()) if e2.any() else math.inf


def _skewed_side(e, q, level):
    """(q below, q above): at least t(Satterthwaite df) on the side residuals ``e`` skew to."""
    from scipy.stats import t

    e2 = e ** 2
    if not e2.any():
        return q, q
    skewed = max(q, float(t.ppf(0.5 + level / 2, _nu(e))))
    third = float((e ** 3).sum())
    return (skewed, q) if third < 0 else (q, skewed) if third > 0 else (q, q)


def short_and_full(units, k):
    """Units short of K per step, and units with steps that accept every draft."""
    steps, acc = units[:, 0], units[:, 1]
    return int((acc < k * steps).sum()), int((acc >= k * steps)[steps > 0].sum())


def zero_inflated_case(units, k):
    """(short, full) where the zero-inflated interval applies, else None: 2 to
    ``MIN_UNITS`` - 1 units fall short of K per step, too few for the bootstrap-t,
    and at least two accept every draft."""
    short, full = short_and_full(units, k)
    return (short, full) if 2 <= short < MIN_UNITS and full >= 2 else None


def zero_inflated_interval(units, k, level):
    """AL = K + 1 - theta w from the units short of K per step and those accepting every draft.

    Units that accept every draft have no deficit d = K n - a, so K + 1 - AL
    = theta w: theta the deficit per step of the units with one, w their
    share of the steps, logit w = logit p + log mean(n | d > 0) -
    log mean(n | d = 0), p the share of units with a deficit.  p gets
    Wilson's score interval, the mean lengths t intervals on the log scale
    (the skewed side at t(nu) as in :func:`studentized_ratio_interval`), and
    their sum t with Welch-Satterthwaite degrees of freedom; log theta gets
    t(nu) on both sides.  log theta + log w combines the limits by the method
    of variance estimates recovery (Zou and Donner 2008, Stat Med 27:1693;
    Zou, Taleban and Huo 2009, Comput Stat Data Anal 53:3755) as if the two
    were independent: their correlation would rest on the same 2-9 units, and
    a negative estimate narrowed the interval exactly in the samples whose
    few units understate the deficit (docs/statistics.md).
    """
    from scipy.special import expit, logit
    from scipy.stats import binomtest, norm, t

    steps, acc = units[:, 0], units[:, 1]
    short = acc < k * steps
    m, v = len(steps), int(short.sum())
    ns, nf, d = steps[short], steps[~short], k * steps[short] - acc[short]

    def log_ratio(x, n, both):  # log(sum x / sum n): (estimate, se, se, df below, df above)
        e = x - x.sum() / n.sum() * n
        se = math.sqrt(len(x) / (len(x) - 1) * float((e ** 2).sum())) / x.sum()
        nu, third = min(len(x) - 1, _nu(e)), float((e ** 3).sum())
        return (math.log(x.sum() / n.sum()), se, se, nu if both or third < 0 else len(x) - 1,
                nu if both or third > 0 else len(x) - 1)

    z = norm.ppf(0.5 + level / 2)
    p = binomtest(v, m).proportion_ci(level, method="wilson")
    lp = logit(v / m)
    f, se_f, _, df_f_low, df_f_high = log_ratio(nf, np.ones(m - v), False)
    parts = [(lp, (lp - logit(p.low)) / z, (logit(p.high) - lp) / z, math.inf, math.inf),
             log_ratio(ns, np.ones(v), False), (-f, se_f, se_f, df_f_high, df_f_low)]
    logit_w = [sum(x[0] for x in parts)]
    for side in (1, 2):  # below, above
        var = sum(x[side] ** 2 for x in parts)
        den = sum(x[side] ** 4 / x[side + 2] for x in parts)
        q = t.ppf(0.5 + level / 2, var ** 2 / den if den else math.inf)
        logit_w.append(logit_w[0] + (2 * side - 3) * q * math.sqrt(var))
    w = [math.log(expit(x)) for x in logit_w]
    theta, se, _, nu, _ = log_ratio(d, ns, True)
    q = t.ppf(0.5 + level / 2, nu) * se
    below, above = (math.hypot(q, x) for x in (w[0] - w[1], w[2] - w[0]))
    return k + 1 - math.exp(theta + w[0] + above), k + 1 - math.exp(theta + w[0] - below)


def request_span_windows(window_steps, *, output_len, concurrency, step_rate=None):
    """The longest request's span in logging windows, from the output cap and step rate."""
    if step_rate is None:
        steps = np.asarray(window_steps, float)
        steps = steps[steps > 0]
        if steps.size == 0:
            return 1
        step_rate = float(np.median(steps)) / max(int(concurrency), 1)
    return max(1, math.ceil(float(output_len) / max(step_rate, 1e-12)))


def _tokens(observations):
    """Tokens produced: every verification step and every accepted draft is one."""
    return sum(o.drafts + o.accepted for o in observations)


def check_output_cap(observations, *, k, output_len, n_requests=None):
    """Whether the data show a request longer than the run's stated output cap: more than
    ``output_len + k`` tokens (a last step may overshoot by K drafts; docs/statistics.md)."""
    counted = [o for o in observations if not o.mean_only]
    if output_len is None:
        return Check("skipped", "no output cap stated (dataset.output_len in run.yaml)")
    cap = int(output_len)
    if not counted:
        return Check("skipped", "no counts to measure requests by")
    if all(o.request is not None for o in counted):
        group = max(_group(counted, lambda o: (o.source, o.request)), key=_tokens)
        longest, first = _tokens(group), group[0]
        if longest > cap + k:
            return Check("failed", f"request {first.request} ({first.source}) produced "
                                   f"{longest} tokens, more than run.yaml's dataset.output_len "
                                   f"{cap} (plus the {k} drafts a last step may overshoot): "
                                   "the stated cap is wrong; correct dataset.output_len")
        return Check("done", f"longest request {longest} tokens, within dataset.output_len "
                             f"{cap} (+{k})")
    if n_requests:
        total = _tokens(counted)
        mean = total / n_requests
        if mean > cap + k:
            return Check("failed", f"{total} tokens over {n_requests} requests "
                                   f"(dataset.num_prompts) is {mean:.0f} per request, more "
                                   f"than run.yaml's dataset.output_len {cap}: some request "
                                   "is longer than the stated cap; correct "
                                   "dataset.output_len")
        return Check("done", f"mean request {mean:.0f} tokens (the records show no single "
                             f"request), within dataset.output_len {cap}")
    return Check("skipped", "the records show no single request and the run states no "
                            "request count (dataset.num_prompts) to bound the longest by")


def _units(counted, k, per_position, chosen, max_request_windows):
    """Per-unit totals (rows: steps, accepted[, c_1..c_k]) for the chosen method."""
    if chosen in ("bootstrap", "runs"):
        key = (lambda o: (o.source, o.request)) if chosen == "bootstrap" else (lambda o: o.source)
        return np.array([_table(g, k, per_position).sum(axis=0) for g in _group(counted, key)])
    # batch means: consecutive windows of each run (file) in batches of the request span
    rows = []
    for group in _group(counted, lambda o: o.source):
        ordered = sorted(group, key=lambda o: o.line or 0)
        rows.append(batch_windows(_table(ordered, k, per_position), max_request_windows))
    return np.concatenate(rows)


def _choose(counted, method, max_request_windows, name):
    """(method, reason): the interval method the data allow, or None and why not."""
    per_request = all(o.request is not None for o in counted)
    n_sources = len({o.source for o in counted})
    windows = all(o.request is None and o.line is not None for o in counted)
    if method in ("auto", "bootstrap") and per_request:
        return "bootstrap", None
    if method == "bootstrap":
        return None, "no per-request records to resample"
    if method in ("auto", "runs") and n_sources >= MIN_UNITS:
        return "runs", None
    if method == "runs":
        return None, f"only {n_sources} independent runs (files)"
    if windows and max_request_windows is not None:
        return "batch-means", None
    if windows:
        return None, (f"{len(counted)} log windows and no known request span: a request can "
                      "outlast any batch of windows; give per-request records, the output cap "
                      "and concurrency (dataset.output_len, concurrency in run.yaml), or "
                      f"{MIN_UNITS} or more independent runs; {PLAN_POINTER}")
    if method == "batch-means":
        return None, "the records are not logging windows"
    return None, (f"{len(counted)} aggregate count(s) from {n_sources} run(s): steps are not "
                  f"independent; give per-request records or {MIN_UNITS} or more "
                  f"independent runs; {PLAN_POINTER}")


def _unit_word(method):
    return {"bootstrap": "requests", "runs": "runs", "batch-means": "batches"}[method]


def fit_cell(observations, *, k, confidence_level=0.95, method="auto", n_resamples=9999,
             rng=None, thinking=None, max_request_windows=None, output_len=None,
             n_requests=None):
    """Estimate one cell's acceptance length with an interval from independent units.

    Parameters
    ----------
    observations : sequence of Observation
        The records of one cell; an empty sequence gives a failed cell (``N/A``).
    k : int
        The cell's number of speculative tokens.
    confidence_level : float, default 0.95
    method : {"auto", "bootstrap", "runs", "batch-means"}
        Interval method; "auto" picks the one the data allow: "bootstrap"
        (studentized bootstrap over requests) for per-request records, "runs" (one unit per
        file) with at least 10 files, "batch-means" for log windows when
        ``max_request_windows`` is known.  Anything else, and any method
        with fewer than 10 units, gives no interval, with the reason in
        ``notes`` and ``interval_reason``.
    n_resamples : int, default 9999
        Bootstrap resamples (also used for the per-position intervals and
        the replicates the cross-K model pools).
    rng : numpy.random.Generator or int or None
        Seed or generator for the resampling.
    thinking : {"on", "off"} or None
        Thinking mode, recorded on the result.
    max_request_windows : int, optional
        Logging windows the longest request can span (:func:`request_span_windows`):
        the least length of a batch of log windows.
    output_len : int, optional
        The run's stated output cap (``dataset.output_len``), checked against the data
        (:func:`check_output_cap`): a longer request leaves the cell without interval.
    n_requests : int, optional
        Requests the cell served (``dataset.num_prompts``), to check log windows' cap.

    Returns
    -------
    CellFit
        With ``checks``: ``interval`` and ``output_cap``, each a
        :class:`~goldenal.stats.results.Check` (status and reason).

    Raises
    ------
    ParseError
        Zero verification steps, or an observation's K (or per-position length) not ``k``.

    Warns
    -----
    LowSampleWarning
        The cell gets no interval (fewer than 10 independent units, or none
        known), naming the reason.

    Examples
    --------
    >>> from goldenal.core.observation import Observation
    >>> obs = [Observation("a.log", 1, "vllm", "vllm-log", k=2, drafts=100,
    ...                    accepted=120, accepted_per_position=(70, 50))]
    >>> fit_cell(obs, k=2, rng=0).text
    '2.20'
    """
    _fit_cell_iv(k, confidence_level, method, n_resamples, max_request_windows)
    rng = np.random.default_rng(rng)
    observations = list(observations)
    _check_k(observations, k, thinking)
    sources = tuple(dict.fromkeys(o.source for o in observations))
    nan_ci = ConfidenceInterval(math.nan, math.nan)
    if not observations:
        return CellFit(k=k, thinking=thinking, mean_acceptance_length=math.nan,
                       confidence_interval=nan_ci, confidence_level=confidence_level,
                       n_steps=None, interval_method="none", standard_error=math.nan,
                       failed=True, notes=("no observations: the cell failed",),
                       checks={"interval": Check("skipped", "the cell failed"),
                               "output_cap": Check("skipped", "the cell failed")})

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
                       sources=sources, notes=tuple(notes),
                       interval_reason="printed means only, no counts",
                       checks={"interval": Check("skipped", "printed means only, no counts"),
                               "output_cap": Check("skipped", "printed means only")})
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
    name = _cell_name(thinking, k)
    level = confidence_level
    draft_tokens = None
    if all(o.draft_tokens is not None for o in counted):
        draft_tokens = int(sum(o.draft_tokens for o in counted))
    base = dict(k=k, thinking=thinking, mean_acceptance_length=float(al),
                confidence_level=level, n_steps=int(n_steps), accepted=int(totals[1]),
                draft_tokens=draft_tokens, sources=sources)

    chosen, reason = _choose(counted, method, max_request_windows, name)
    units = None
    if chosen is not None:
        units = _units(counted, k, per_position, chosen, max_request_windows)
    m = 0 if units is None else units.shape[0]
    cap = check_output_cap(counted, k=k, output_len=output_len, n_requests=n_requests)
    if cap.status == "failed":
        reason = cap.reason
    elif chosen is not None and m < MIN_UNITS:
        reason = (f"only {m} independent {_unit_word(chosen)} (fewer than {MIN_UNITS}); "
                  f"no honest interval; {PLAN_POINTER}")
    elif chosen is not None and totals[1] in (0, k * n_steps):
        # P(a unit accepts everything) bounds a *per-unit* mean, not the step-weighted AL:
        # a request never sampled, with lower acceptance and many more steps, can pull the
        # population AL down by any amount (and up, when none was accepted).
        reason = (f"{'every' if totals[1] else 'no'} draft accepted in all {m} "
                  f"{_unit_word(chosen)}: the step-weighted AL has no valid interval from "
                  "units that do not vary (an unseen longer request with other acceptance "
                  f"moves it by any amount); {PLAN_POINTER}")
    pp_point = None
    if per_position:
        c = totals[2:]
        pp_point = (c, c / n_steps, _conditional(c, n_steps))

    def no_interval(reason):
        warnings.warn(f"cell {name}: no interval: {reason}", LowSampleWarning, stacklevel=3)
        notes.append(f"no interval: {reason}")
        pp = None
        if per_position:
            c, surv, cond = pp_point
            nan = np.full(k, np.nan)
            pp = PerPosition(positions=tuple(range(1, k + 1)), counts=tuple(int(x) for x in c),
                             n_steps=int(n_steps), survival=surv, conditional=cond,
                             confidence_level=level, interval_method="none",
                             survival_low=nan, survival_high=nan,
                             conditional_low=nan, conditional_high=nan)
        checks = {"interval": Check("skipped", reason), "output_cap": cap}
        return CellFit(**base, confidence_interval=nan_ci, interval_method="none",
                       standard_error=math.nan, n_clusters=m or None, per_position=pp,
                       notes=tuple(notes), interval_reason=reason, units=units,
                       unit_kind=None if chosen is None else _unit_word(chosen),
                       checks=checks)

    if reason is not None:
        return no_interval(reason)

    if chosen == "bootstrap":
        lo, hi, se, rep = studentized_ratio_interval(units, level, n_resamples, rng, k=k)
    else:
        rep = bootstrap_weights_apply(units, n_resamples, rng)
        _, se, lo_r, hi_r = ratio_interval(units[:, 1], units[:, 0], level)
        lo, hi = 1 + lo_r, 1 + hi_r
    if not (math.isfinite(lo) and math.isfinite(hi)) or se == 0:
        return no_interval(f"the {m} {_unit_word(chosen)} barely vary: every unit alike, or "
                           f"more than {100 * (1 - level):g}% of the resamples without any "
                           "spread (a few units differ from all the others); no valid "
                           f"interval; {PLAN_POINTER}")
    # clipped to the support: AL lies in [1, K + 1], so clipping never removes the truth
    lo, hi = max(lo, 1.0), min(hi, k + 1.0)
    _, surv_r, cond_r = _replicate_stats(rep, per_position)

    pp = None
    if per_position:
        c, surv, cond = pp_point
        if chosen == "bootstrap":
            s_lo, s_hi = _percentile(surv_r, level, m)
            c_lo, c_hi = _percentile(cond_r, level, m)
        else:
            s_lo, s_hi, c_lo, c_hi = (np.empty(k) for _ in range(4))
            prev = np.concatenate([units[:, :1], units[:, 2:-1]], axis=1)
            for i in range(k):
                _, _, s_lo[i], s_hi[i] = ratio_interval(units[:, 2 + i], units[:, 0], level)
                if prev[:, i].sum() > 0:
                    _, _, c_lo[i], c_hi[i] = ratio_interval(units[:, 2 + i], prev[:, i], level)
                else:
                    c_lo[i] = c_hi[i] = np.nan
            s_lo, s_hi = np.clip(s_lo, 0, 1), np.clip(s_hi, 0, 1)
            c_lo, c_hi = np.clip(c_lo, 0, 1), np.clip(c_hi, 0, 1)
        pp = PerPosition(positions=tuple(range(1, k + 1)), counts=tuple(int(x) for x in c),
                         n_steps=int(n_steps), survival=surv, conditional=cond,
                         confidence_level=level, interval_method=chosen,
                         survival_low=s_lo, survival_high=s_hi,
                         conditional_low=c_lo, conditional_high=c_hi)
    if chosen == "batch-means":
        notes.append(f"batches of {max_request_windows} windows, at least the longest "
                     "request's span")
    done = None
    mixed = zero_inflated_case(units, k) if chosen == "bootstrap" else None
    if mixed:  # the zero-inflated interval: say so, and how close to its level it holds
        short, full = mixed
        done = (f"{short} requests short of K among {full} accepting every draft: the "
                "zero-inflated interval (their share, deficit per step and lengths combined), "
                f"{ZERO_INFLATED_COVERAGE} coverage at 95% in the mixed study of "
                f"docs/statistics.md; it rests on those {short}: `goldenal plan` gives the "
                f"requests for {MIN_UNITS}")
    return CellFit(**base, confidence_interval=ConfidenceInterval(float(lo), float(hi)),
                   interval_method=chosen, standard_error=float(se), n_clusters=m,
                   per_position=pp, notes=tuple(notes), replicates=rep, units=units,
                   unit_kind=_unit_word(chosen),
                   checks={"interval": Check("done", done), "output_cap": cap})
