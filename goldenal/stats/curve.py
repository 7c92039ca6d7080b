"""Fit a whole measurement run: every cell, then the cross-K model per mode."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping

import numpy as np

from goldenal.core.errors import ConvergenceError, ParseError
from goldenal.stats.cell import fit_cell, request_span_windows
from goldenal.stats.chain import DEFAULT_MARGIN, fit_chain
from goldenal.stats.monotone import DEFAULT_TOLERANCE, fit_curve_means
from goldenal.stats.results import Check, ChainFit, CurveFit

# Methods whose K=n draft is a prefix of the K=n+1 draft (docs/policy.md §4,
# "accept_length_model": chain_analytic).  vLLM runs MTP heads as a chain.
CHAIN_METHODS = frozenset({"eagle", "eagle3", "mtp", "draft_model", "draft-model",
                           "draft", "separate", "medusa-chain"})
# Block-parallel and tree drafting (dspark, dflash, tree, medusa) re-plan the
# block when K changes: no model across K.

THINKING = ("on", "off")


def is_chain_method(method):
    """True for chain drafting (cells share a(i)); False for block/tree methods."""
    return method is not None and str(method).lower() in CHAIN_METHODS


def _group_observations(data):
    """Normalise the accepted inputs to (cells dict, identity, warnings, path)."""
    if hasattr(data, "cells") and hasattr(data, "identity"):  # a MeasurementRun
        check_complete(data)
        return (dict(data.cells), dict(data.identity), tuple(getattr(data, "warnings", ())),
                getattr(data, "path", None))
    if isinstance(data, Mapping):
        return {(str(t), int(k)): tuple(obs) for (t, k), obs in data.items()}, {}, (), None
    cells = {}
    for o in data:
        if o.thinking is None or o.k is None:
            raise ParseError("observation lacks its thinking mode or K; pass a dict "
                             "{(thinking, K): observations} or a run", path=o.source, line=o.line)
        cells.setdefault((o.thinking, o.k), []).append(o)
    return {key: tuple(v) for key, v in cells.items()}, {}, (), None


def check_complete(run):
    """Refuse a run whose reading refused windows (they would bias their cells)."""
    refused = [p for p in getattr(run, "problems", ()) if getattr(p, "refused", False)]
    if refused:
        first = refused[0]
        more = f" (and {len(refused) - 1} more refused windows)" if len(refused) > 1 else ""
        raise ParseError(f"{first.message}{more}; fix the run (e.g. the cell's K in run.yaml) "
                         "before fitting", path=first.path, line=first.line)


def check_cells(cells, *, path=None):
    """Refuse a run with missing cells."""
    where = {"path": path} if path else {}
    if not cells:
        raise ParseError("the run has no cells", **where)
    by_mode = {}
    for thinking, k in cells:
        if thinking not in THINKING:
            raise ParseError(f"thinking mode {thinking!r} is not 'on' or 'off'", **where)
        by_mode.setdefault(thinking, set()).add(k)
    for thinking, ks in sorted(by_mode.items()):
        missing = sorted(set(range(min(ks), max(ks) + 1)) - ks)
        if missing:
            raise ParseError(f"run is missing cells: thinking {thinking} has K={min(ks)}.."
                             f"{max(ks)} but no K={', '.join(map(str, missing))}; list every "
                             "cell in run.yaml", **where)
    if len(by_mode) == 2 and by_mode["on"] != by_mode["off"]:
        lacks = [(other, sorted(by_mode[mode] - by_mode[other]))
                 for mode, other in (("on", "off"), ("off", "on"))]
        raise ParseError("run is missing cells: " + "; ".join(
            f"thinking {other} lacks K={', '.join(map(str, ks))}" for other, ks in lacks if ks),
            **where)


def _positive_number(value):
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def request_span(identity, observations):
    """Longest request span in logging windows from a run's identity, or None."""
    dataset = identity.get("dataset")
    dataset = dataset if isinstance(dataset, Mapping) else {}
    cap = _positive_number(dataset.get("output_len"))
    conc = _positive_number(identity.get("concurrency") or dataset.get("concurrency")
                            or dataset.get("max_concurrency"))
    windows = [o.drafts for o in observations
               if o.request is None and o.line is not None and not o.mean_only]
    if cap is None or conc is None or not windows:
        return None
    return request_span_windows(windows, output_len=cap, concurrency=int(conc))


