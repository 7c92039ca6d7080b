"""A whole K sweep in one call: one server per K, started, measured and stopped.

Each server's log moves into the run (``server_{on,off}_k{K}.log``); cells
finished before a failure stay in the run.
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
from dataclasses import dataclass

from goldenal.core.errors import ConflictError, GoldenALError, UsageError
from goldenal.measuring.measure import (MeasureResult, _identity_iv, _load_manifest,
                                        _measure_iv, load_prompts, measure)

# the percentiles the summary reports
PERCENTILES = (50, 90, 99)
# where a server answers when the command names only {port}
DEFAULT_URL = "http://127.0.0.1:{port}"


@dataclass(frozen=True)
class SweepResult(MeasureResult):
    """:class:`~goldenal.measuring.measure.MeasureResult` of every K, with ``server_logs``
    (``(k, path)`` in the run directory)."""

    server_logs: tuple = ()


def _k_flag(server_cmd):
    """``", e.g. FLAG {k}"``: how the engine the command starts takes K, where a record says."""
    from goldenal.engines import MODULES

    for rec in (m.RECORD for m in MODULES.values()):
        flags = rec.rows(setting="k", form="flag")
        if rec.launch_word in map(os.path.basename, server_cmd.split()) and flags:
            return f", e.g. {flags[0].name} {{k}}"
    return ""


def _sweep_iv(server_cmd, url, ks):
    if not isinstance(server_cmd, str) or not server_cmd.strip():
        raise UsageError("`server_cmd` must be the command line that starts the server, with "
                         "{k} where its K goes")
    if len(ks) > 1 and "{k}" not in server_cmd:
        raise UsageError("`server_cmd` has no {k}: every K would start the same server (write "
                         f"{{k}} where the command takes K{_k_flag(server_cmd)})")
    if url is None:
        if "{port}" not in server_cmd:
            raise UsageError("give the URL the server answers at, or write {port} in "
                             "`server_cmd` where it takes its port (a free one is chosen per K)")
        url = DEFAULT_URL
    elif "{port}" in server_cmd and "{port}" not in url:
        raise UsageError("`server_cmd` takes {port} but the URL has none: the URL would not "
                         "name the server started (write {port} in the URL too, or omit it)")
    return url


def _move(src, dst):
    try:
        shutil.move(src, dst)
    except OSError:
        return src
    return dst


def measure_sweep(server_cmd, *, out, k, url=None, server_ready=None, server_timeout=600.0,
                  thinking, prompts=None, **measure_args):
    """Measure every K of a curve, starting and stopping one server per K.

    Parameters
    ----------
    server_cmd : str
        Shell command line that starts the server, with ``{k}`` where it takes K and
        optionally ``{port}``, filled with a free port on 127.0.0.1 for each K.
    out : path
        The run directory (see :func:`~goldenal.measuring.measure`).
    k : int or sequence of int
        The K to measure, in order.
    url : str, optional
        Where the server answers (``{k}``, ``{port}`` filled in); default
        ``http://127.0.0.1:{port}``.
    server_ready : str, optional
        URL polled until it answers HTTP 200 before any request; default ``URL/health``
        (every supported engine answers it once the model is loaded).
    server_timeout : float
        Seconds each server has to become ready.
    thinking, prompts, **measure_args
        As for :func:`~goldenal.measuring.measure`.

    Returns
    -------
    SweepResult
        The cells of every K, their warnings and the server logs.

    Raises
    ------
    ServerError
        A server exited before it was ready, or was not ready in time.
    MeasureError, CounterReset, ConflictError, UsageError
        As :func:`~goldenal.measuring.measure`; the cells measured before stay in the
        run, and the error carries ``server_log``, the log of the server then running.
    """
    from goldenal.measuring.servers import fill, free_port, serve

    ks = [k] if isinstance(k, int) and not isinstance(k, bool) else list(k)
    url = _sweep_iv(server_cmd, url, ks)
    if not ks or len(set(ks)) != len(ks):
        raise UsageError(f"`k` must name each K once, got {k!r}")
    # everything measure would refuse is refused before the first server starts
    given = {name: p.default for name, p in inspect.signature(measure).parameters.items()}
    given.update(measure_args)
    for k_ in ks:
        _, thinking, out = _measure_iv(fill(url, k=k_, port=1), out, given["model"], k_,
                                       thinking, *(given[name] for name in (
                                           "concurrency", "max_tokens", "requests", "engine",
                                           "retries", "timeout", "not_golden", "seed")))
    _identity_iv(out, given["model"], given["draft"], given["method"], given["curve"], ks,
                 thinking)
    if isinstance(prompts, (str, os.PathLike)):
        load_prompts(prompts)
    if os.path.isfile(os.path.join(out, "run.yaml")) and not measure_args.get("replace"):
        have = {(str(c.get("thinking")), c.get("k")) for c in _load_manifest(out)["cells"]
                if isinstance(c, dict)}
        for k_ in ks:
            if (thinking, k_) in have:
                raise ConflictError(f"{out}/run.yaml already has the cell thinking {thinking}, "
                                    f"K={k_}; pass --replace to measure it again")
    if not isinstance(server_timeout, (int, float)) or server_timeout <= 0:
        raise UsageError(f"`server_timeout` must be positive seconds, got {server_timeout!r}")
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.servers-", dir=parent)
    cells, warnings, logs, server = [], [], [], None
    try:
        for k_ in ks:
            port = free_port()
            base = fill(url, k=k_, port=port)
            ready = fill(server_ready, k=k_, port=port) if server_ready else \
                base.rstrip("/") + "/health"
            name = f"server_{thinking}_k{k_}.log"
            log = os.path.join(scratch, name)
            try:
                with serve(fill(server_cmd, k=k_, port=port), log=log, url=base,
                           ready_url=ready, timeout=server_timeout):
                    result = measure(base, out=out, k=k_, thinking=thinking, prompts=prompts,
                                     **measure_args)
            except (GoldenALError, KeyboardInterrupt) as exc:
                # the log of a failed K: into the run when it exists, else beside it
                keep = os.path.join(out, name) if os.path.isfile(
                    os.path.join(out, "run.yaml")) else f"{out}.{name}"
                exc.server_log = _move(log, keep)
                raise
            logs.append((k_, _move(log, os.path.join(out, name))))
            server = result.server
            cells.extend(result.cells)
            warnings.extend(result.warnings)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return SweepResult(out, server, tuple(cells), tuple(warnings), tuple(logs))


def _percentiles(values):
    import numpy as np

    values = [v for v in values if v is not None]
    if not values:
        return None
    return {f"p{q}": float(v) for q, v in zip(PERCENTILES, np.percentile(values, PERCENTILES))}


def measurement_summary(result):
    """Plain data (JSON-ready) about a measurement: what ``measure --format json`` prints.

    Parameters
    ----------
    result : MeasureResult or SweepResult

    Returns
    -------
    dict
        ``run``, ``engine``, ``cells``, ``warnings`` (and ``server_logs`` for a sweep);
        per cell its counts, ``output_tokens`` and ``throughput_tokens_per_s`` (of the
        requests that completed, over the cell's wall time) and the p50/p90/p99 (None
        without data) of ``latency_s`` (to the last byte), ``ttft_s`` (streaming only)
        and ``tokens_per_s`` (a request's output tokens over its latency).
    """
    cells = []
    for c in result.cells:
        ok = [r for r in c.requests if r.status == "ok"]
        tokens = [r.completion_tokens for r in ok if r.completion_tokens is not None]
        rates = [r.completion_tokens / r.seconds for r in ok
                 if r.completion_tokens is not None and r.seconds]
        cells.append({
            "thinking": c.thinking, "k": c.k, "acceptance_length": c.acceptance_length,
            "steps": c.drafts, "accepted": c.accepted, "requests": len(c.requests),
            "failed": c.failed, "per_request": c.per_request, "wall_seconds": c.wall_seconds,
            "output_tokens": sum(tokens),
            "throughput_tokens_per_s": (sum(tokens) / c.wall_seconds if c.wall_seconds
                                        else None),
            "latency_s": _percentiles([r.seconds for r in ok]),
            "ttft_s": _percentiles([r.ttft for r in ok]),
            "tokens_per_s": _percentiles(rates)})
    out = {"run": os.fspath(result.path),
           "engine": result.server.engine if result.server else None,
           "cells": cells, "warnings": list(result.warnings)}
    if isinstance(result, SweepResult):
        out["server_logs"] = [{"k": k, "path": path} for k, path in result.server_logs]
    return out
