"""Simulated measurement runs, for validating the statistics.

A simulated cell draws, for every request, its own conditional acceptance
rates from a Beta distribution centred on the given rates (request-to-request
heterogeneity), then the accepted length of every verification step, and lays
the steps out on a timeline of concurrent requests.  From that one process it
renders the artifacts a real run leaves behind, in the engines' real formats:

* vLLM V1 server log lines, one ``SpecDecoding metrics:`` line per 10 s
  logging window (family D of FORMATS.md, the format string of
  vllm/v1/spec_decode/metrics.py), each preceded by its ``Engine 000:``
  throughput line;
* Prometheus ``/metrics`` scrapes before and after the measurement, rendered
  by prometheus_client exactly as vLLM exposes its V1 spec-decode counters;
* per-request records in the shape of vLLM's per-request
  ``metrics.speculative_decoding`` object.

Simulated runs say so (``simulated: true`` and a ``truth:`` block in
``run.yaml``); they validate the fitting and are never a source of committed
curves.  All randomness comes from a ``numpy.random.Generator`` seeded by the
caller.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from goldenal.files import write_text_atomic
from goldenal.observation import Observation

# vLLM V1 spec-decode counters (registered names; the exposition appends
# _total/_created) and their help strings, per FORMATS.md section 2.
_PROM_FAMILIES = (
    ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
    ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
    ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
)
_PROM_PER_POS = ("vllm:spec_decode_num_accepted_tokens_per_pos",
                 "Accepted tokens per draft position.")

_EPOCH = datetime(2026, 11, 30, 5, 0, 0, tzinfo=timezone.utc)


def true_acceptance_length(conditional_rates, k=None):
    """AL implied by conditional rates: 1 + sum_i prod_{j<=i} a(j), i <= K."""
    a = np.asarray(conditional_rates, float)
    k = len(a) if k is None else k
    return float(1.0 + np.cumprod(a[:k]).sum())


def _rates_iv(conditional_rates, k):
    a = np.asarray(conditional_rates, float)
    if a.ndim != 1 or len(a) == 0 or np.any((a < 0) | (a > 1)):
        raise ValueError("`conditional_rates` must be a non-empty vector of values in [0, 1]")
    k = len(a) if k is None else int(k)
    if not 1 <= k <= len(a):
        raise ValueError(f"`k` must be between 1 and {len(a)} (the number of rates given)")
    return a[:k], k


@dataclass(frozen=True)
class SimulatedCell:
    """One simulated cell: per-request rates, per-step accepted lengths, timeline.

    ``lengths[s]`` is the number of drafts accepted at step ``s`` (bonus not
    included), ``request_of[s]`` its request and ``time_of[s]`` its time in
    seconds from the start of the measurement.
    """

    k: int
    thinking: str
    conditional_rates: tuple
    true_al: float
    request_rates: np.ndarray = field(repr=False)
    lengths: np.ndarray = field(repr=False)
    request_of: np.ndarray = field(repr=False)
    time_of: np.ndarray = field(repr=False)
    window_seconds: float = 10.0
    model_name: str = "simulated/model"
    n_engines: int = 1
    warmup: np.ndarray = field(default=None, repr=False)

    @property
    def n_requests(self):
        return self.request_rates.shape[0]

    @property
    def n_steps(self):
        return int(self.lengths.size)

    def _counts(self, mask=None):
        lengths = self.lengths if mask is None else self.lengths[mask]
        c = np.array([(lengths >= i).sum() for i in range(1, self.k + 1)], dtype=np.int64)
        return int(lengths.size), int(lengths.sum()), c

    @property
    def totals(self):
        """(steps, accepted, per-position counts c_1..c_K) over the whole cell."""
        return self._counts()

    @property
    def pooled_acceptance_length(self):
        """1 + accepted / steps, the exact pooled count formula."""
        n, a, _ = self._counts()
        return 1.0 + a / n

    # ----- per-request -----------------------------------------------------
    def request_records(self):
        """One dict per request, shaped like vLLM's per-request spec-decode metrics.

        Keys follow vLLM PR #48915 (``metrics.speculative_decoding``):
        ``acceptance_histogram[j]`` = steps that accepted exactly j drafts.
        """
        out = []
        k = self.k
        hist = np.zeros((self.n_requests, k + 1), dtype=np.int64)
        np.add.at(hist, (self.request_of, self.lengths), 1)
        for r in range(self.n_requests):
            steps = int(hist[r].sum())
            acc = int((np.arange(k + 1) * hist[r]).sum())
            out.append({
                "id": f"chatcmpl-sim{r:05d}",
                "object": "chat.completion",
                "metrics": {"speculative_decoding": {
                    "mean_acceptance_length": 1 + acc / steps if steps else None,
                    "draft_acceptance_rate": acc / (steps * k) if steps else None,
                    "acceptance_histogram": [int(x) for x in hist[r]],
                    "num_spec_steps": steps,
                    "num_accepted_draft_tokens": acc,
                    "num_draft_tokens": steps * k,
                    "num_spec_tokens": k,
                }},
            })
        return out

    def request_jsonl(self):
        """Per-request records as JSON lines (one response body per line)."""
        return "".join(json.dumps(r) + "\n" for r in self.request_records())

    # ----- log lines -------------------------------------------------------
    def _window_index(self):
        return np.floor(self.time_of / self.window_seconds).astype(np.int64)

    def log_lines(self, *, pid=4242, start=_EPOCH):
        """vLLM V1 (family D) log lines, one spec-decode line per active window.

        Returns
        -------
        list of (str, WindowCounts or None)
            Every rendered line with the counts of its window for the
            ``SpecDecoding metrics:`` lines (None for throughput lines).
        """
        w = self._window_index()
        lines = []
        dt = self.window_seconds
        for win in np.unique(w):
            mask = w == win
            n, a, c = self._counts(mask)
            t = n * self.k
            stamp = (start + timedelta(seconds=float((win + 1) * dt))).strftime("%m-%d %H:%M:%S")
            prefix = f"(APIServer pid={pid}) INFO {stamp} "
            running = len(np.unique(self.request_of[mask]))
            lines.append((prefix + "[loggers.py:271] Engine 000: Avg prompt throughput: 0.0 "
                          f"tokens/s, Avg generation throughput: {(n + a) / dt:.1f} tokens/s, "
                          f"Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
                          "12.5%, Prefix cache hit rate: 0.0%", None))
            # format string of vllm/v1/spec_decode/metrics.py (family D, FORMATS.md 1.5)
            pos = ", ".join(f"{x / n:.3f}" for x in c)
            lines.append((prefix + "[metrics.py:101] SpecDecoding metrics: "
                          f"Mean acceptance length: {1 + a / n:.2f}, "
                          f"Accepted throughput: {a / dt:.2f} tokens/s, "
                          f"Drafted throughput: {t / dt:.2f} tokens/s, "
                          f"Accepted: {a} tokens, Drafted: {t} tokens, "
                          f"Per-position acceptance rate: {pos}, "
                          f"Avg Draft acceptance rate: {100 * a / t:.1f}%",
                          (n, a, t, tuple(int(x) for x in c))))
        return lines

    def log_text(self, **kwargs):
        """The server log as text (see :meth:`log_lines`)."""
        return "".join(text + "\n" for text, _ in self.log_lines(**kwargs))

    # ----- Prometheus -------------------------------------------------------
    def _engine_counts(self, lengths_by_engine):
        out = []
        for lengths in lengths_by_engine:
            c = [int((lengths >= i).sum()) for i in range(1, self.k + 1)]
            out.append((int(lengths.size), int(lengths.size) * self.k, int(lengths.sum()), c))
        return out

    def prometheus_scrapes(self, *, created=1764478800.0):
        """Exposition text of ``/metrics`` before and after the measurement.

        The "before" scrape holds the warm-up traffic; the difference of the
        two is exactly this cell's counts.  Requests are spread over
        ``n_engines`` data-parallel engines (one ``engine`` label each).
        """
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.core import CounterMetricFamily

        eng = self.request_of % self.n_engines
        warm = self.warmup if self.warmup is not None else np.zeros(0, dtype=np.int64)
        before = self._engine_counts([warm if e == 0 else warm[:0]
                                      for e in range(self.n_engines)])
        delta = self._engine_counts([self.lengths[eng == e] for e in range(self.n_engines)])
        after = [(b[0] + d[0], b[1] + d[1], b[2] + d[2], [x + y for x, y in zip(b[3], d[3])])
                 for b, d in zip(before, delta)]
        model = self.model_name
        k = self.k

        def render(counts):
            class _Collector:
                def collect(self):
                    for j, (name, doc) in enumerate(_PROM_FAMILIES):
                        fam = CounterMetricFamily(name, doc, labels=["engine", "model_name"])
                        for e, row in enumerate(counts):
                            fam.add_metric([str(e), model], float(row[j]),
                                           created=created + e * 0.0001)
                        yield fam
                    fam = CounterMetricFamily(_PROM_PER_POS[0], _PROM_PER_POS[1],
                                              labels=["engine", "model_name", "position"])
                    for e, row in enumerate(counts):
                        for i in range(k):
                            fam.add_metric([str(e), model, str(i)], float(row[3][i]),
                                           created=created + e * 0.0001)
                    yield fam

            registry = CollectorRegistry(auto_describe=False)
            registry.register(_Collector())
            return generate_latest(registry).decode()

        return render(before), render(after)

    # ----- observations ----------------------------------------------------
    def observations(self, granularity="request", *, source=None):
        """The cell as Observation records, exactly (no rounding).

        Parameters
        ----------
        granularity : {"request", "window", "total"}
            One record per request (``request`` set), per logging window
            (``line`` = the line of the spec-decode line in :meth:`log_text`)
            or one aggregate record.
        source : str, optional
            File name recorded on the records.
        """
        k = self.k
        if granularity == "request":
            src = source or f"requests_{self.thinking}_k{k}.jsonl"
            out = []
            for r, rec in enumerate(self.request_records()):
                sd = rec["metrics"]["speculative_decoding"]
                if not sd["num_spec_steps"]:
                    continue
                h = np.array(sd["acceptance_histogram"])
                c = tuple(int(h[i:].sum()) for i in range(1, k + 1))
                out.append(Observation(src, r + 1, "vllm", "simulated", k=k,
                                       drafts=sd["num_spec_steps"],
                                       draft_tokens=sd["num_draft_tokens"],
                                       accepted=sd["num_accepted_draft_tokens"],
                                       accepted_per_position=c, request=rec["id"],
                                       thinking=self.thinking))
            return tuple(out)
        if granularity == "window":
            src = source or f"server_{self.thinking}_k{k}.log"
            out = []
            for lineno, (_, counts) in enumerate(self.log_lines(), start=1):
                if counts is None:
                    continue
                n, a, t, c = counts
                out.append(Observation(src, lineno, "vllm", "simulated", k=k, drafts=n,
                                       draft_tokens=t, accepted=a, accepted_per_position=c,
                                       thinking=self.thinking))
            return tuple(out)
        if granularity == "total":
            n, a, c = self._counts()
            return (Observation(source or f"metrics_{self.thinking}_k{k}.prom", None, "vllm",
                                "simulated", k=k, drafts=n, draft_tokens=n * k, accepted=a,
                                accepted_per_position=tuple(int(x) for x in c),
                                thinking=self.thinking),)
        raise ValueError("`granularity` must be 'request', 'window' or 'total'")


def simulate_cell(conditional_rates, *, k=None, n_requests=64, steps_per_request=400,
                  heterogeneity=30.0, concurrency=8, step_seconds=0.04, window_seconds=10.0,
                  thinking="on", model_name="simulated/model", n_engines=1,
                  warmup_requests=2, rng=None):
    """Simulate one cell's acceptance process.

    Parameters
    ----------
    conditional_rates : sequence of float
        Population conditional acceptance a(1), a(2), ...; the first ``k``
        are used.
    k : int, optional
        Speculative tokens per step (default: ``len(conditional_rates)``).
    n_requests : int
        Requests in the measurement.
    steps_per_request : float
        Mean verification steps per request (Poisson); drawn independently
        of the request's rates, so the population AL is
        :func:`true_acceptance_length`.
    heterogeneity : float or None
        Concentration kappa of the per-request Beta(kappa a, kappa (1 - a))
        rates; larger is more homogeneous, None gives identical requests.
    concurrency : int
        Requests running at once (slots); a slot starts its next request when
        the previous one finishes.
    step_seconds, window_seconds : float
        Duration of one verification step and of one logging window.
    rng : numpy.random.Generator or int
        Seed or generator (required for reproducibility).

    Returns
    -------
    SimulatedCell
    """
    a, k = _rates_iv(conditional_rates, k)
    rng = np.random.default_rng(rng)

    def draw(n_req):
        if heterogeneity is None:
            rates = np.broadcast_to(a, (n_req, k)).copy()
        else:
            lo = np.clip(a, 1e-9, 1 - 1e-9)
            rates = rng.beta(heterogeneity * lo, heterogeneity * (1 - lo), size=(n_req, k))
            rates[:, a == 0] = 0.0
            rates[:, a == 1] = 1.0
        steps = np.maximum(rng.poisson(steps_per_request, size=n_req), 1)
        surv = np.cumprod(rates, axis=1)  # S_r(i)
        req = np.repeat(np.arange(n_req), steps)
        u = rng.random(req.size)
        # accepted length = number of positions whose survival exceeds u
        lengths = (u[:, None] < surv[req]).sum(axis=1)
        return rates, steps, req, lengths

    rates, steps, req, lengths = draw(n_requests)
    # timeline: each request goes to the slot that frees first
    slot_free = np.zeros(max(1, concurrency))
    start = np.empty(n_requests)
    for r in range(n_requests):
        s = int(np.argmin(slot_free))
        start[r] = slot_free[s]
        slot_free[s] += steps[r] * step_seconds
    offsets = np.arange(req.size) - np.repeat(np.cumsum(steps) - steps, steps)
    times = start[req] + offsets * step_seconds
    warm = draw(warmup_requests)[3] if warmup_requests else np.zeros(0, dtype=np.int64)
    return SimulatedCell(k=k, thinking=thinking, conditional_rates=tuple(float(x) for x in a),
                         true_al=true_acceptance_length(a), request_rates=rates,
                         lengths=lengths.astype(np.int64), request_of=req, time_of=times,
                         window_seconds=window_seconds, model_name=model_name,
                         n_engines=n_engines, warmup=warm)


@dataclass(frozen=True)
class SimulatedRun:
    """Simulated cells of one curve plus the identity of the run manifest."""

    identity: dict
    cells: dict = field(repr=False)  # (thinking, k) -> SimulatedCell
    conditional_rates: dict = field(repr=False)  # thinking -> rates

    def observations(self, granularity="request"):
        """``{(thinking, k): tuple of Observation}`` (see SimulatedCell.observations)."""
        return {key: cell.observations(granularity) for key, cell in sorted(self.cells.items())}

    def write(self, directory, *, artifact="log"):
        """Write the run as a measurement-run directory (``run.yaml`` + files).

        Parameters
        ----------
        directory : str
        artifact : {"log", "prometheus", "requests"}
            Which view of the steps the cells are written as:
            ``server_{on,off}_k{K}.log``, ``metrics_{on,off}_k{K}_{before,after}.prom``
            or ``requests_{on,off}_k{K}.jsonl``.  The three views hold the same
            steps, so a run lists one of them.

        Returns
        -------
        str
            Path of the manifest.

        Raises
        ------
        FileExistsError
            The directory already holds a ``run.yaml``.
        """
        import yaml

        if artifact not in ("log", "prometheus", "requests"):
            raise ValueError("`artifact` must be 'log', 'prometheus' or 'requests'")
        os.makedirs(directory, exist_ok=True)
        manifest = os.path.join(directory, "run.yaml")
        if os.path.exists(manifest):
            raise FileExistsError(manifest)
        entries = []
        for (thinking, k), cell in sorted(self.cells.items()):
            files = {}
            if artifact == "log":
                files[f"server_{thinking}_k{k}.log"] = cell.log_text()
            elif artifact == "prometheus":
                before, after = cell.prometheus_scrapes()
                files[f"metrics_{thinking}_k{k}_before.prom"] = before
                files[f"metrics_{thinking}_k{k}_after.prom"] = after
            else:
                files[f"requests_{thinking}_k{k}.jsonl"] = cell.request_jsonl()
            for name, text in files.items():
                write_text_atomic(os.path.join(directory, name), text)
            entries.append({"thinking": thinking, "k": k, "files": list(files)})
        doc = dict(self.identity)
        doc["simulated"] = True
        doc["truth"] = {
            f"thinking_{t}": {"conditional_rates": [float(x) for x in r]}
            for t, r in sorted(self.conditional_rates.items())}
        doc["cells"] = entries
        write_text_atomic(manifest, yaml.safe_dump(doc, sort_keys=False))
        return manifest


def simulate_run(conditional_rates, ks, *, identity=None, rng=None, **cell_kwargs):
    """Simulate every cell of a curve.

    Parameters
    ----------
    conditional_rates : dict or sequence
        ``{"on": rates, "off": rates}`` or one rate vector (thinking "on").
        Chain drafting is simulated: every K uses the same rates, so the K=n
        cell's acceptance is a prefix of the K=n+1 cell's.
    ks : iterable of int
        The K of every cell.
    identity : dict, optional
        Manifest identity (model, curve, method, draft, ...).
    rng : numpy.random.Generator or int
    **cell_kwargs
        Passed to :func:`simulate_cell`.

    Returns
    -------
    SimulatedRun
    """
    if not isinstance(conditional_rates, dict):
        conditional_rates = {"on": conditional_rates}
    rng = np.random.default_rng(rng)
    ident = {
        "run": "simulated", "model": "simulated-model", "curve": "simulated_chain",
        "method": "eagle3", "draft": ["simulated/draft"], "variant": {},
        "engine": {"name": "vllm", "version": "0.20.1"}, "hardware": "simulated",
        "dataset": {"name": "simulated", "category": "simulated", "output_len": 4096},
        "sampling": {}, "date": "2026-11-30", "source": "goldenal.simulate",
    }
    ident.update(identity or {})
    cells = {}
    for thinking, rates in sorted(conditional_rates.items()):
        for k in ks:
            cells[(thinking, int(k))] = simulate_cell(rates, k=int(k), thinking=thinking,
                                                      rng=rng, **cell_kwargs)
    return SimulatedRun(identity=ident, cells=cells,
                        conditional_rates={t: tuple(r) for t, r in conditional_rates.items()})


@dataclass(frozen=True)
class CoverageResult:
    """How often nominal intervals contained the true AL, per interval method."""

    confidence_level: float
    n_runs: int
    hits: dict  # method -> runs whose interval contained the truth
    widths: dict = field(repr=False)  # method -> mean interval width

    @property
    def coverage(self):
        """``{method: fraction of runs covered}``."""
        return {m: h / self.n_runs for m, h in self.hits.items()}

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame({"coverage": self.coverage, "runs": self.n_runs,
                             "mean width": self.widths}).rename_axis("method")


def coverage_study(conditional_rates, *, n_runs=400, confidence_level=0.95, n_resamples=999,
                   rng=None, **cell_kwargs):
    """Coverage of the three interval methods on simulated runs.

    Every run simulates one cell (with request heterogeneity) and fits it
    three times: from its per-request records (cluster bootstrap), its log
    windows (batch means) and its aggregate counts (count-based).

    Parameters
    ----------
    conditional_rates : sequence of float
    n_runs : int
    confidence_level : float
    n_resamples : int
        Bootstrap resamples per fit.
    rng : numpy.random.Generator or int
    **cell_kwargs
        Passed to :func:`simulate_cell` (``n_requests``, ``heterogeneity``, ...).

    Returns
    -------
    CoverageResult
    """
    import warnings

    from goldenal.errors import LowSampleWarning
    from goldenal.fitting.cell import fit_cell

    rng = np.random.default_rng(rng)
    views = (("request", "bootstrap"), ("window", "batch-means"), ("total", "count"))
    hits = {m: 0 for _, m in views}
    widths = {m: 0.0 for _, m in views}
    for _ in range(n_runs):
        cell = simulate_cell(conditional_rates, rng=rng, **cell_kwargs)
        for granularity, method in views:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LowSampleWarning)
                fitted = fit_cell(cell.observations(granularity), k=cell.k, method=method,
                                  confidence_level=confidence_level,
                                  n_resamples=n_resamples, rng=rng)
            lo, hi = fitted.confidence_interval
            hits[method] += bool(lo <= cell.true_al <= hi)
            widths[method] += (hi - lo) / n_runs
    return CoverageResult(confidence_level=confidence_level, n_runs=n_runs, hits=hits,
                          widths=widths)
