"""``speculation_profile.json`` (schema "1.0"): export cells, read profiles back; with both
vectors (docs/policy.md §4): ``marginal_accept_rates`` (S(i), vLLM) and
``conditional_accept_rates`` (a(i), Dynamo's mocker)."""

import json
import math
import os

from goldenal.core.acceptance import (conditional_rates, histogram_from_survival,
                                      implied_survival, is_survival)
from goldenal.core.errors import PolicyError, UnknownCurve
from goldenal.core.files import write_text_atomic
from goldenal.readers.profile import SCHEMA_VERSION, read_profile  # noqa: F401 (re-export)
# Tolerance of the mean-consistency check (the convention's default).
CONSISTENCY_TOLERANCE = 0.02


def _accept_length_model(method, chain=None):
    if chain is None:
        from goldenal.stats.curve import is_chain_method

        chain = is_chain_method(method)
    return "chain_analytic" if chain else "measured_per_k"


def _checkpoint(name):
    if not name:
        return None
    # only the org/model part: a profile is published, local paths are not portable
    parts = [p for p in str(name).replace("\\", "/").split("/") if p]
    return {"id": "/".join(parts[-2:])}


def _r6(x):
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def validation_block(mean, marginal, tolerance=CONSISTENCY_TOLERANCE):
    """The ``validation`` object: mean consistency and marginal monotonicity."""
    implied = 1.0 + sum(marginal)
    delta = abs(implied - mean)
    violations = [{"position": i, "value": marginal[i], "previous": marginal[i - 1]}
                  for i in range(1, len(marginal)) if marginal[i] > marginal[i - 1] + 1e-9]
    return {
        "mean_consistency": {"implied_mean_accept_length": _r6(implied),
                             "reported_mean_accept_length": _r6(mean),
                             "abs_delta": _r6(delta), "tolerance": tolerance,
                             "passed": bool(delta <= tolerance)},
        "marginal_monotonicity": {"passed": not violations, "violations": violations},
    }


def _constant_survival(al, k):
    p = constant_rate_for_mean(al, k)
    return [p ** i for i in range(1, k + 1)]


def constant_rate_for_mean(al, k):
    """The constant conditional rate p with 1 + p + ... + p^K = AL."""
    from scipy.optimize import brentq

    target = al - 1.0
    if target <= 0:
        return 0.0
    if target >= k:
        return 1.0
    return float(brentq(lambda p: sum(p ** i for i in range(1, k + 1)) - target, 0.0, 1.0))


def _histogram(steps, per_position):
    """``{length: steps}`` (length 1 = no draft accepted) from per-position counts."""
    return {j + 1: int(n) for j, n in enumerate(histogram_from_survival(steps, per_position)) if n}


def build_profile(*, k, mean, marginal, method, model=None, draft=(), variant=None,
                  accept_length_by_k=None, histogram=None, chain=None,
                  measurement_conditions=None, mean_per_request=None, measured=True):
    """A schema-1.0 profile from a per-step mean and the survival S(1..K) (``marginal``)."""
    marginal = [float(x) for x in marginal]
    if len(marginal) != k:
        raise ValueError(f"`marginal` must have K={k} entries, got {len(marginal)}")
    # an undefined rate (after a zero survival) is published as 0: nothing reaches it
    conditional = [0.0 if a is None else float(a) for a in conditional_rates(marginal)]
    by_k = {**(accept_length_by_k or {}), k: mean}
    model_kind = _accept_length_model(method, chain)
    return {
        "schema_version": SCHEMA_VERSION,
        "measured": bool(measured),
        "method": method,
        "draft_checkpoint": _checkpoint(draft[0]) if draft else None,
        "target_model": _checkpoint(model) if model else None,
        "num_speculative_tokens": k,
        "block_size": None,
        "max_supported_k": k if model_kind == "measured_per_k" else None,
        "verification_method": ("block" if (variant or {}).get("rejection_sample_method")
                                == "block" else "longest_prefix"),
        "conditional_accept_rates": [round(x, 6) for x in conditional],
        "marginal_accept_rates": [round(x, 6) for x in marginal],
        "mean_accept_length": _r6(mean),
        "mean_accept_length_per_request": _r6(mean_per_request),
        "accept_length_model": model_kind,
        "accept_length_by_k": {str(kk): _r6(v) for kk, v in sorted(by_k.items())},
        "acceptance_length_histogram": ({str(length): int(n) for length, n in
                                         sorted(histogram.items())} if histogram else None),
        "per_category": None,
        "measurement_conditions": measurement_conditions or None,
        "validation": validation_block(mean, marginal),
    }


