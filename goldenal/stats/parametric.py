"""Parametric conditional-acceptance profiles for chain drafting (``constant`` and
``geometric``; how they are fitted and judged: docs/statistics.md, "Parametric profiles")."""

from __future__ import annotations

import math

import numpy as np

from goldenal.stats.results import ParametricFit

FORMS = ("constant", "geometric")
_EPS = 1e-9


def conditional_profile(form, params, k):
    """a(1..k) of a parametric form (clipped to [0, 1])."""
    i = np.arange(k)
    if form == "constant":
        a = np.full(k, params[0], float)
    elif form == "geometric":
        a = params[0] * params[1] ** i
    else:
        raise ValueError(f"`form` must be one of {', '.join(FORMS)}")
    return np.clip(a, 0.0, 1.0)


def al_from_conditional(a):
    """AL(K) for K = 1..len(a): 1 + cumulative sum of survival prod a(j)."""
    return 1.0 + np.cumsum(np.cumprod(a))


def _result(form, res, k, **judged):
    a = conditional_profile(form, res.x, k)
    return ParametricFit(form=form, params=dict(zip(("p", "r"), map(float, res.x))),
                         success=bool(res.success), message=str(res.message), **judged,
                         conditional=tuple(float(x) for x in a),
                         predicted_al={i + 1: float(v)
                                       for i, v in enumerate(al_from_conditional(a))})


def _start(form, a_hat):
    good = a_hat[np.isfinite(a_hat)]
    p0 = float(np.clip(good[0] if len(good) else 0.5, 0.05, 0.95))
    return [p0] if form == "constant" else [p0, 0.95]


def _bounds(form):
    return [(_EPS, 1 - _EPS)] if form == "constant" else [(_EPS, 1 - _EPS), (0.05, 1.5)]


def fit_parametric_counts(num, den, *, replicates=None, alpha=0.05):
    """Fit both forms to pooled per-position counts."""
    from scipy.optimize import minimize
    from scipy.stats import chi2

    num, den = np.asarray(num, float), np.asarray(den, float)
    ok = den > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        a_hat = np.where(ok, num / np.where(ok, den, 1), np.nan)
    k = len(num)
    prec = None
    if replicates is not None:
        rep = replicates[:, ok]
        rep = rep[np.all(np.isfinite(rep), axis=1)]
        if rep.shape[0] > 10 * max(1, ok.sum()):
            prec = np.linalg.pinv(np.atleast_2d(np.cov(rep, rowvar=False)))
    out = []
    for form in FORMS:
        df = int(ok.sum()) - len(_bounds(form))  # one bound per parameter
        if prec is not None:
            def objective(x, form=form):
                d = a_hat[ok] - conditional_profile(form, x, k)[ok]
                return float(d @ prec @ d)
            name = "chi2 (minimum distance, resampling covariance)"
        else:
            def objective(x, form=form):
                a = np.clip(conditional_profile(form, x, k)[ok], _EPS, 1 - _EPS)
                return float(-(num[ok] * np.log(a) + (den[ok] - num[ok]) * np.log1p(-a)).sum())
            name = "G (binomial likelihood ratio)"
        res = minimize(objective, _start(form, a_hat), method="L-BFGS-B", bounds=_bounds(form))
        if prec is not None:
            stat = float(res.fun)
        else:
            sat = np.clip(a_hat[ok], _EPS, 1 - _EPS)
            ll_sat = (num[ok] * np.log(sat) + (den[ok] - num[ok]) * np.log1p(-sat)).sum()
            stat = float(max(2 * (ll_sat + res.fun), 0.0))
        pvalue = float(chi2.sf(stat, df)) if df > 0 else None
        out.append(_result(form, res, k, statistic_name=name, statistic=stat, df=df,
                           pvalue=pvalue,
                           adequate=bool(res.success and (pvalue is None or pvalue >= alpha))))
    return tuple(out)


def fit_parametric_means(means, *, tolerance=0.03):
    """Fit both forms to a curve of means AL(K) by least squares."""
    from scipy.optimize import least_squares

    ks = np.array(sorted(means))
    y = np.array([float(means[k]) for k in ks])
    kmax = int(ks.max())
    out = []
    for form in FORMS:
        def resid(x, form=form):
            return al_from_conditional(conditional_profile(form, x, kmax))[ks - 1] - y
        lo, hi = zip(*_bounds(form))
        res = least_squares(resid, _start(form, np.array([y[0] - 1])), bounds=(lo, hi))
        r = resid(res.x)
        worst = float(np.max(np.abs(r)))
        out.append(_result(
            form, res, kmax,
            statistic_name=f"max |residual| (RMSE {math.sqrt(float(np.mean(r ** 2))):.4f})",
            statistic=worst, df=len(ks) - len(_bounds(form)), pvalue=None,
            adequate=bool(res.success and worst <= tolerance)))
    return tuple(out)