def fit(observations_or_run, *, chain=None, confidence_level=0.95, interval_method="auto",
        n_resamples=9999, rng=None, tolerance=DEFAULT_TOLERANCE, max_request_windows=None,
        margin=DEFAULT_MARGIN, **identity):
    """Fit a measurement run into a curve with uncertainty.

    Every cell is fitted by :func:`fit_cell` (intervals only from independent
    units, docs/statistics.md), then each thinking mode by the cross-K model.

    Parameters
    ----------
    observations_or_run : MeasurementRun, dict or sequence of Observation
        A run from :func:`goldenal.readers.load_run`, a dict ``{(thinking, K): observations}``
        (an empty sequence marks a failed cell), or observations with ``thinking`` and ``k``.
    chain : bool, optional
        Pool the cells of a thinking mode in the chain model (default: ``is_chain_method``).
    confidence_level, interval_method, n_resamples
        As in :func:`fit_cell`.
    rng : numpy.random.Generator or int
        Seed; every cell gets its own stream spawned from it.
    tolerance : float
        Residual tolerance of the monotone fit used for means-only cells.
    max_request_windows : int, optional
        As in :func:`fit_cell`.  Default: from the run's ``dataset.output_len`` and
        ``concurrency`` (:func:`request_span`); unknown, log windows get no interval.
    margin : float, default 0.02
        Differences within +-margin AL are never flagged by the cross-K check.
    **identity
        Curve identity (``model``, ``curve``, ``method``, ``draft``, ``variant``, ...);
        overrides nothing that the run states differently.

    Returns
    -------
    CurveFit

    Raises
    ------
    ParseError
        Missing or zero-step cells, K disagreeing with the manifest, conflicting identity.
    """
    cells_obs, ident, warns, path = _group_observations(observations_or_run)
    for key, value in identity.items():
        if value is None:
            continue
        if key in ident and ident[key] not in (None, value) and \
                not (key == "draft" and list(ident[key] or []) == list(value or [])):
            raise ParseError(f"identity conflict: the run says {key}={ident[key]!r} but "
                             f"{value!r} was given", path=path)
        ident[key] = value
    check_cells(cells_obs, path=path)
    if chain is None:
        chain = is_chain_method(ident.get("method"))
    streams = np.random.default_rng(rng).spawn(len(cells_obs))
    cells = {}
    cap, n_requests = stated_cap(ident)
    ordered = sorted(cells_obs.items(), key=lambda kv: (THINKING.index(kv[0][0]), kv[0][1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for (key, obs), stream in zip(ordered, streams):
            thinking, k = key
            span = (request_span(ident, obs) if max_request_windows is None
                    else max_request_windows)
            cells[key] = fit_cell(obs, k=k, thinking=thinking,
                                  confidence_level=confidence_level, method=interval_method,
                                  n_resamples=n_resamples, rng=stream,
                                  max_request_windows=span, output_len=cap,
                                  n_requests=n_requests)
    for w in caught:  # point the caller's warnings at the caller
        warnings.warn(w.message, w.category, stacklevel=2)
    models, mode_checks = {}, {}
    for thinking in [t for t in THINKING if any(key[0] == t for key in cells)]:
        mode = {key: c for key, c in cells.items() if key[0] == thinking}
        model = None
        if chain:
            try:
                model = fit_chain(list(mode.values()), thinking=thinking, margin=margin)
            except ConvergenceError:
                means = {c.k: c.mean_acceptance_length for c in mode.values()
                         if not c.failed and math.isfinite(c.mean_acceptance_length)}
                model = (fit_curve_means(means, thinking=thinking, tolerance=tolerance)
                         if means else None)
        models[thinking] = model
        mode_checks[thinking] = _mode_check(model, chain, ident.get("method"))
        for key, cell in mode.items():
            check = _cell_check(cell, model, mode_checks[thinking])
            cells[key] = dataclasses.replace(cell, checks={**cell.checks, "cross_k": check})
    return CurveFit(identity=ident, cells=cells, models=models, chain=bool(chain),
                    confidence_level=confidence_level, warnings=warns,
                    checks={"cross_k": mode_checks})


def _mode_check(model, chain, method):
    """The cross-K check of one thinking mode: done, flagged or skipped and why."""
    if not chain and not method:
        return Check("skipped", "no drafting method stated (`method:` in run.yaml or "
                                "--method): the cells stand alone (no model across K)")
    if not chain:
        return Check("skipped", f"method {method} is not chain drafting: its cells stand "
                                "alone (no model across K)")
    if model is None:
        return Check("skipped", "no cell has per-position counts or a mean to compare")
    if isinstance(model, ChainFit):
        return model.check
    status = "flagged" if model.flags else "done"
    return Check(status, f"means only: compared with a monotone survival profile "
                         f"(tolerance {model.tolerance:g} AL), no interval-based check")


def _cell_check(cell, model, mode):
    """One cell's part in its mode's cross-K check."""
    if mode.status == "skipped":
        return mode
    flagged = {f.k for f in model.flags}
    compared = model.z_scores if isinstance(model, ChainFit) else model.residuals
    if cell.k in flagged:
        return Check("flagged", next(f.message for f in model.flags if f.k == cell.k))
    if cell.k in compared:
        return Check("done")
    if cell.failed:
        return Check("skipped", "the cell failed")
    if cell.interval_method == "none":
        return Check("skipped", f"the cell has no interval to compare ({cell.interval_reason})")
    return Check("skipped", "no cell with per-request records reaches its K")


def stated_cap(identity):
    """(output cap, requests per cell) the run states, each None when not stated."""
    dataset = identity.get("dataset")
    dataset = dataset if isinstance(dataset, Mapping) else {}
    cap = _positive_number(dataset.get("output_len"))
    count = _positive_number(dataset.get("num_prompts") or identity.get("num_prompts"))
    return (None if cap is None else int(cap)), (None if count is None else int(count))