def _conditions(provenance, thinking, extra=None):
    prov = provenance or {}
    out = {"thinking": thinking}
    out.update({key: prov[key] for key in ("dataset", "category", "output_len", "engine",
                                           "engine_version", "hardware", "source_run", "date")
                if prov.get(key) is not None})
    sampling = (prov.get("sampling") or {}).get(f"thinking_{thinking}")
    if sampling:
        out["sampling"] = sampling
    out.update(extra or {})
    return out


def profile_from_cell(cell, *, method, model=None, draft=(), variant=None,
                      provenance=None, accept_length_by_k=None, chain=None, measured=True):
    """Profile of a fitted cell: measured vectors, else the constant rate giving the mean."""
    if cell.failed:
        raise ValueError(f"cell thinking {cell.thinking} K={cell.k} failed (N/A); "
                         "nothing to export")
    extra = {"interval": {"low": _r6(cell.confidence_interval.low),
                          "high": _r6(cell.confidence_interval.high),
                          "level": cell.confidence_level, "method": cell.interval_method},
             "n_steps": cell.n_steps}
    histogram = None
    if cell.per_position is not None:
        marginal = list(cell.per_position.survival)
        histogram = _histogram(cell.n_steps, cell.per_position.counts)
    else:
        marginal = _constant_survival(cell.mean_acceptance_length, cell.k)
        extra["rates"] = "constant conditional rate solved from the mean (no per-position data)"
    return build_profile(k=cell.k, mean=cell.mean_acceptance_length, marginal=marginal,
                         method=method, model=model, draft=draft, variant=variant,
                         accept_length_by_k=accept_length_by_k, histogram=histogram, chain=chain,
                         measurement_conditions=_conditions(provenance, cell.thinking, extra),
                         measured=measured)


def _impossible(survival):
    """The first violation of a survival function, in words."""
    previous = 1
    for i, x in enumerate(survival, 1):
        if x < 0:
            return f"S({i}) = {float(x):.2f} < 0, a negative marginal"
        if x > previous:
            return (f"S({i}) = {float(x):.2f} > S({i - 1}) = {float(previous):.2f}, a "
                    "conditional rate above 1")
        previous = x
    return "none"


def monotone_survival(curve, committed, *, k, thinking):
    """The isotonic survival of a chain curve up to K, rescaled to AL(K); refused above 1."""
    from goldenal.stats import fit_curve_means

    fitted = fit_curve_means({i: committed[i] for i in range(1, k + 1)}, thinking=thinking,
                             parametric=False)
    survival = [float(x) for x in fitted.fitted_survival[:k]]
    total = sum(survival)
    target = committed[k] - 1.0
    if total <= 0:
        return [0.0] * k
    scaled = [x * target / total for x in survival]
    if scaled[0] > 1.0 + 1e-12:
        raise PolicyError(f"curve {curve.id} thinking {thinking} K={k}: no monotone survival "
                          f"profile reaches AL {committed[k]:.2f} (S(1) would be "
                          f"{scaled[0]:.3f} > 1)")
    return [min(x, 1.0) for x in scaled]


def profile_from_curve(curve, *, k, thinking, monotone=False):
    """Profile of a committed cell: a chain's implied survival, else a constant rate."""
    from goldenal.stats.curve import is_chain_method

    cells = curve.cells.get(thinking) or {}
    value = cells.get(k)
    if value is None or value == "N/A":
        have = ", ".join(str(x) for x in sorted(cells)) or "none"
        raise UnknownCurve(f"curve {curve.id} has no committed value for thinking {thinking}, "
                           f"K={k} (committed K: {have})")
    mean = float(value)
    committed = {kk: float(v) for kk, v in cells.items() if v != "N/A"}
    chain = is_chain_method(curve.method)
    extra = {"committed_value": value}
    if chain:
        missing = [i for i in range(1, k + 1) if i not in committed]
        if missing:
            raise UnknownCurve(f"curve {curve.id} thinking {thinking} lacks K="
                               f"{', '.join(map(str, missing))}, needed for the implied "
                               "survival up to K")
        if monotone:
            marginal = monotone_survival(curve, committed, k=k, thinking=thinking)
            extra["rates"] = ("isotonic (non-increasing) fit of the implied survival, rescaled "
                              "so 1 + sum equals the committed AL")
        else:
            implied = implied_survival({i: cells[i] for i in range(1, k + 1)}, k)
            if not is_survival(implied):
                raise PolicyError(
                    f"curve {curve.id} thinking {thinking} K={k}: the committed values imply "
                    f"impossible rates ({_impossible(implied)}); pass --monotone "
                    "(monotone=True) to export the isotonic survival profile")
            marginal = [float(x) for x in implied]
            extra["rates"] = "implied survival S(i) = AL(i) - AL(i-1) of the committed values"
    else:
        marginal = _constant_survival(mean, k)
        extra["rates"] = "constant conditional rate solved from the committed mean"
    return _curve_profile(curve, thinking, extra, k=k, mean=mean, marginal=marginal,
                          accept_length_by_k=committed if chain else None, chain=chain)


def _curve_profile(curve, thinking, extra, **fields):
    """:func:`build_profile` of a committed cell; the target is its first ``org/model`` alias."""
    target = next((a for a in curve.aliases if "/" in a), curve.model)
    return build_profile(method=curve.method, model=target, draft=curve.draft,
                         variant=curve.variant,
                         measurement_conditions=_conditions(curve.provenance, thinking, extra),
                         **fields)


def profile_from_distribution(curve, cell, *, accept_length_by_k=None):
    """Profile of a committed cell from its distribution-file entry: the measured vectors."""
    from goldenal.stats.curve import is_chain_method

    pp = cell.get("per_position") or {}
    counts = pp.get("accepted_per_position")
    n = cell.get("n_steps")
    k = cell["k"]
    if not counts or not n:
        raise ValueError("the distribution entry has no per-position counts")
    marginal = [c / n for c in counts]
    histogram = _histogram(n, counts)
    interval = cell.get("interval") or {}
    extra = {"committed_value": cell.get("value"), "n_steps": n,
             "interval": {key: interval.get(key) for key in ("low", "high", "level", "method")}}
    return _curve_profile(curve, cell["thinking"], extra, k=k, mean=cell["estimate"],
                          marginal=marginal, accept_length_by_k=accept_length_by_k,
                          histogram=histogram,
                          chain=is_chain_method(curve.method))


def write_profile(profile, path):
    """Write a profile as JSON (atomically)."""
    write_text_atomic(os.fspath(path), json.dumps(profile, indent=2, default=str) + "\n")
    return os.fspath(path)


def export_profile(source, *, k, thinking, golden_dir=None, monotone=False, fit_kwargs=None,
                   identity=None, allow_simulated=False):
    """Profile of one cell of a committed curve, a curve file, a run or a fit.

    Parameters
    ----------
    source : str, os.PathLike, CurveFit or Curve
        A curve id (of ``golden_dir``), a curve file, a run directory (fitted first), a
        :class:`~goldenal.stats.CurveFit` or a registry ``Curve``.  A committed curve with a
        distribution file beside it exports the measured vectors.
    k : int
    thinking : {"on", "off"}
    monotone : bool
        Committed chain curves without counts: export the isotonic survival
        (rescaled to the committed AL) instead of refusing an impossible one.
    allow_simulated : bool
        Accept a simulated run directory (its profile says ``"measured": false``).

    Returns
    -------
    dict
        The schema-1.0 profile.

    Examples
    --------
    >>> p = export_profile("minimaxm3_eagle3", k=3, thinking="on")  # doctest: +SKIP
    >>> p["marginal_accept_rates"]                                  # doctest: +SKIP
    [0.78, 0.6, 0.45]
    """
    from goldenal.stats.results import CurveFit

    if isinstance(source, CurveFit):
        cell = source.cells.get((thinking, k))
        if cell is None or cell.failed:
            raise UnknownCurve(f"the fit has no cell thinking {thinking}, K={k}")
        ident = source.identity
        from goldenal.stats.output import provenance_of, draft_tuple

        by_k = {kk: c.mean_acceptance_length for (t, kk), c in source.cells.items()
                if t == thinking and not c.failed}
        return profile_from_cell(cell, method=ident.get("method"), model=ident.get("model"),
                                 draft=draft_tuple(ident.get("draft")),
                                 variant=ident.get("variant"),
                                 provenance=provenance_of(ident), accept_length_by_k=by_k,
                                 chain=source.chain, measured=not ident.get("simulated"))
    if hasattr(source, "cells") and hasattr(source, "id"):
        return profile_from_curve(source, k=k, thinking=thinking, monotone=monotone)
    spec = os.fspath(source)
    if os.path.isdir(spec):
        from goldenal.stats import fit
        from goldenal.stats.output import load_run_for_fit

        run = load_run_for_fit(spec, identity, allow_simulated=allow_simulated)
        return export_profile(fit(run, **(fit_kwargs or {})), k=k, thinking=thinking)
    from goldenal.stats.diff import resolve_curve

    curve, _, dist = resolve_curve(spec, golden_dir=golden_dir)
    value = (curve.cells.get(thinking) or {}).get(k)
    for cell in (dist or {}).get("cells", []):
        if (cell.get("thinking"), cell.get("k")) == (thinking, k) and \
                cell.get("value") == value and (cell.get("per_position") or {}):
            by_k = {c["k"]: c["estimate"] for c in dist["cells"]
                    if c.get("thinking") == thinking and c.get("estimate") is not None}
            return profile_from_distribution(curve, cell, accept_length_by_k=by_k)
    return profile_from_curve(curve, k=k, thinking=thinking, monotone=monotone)
