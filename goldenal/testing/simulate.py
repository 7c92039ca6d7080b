"""Simulated measurement runs, for validating the statistics.

A cell draws each request's conditional rates from a Beta around the given
rates, then each step's accepted length, and renders what a real run leaves:
vLLM V1 log lines (family D, docs/formats.md §1.5), Prometheus ``/metrics``
scrapes and per-request metrics records (§4).  A
:class:`Workload` adds heavy-tailed lengths in tokens and its exact AL (for
``benchmarks/coverage_study.py``).  Simulated runs say so in ``run.yaml``
(``simulated: true``, ``truth:``) and never become committed curves.
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from goldenal.core.files import write_text_atomic
from goldenal.core.observation import Observation
from goldenal.readers.records import record

# vLLM V1 spec-decode counters by meaning and their help strings, both in the engine record
# (the exposition appends _total/_created), per docs/formats.md §2.2
_PROM_FAMILIES = tuple(zip(("drafts", "draft_tokens", "accepted", "per_position"),
                           record("vllm").log_lines["help"]))

# the per-request record's keys, as :meth:`SimulatedCell.request_records` fills them
_REQUEST_KEYS = ("length", "rate", "histogram", "steps", "accepted", "proposed", "k")

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
    """One simulated cell: per-request rates, per-step accepted lengths, timeline."""

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

    def _counts(self, lengths=None):
        """(steps, accepted, per-position counts c_1..c_K) of ``lengths`` (default: all)."""
        lengths = self.lengths if lengths is None else lengths
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
        """One dict per request, shaped like vLLM PR #48915's per-request metrics."""
        out = []
        k = self.k
        fields = record("vllm").count_fields
        outer, inner = fields["request"]
        hist = np.zeros((self.n_requests, k + 1), dtype=np.int64)
        np.add.at(hist, (self.request_of, self.lengths), 1)
        for r in range(self.n_requests):
            steps = int(hist[r].sum())
            acc = int((np.arange(k + 1) * hist[r]).sum())
            out.append({
                "id": f"chatcmpl-sim{r:05d}",
                "object": "chat.completion",
                outer: {inner: {fields[key][0]: value for key, value in zip(_REQUEST_KEYS, (
                    1 + acc / steps if steps else None, acc / (steps * k) if steps else None,
                    [int(x) for x in hist[r]], steps, acc, steps * k, k))}},
            })
        return out

    def request_jsonl(self):
        """Per-request records as JSON lines (one response body per line)."""
        return "".join(json.dumps(r) + "\n" for r in self.request_records())

    # ----- log lines -------------------------------------------------------
    def _window_index(self):
        return np.floor(self.time_of / self.window_seconds).astype(np.int64)

    def log_lines(self, *, pid=4242, start=_EPOCH):
        """vLLM V1 (family D) log lines, one spec-decode line per active window."""
        log = record("vllm").log_lines
        tag, line = log["tags"][0], "".join(log["line"])
        w = self._window_index()
        lines = []
        dt = self.window_seconds
        for win in np.unique(w):
            mask = w == win
            n, a, c = self._counts(self.lengths[mask])
            t = n * self.k
            stamp = (start + timedelta(seconds=float((win + 1) * dt))).strftime("%m-%d %H:%M:%S")
            prefix = f"(APIServer pid={pid}) INFO {stamp} "
            running = len(np.unique(self.request_of[mask]))
            lines.append((prefix + "[loggers.py:271] Engine 000: Avg prompt throughput: 0.0 "
                          f"tokens/s, Avg generation throughput: {(n + a) / dt:.1f} tokens/s, "
                          f"Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
                          "12.5%, Prefix cache hit rate: 0.0%", None))
            # the record's family D line (docs/formats.md §1.5)
            pos = ", ".join(f"{x / n:.3f}" for x in c)
            lines.append((f"{prefix}[metrics.py:101] {tag}: "
                          + line % (1 + a / n, a / dt, t / dt, a, t, pos, 100 * a / t),
                          (n, a, t, tuple(int(x) for x in c))))
        return lines

    def log_text(self, **kwargs):
        """The server log as text (see :meth:`log_lines`)."""
        return "".join(text + "\n" for text, _ in self.log_lines(**kwargs))

    # ----- Prometheus -------------------------------------------------------
    def prometheus_scrapes(self, *, created=1764478800.0):
        """Exposition text of ``/metrics`` before and after the measurement."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.core import CounterMetricFamily

        eng = self.request_of % self.n_engines
        warm = self.warmup if self.warmup is not None else np.zeros(0, dtype=np.int64)
        # (steps, accepted, per-position) per engine; the warm-up ran on engine 0
        before = [self._counts(warm if e == 0 else warm[:0]) for e in range(self.n_engines)]
        after = [tuple(map(np.add, b, self._counts(self.lengths[eng == e])))
                 for e, b in enumerate(before)]
        model = self.model_name
        k = self.k
        metrics = record("vllm").metrics

        def render(counts):
            class _Collector:
                def collect(self):
                    for j, (kind, doc) in enumerate(_PROM_FAMILIES[:3]):
                        fam = CounterMetricFamily(metrics[kind], doc, labels=["engine", "model_name"])
                        for e, (n, a, _) in enumerate(counts):
                            fam.add_metric([str(e), model], float((n, n * k, a)[j]),
                                           created=created + e * 0.0001)
                        yield fam
                    fam = CounterMetricFamily(metrics["per_position"], _PROM_FAMILIES[3][1],
                                              labels=["engine", "model_name", "position"])
                    for e, (_, _, c) in enumerate(counts):
                        for i in range(k):
                            fam.add_metric([str(e), model, str(i)], float(c[i]),
                                           created=created + e * 0.0001)
                    yield fam

            registry = CollectorRegistry(auto_describe=False)
            registry.register(_Collector())
            return generate_latest(registry).decode()

        return render(before), render(after)

    # ----- observations ----------------------------------------------------
    def observations(self, granularity="request", *, source=None):
        """The cell as Observation records, exactly (no rounding)."""
        k = self.k

        def observation(src, line, n, a, c, **extra):
            return Observation(src, line, "vllm", "simulated", k=k, drafts=n, draft_tokens=n * k,
                               accepted=a, accepted_per_position=tuple(int(x) for x in c),
                               thinking=self.thinking, **extra)

        if granularity == "request":
            src = source or f"requests_{self.thinking}_k{k}.jsonl"
            out = []
            n, a, hist = (record("vllm").count_fields[key][0] for key in (
                "steps", "accepted", "histogram"))
            outer, inner = record("vllm").count_fields["request"]
            for r, rec in enumerate(self.request_records()):
                sd = rec[outer][inner]
                if sd[n]:
                    h = np.array(sd[hist])
                    out.append(observation(src, r + 1, sd[n], sd[a],
                                           [h[i:].sum() for i in range(1, k + 1)],
                                           request=rec["id"]))
            return tuple(out)
        if granularity == "window":
            src = source or f"server_{self.thinking}_k{k}.log"
            lines = enumerate(self.log_lines(), start=1)  # counts: (steps, accepted, drafted, c)
            return tuple(observation(src, lineno, counts[0], counts[1], counts[3])
                         for lineno, (_, counts) in lines if counts is not None)
        if granularity == "total":
            return (observation(source or f"metrics_{self.thinking}_k{k}.prom", None,
                                *self._counts()),)
        raise ValueError("`granularity` must be 'request', 'window' or 'total'")


def _step_times(steps, req, concurrency, step_seconds):
    """The time of every step: each request goes to the slot that frees first."""
    slot_free = np.zeros(max(1, concurrency))
    start = np.empty(len(steps))
    for r in range(len(steps)):
        s = int(np.argmin(slot_free))
        start[r] = slot_free[s]
        slot_free[s] += steps[r] * step_seconds
    offsets = np.arange(req.size) - np.repeat(np.cumsum(steps) - steps, steps)
    return start[req] + offsets * step_seconds


def _scatter(rates, heterogeneity, n, rng):
    """``n`` rows of rates, each drawn from Betas of mean ``rates`` (None: ``rates`` itself)."""
    if heterogeneity is None:
        return np.broadcast_to(rates, (n, len(rates))).copy()
    lo = np.clip(rates, 1e-9, 1 - 1e-9)
    return rng.beta(heterogeneity * lo, heterogeneity * (1 - lo), size=(n, len(rates)))


def simulate_cell(conditional_rates, *, k=None, n_requests=64, steps_per_request=400,
                  heterogeneity=30.0, concurrency=8, step_seconds=0.04, window_seconds=10.0,
                  thinking="on", model_name="simulated/model", n_engines=1,
                  warmup_requests=2, rng=None):
    """Simulate one cell's acceptance process."""
    a, k = _rates_iv(conditional_rates, k)
    rng = np.random.default_rng(rng)

    def draw(n_req):
        rates = _scatter(a, heterogeneity, n_req, rng)
        rates[:, a == 0] = 0.0  # a certain rejection or acceptance stays certain
        rates[:, a == 1] = 1.0
        steps = np.maximum(rng.poisson(steps_per_request, size=n_req), 1)
        surv = np.cumprod(rates, axis=1)  # S_r(i)
        req = np.repeat(np.arange(n_req), steps)
        u = rng.random(req.size)
        # accepted length = number of positions whose survival exceeds u
        lengths = (u[:, None] < surv[req]).sum(axis=1)
        return rates, steps, req, lengths

    rates, steps, req, lengths = draw(n_requests)
    times = _step_times(steps, req, concurrency, step_seconds)
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
        """Write the run as a measurement-run directory (``run.yaml`` + files)."""
        from goldenal.readers.run import manifest_text

        if artifact not in ("log", "prometheus", "requests"):
            raise ValueError("`artifact` must be 'log', 'prometheus' or 'requests'")
        os.makedirs(directory, exist_ok=True)
        manifest = os.path.join(directory, "run.yaml")
        if os.path.exists(manifest):
            raise FileExistsError(manifest)
        entries = []
        for (thinking, k), cell in sorted(self.cells.items()):
            if artifact == "log":
                files = {f"server_{thinking}_k{k}.log": cell.log_text()}
            elif artifact == "prometheus":
                files = dict(zip((f"metrics_{thinking}_k{k}_{when}.prom"
                                  for when in ("before", "after")), cell.prometheus_scrapes()))
            else:
                files = {f"requests_{thinking}_k{k}.jsonl": cell.request_jsonl()}
            for name, text in files.items():
                write_text_atomic(os.path.join(directory, name), text)
            entries.append({"thinking": thinking, "k": k, "files": list(files)})
        doc = dict(self.identity)
        doc["simulated"] = True
        doc["truth"] = {
            f"thinking_{t}": {"conditional_rates": [float(x) for x in r]}
            for t, r in sorted(self.conditional_rates.items())}
        doc["cells"] = entries
        write_text_atomic(manifest, manifest_text(doc))
        return manifest


def simulate_run(conditional_rates, ks, *, identity=None, rng=None, **cell_kwargs):
    """Simulate every cell of a curve."""
    if not isinstance(conditional_rates, dict):
        conditional_rates = {"on": conditional_rates}
    rng = np.random.default_rng(rng)
    ident = {
        "run": "simulated", "model": "simulated-model", "curve": "simulated_chain",
        "method": "eagle3", "draft": ["simulated/draft"], "variant": {},
        "engine": {"name": "vllm", "version": "0.20.1"}, "hardware": "simulated",
        "dataset": {"name": "simulated", "category": "simulated", "output_len": 4096},
        "sampling": {}, "date": "2026-11-30", "source": "goldenal.testing.simulate",
    }
    ident.update(identity or {})
    cells = {}
    for thinking, rates in sorted(conditional_rates.items()):
        for k in ks:
            cells[(thinking, int(k))] = simulate_cell(rates, k=int(k), thinking=thinking,
                                                      rng=rng, **cell_kwargs)
    return SimulatedRun(identity=ident, cells=cells,
                        conditional_rates={t: tuple(r) for t, r in conditional_rates.items()})


@dataclass(frozen=True, eq=False)
class Workload:
    """A prompt population for simulated serving: request profiles and token lengths."""

    profiles: np.ndarray = field(repr=False)  # (n_profiles, segments, k_max) conditional rates
    medians: tuple = (900.0,)  # per segment, tokens
    sigmas: tuple = (0.9,)
    caps: tuple = (4096,)

    @property
    def k_max(self):
        return self.profiles.shape[2]

    @property
    def segments(self):
        return self.profiles.shape[1]

    def length_pmf(self, segment):
        """P(T = t) for t = 0..cap of a segment (index 0 unused)."""
        from scipy.stats import lognorm

        cap = int(self.caps[segment])
        dist = lognorm(self.sigmas[segment], scale=self.medians[segment])
        edges = np.arange(cap + 1) + 0.5  # T = t when the draw rounds to t
        cdf = dist.cdf(edges)
        pmf = np.zeros(cap + 1)
        pmf[1] = cdf[1]  # draws below 1.5 (clipped up to 1)
        pmf[2:cap] = np.diff(cdf[1:cap])
        pmf[cap] = 1 - cdf[cap - 1]  # the tail is clipped to the cap
        return pmf

    def _survival(self, k, shift=1.0):
        return np.cumprod(np.clip(self.profiles[:, :, :k] * shift, 0, 1), axis=2)

    def true_acceptance_length(self, k, *, shift=1.0):
        """Exact population AL at K=k (rates multiplied by ``shift``)."""
        tokens, steps = _workload_moments(self, int(k), float(shift))
        return tokens / steps

    def expected_per_request(self, k, *, shift=1.0):
        """Exact (expected tokens, expected steps) of one request at K=k."""
        return _workload_moments(self, int(k), float(shift))

    def _moments(self, k, shift):
        surv = self._survival(k, shift)  # (P, S, k)
        full = np.concatenate([np.ones(surv.shape[:2] + (1,)), surv,
                               np.zeros(surv.shape[:2] + (1,))], axis=2)
        p = full[:, :, :-1] - full[:, :, 1:]  # P(L = j), j = 0..k
        mu = 1 + surv.sum(axis=2)  # tokens per step
        steps = np.zeros(surv.shape[:2])
        for seg in range(self.segments):
            pmf = self.length_pmf(seg)
            cap = len(pmf) - 1
            # m(t): expected steps to produce >= t tokens; m(t) = 1 + sum_j p_j m(t - 1 - j)
            m = np.zeros((surv.shape[0], cap + 1 + k + 1))
            off = k + 1  # m[:, off + t] holds m(t); m(t <= 0) = 0
            pj = p[:, seg, :]
            for tt in range(1, cap + 1):
                m[:, off + tt] = 1 + (pj * m[:, off + tt - 1 - np.arange(k + 1)]).sum(axis=1)
            steps[:, seg] = m[:, off:off + cap + 1] @ pmf
        # profiles are equally likely; Wald's identity gives each segment's tokens
        n = steps.shape[0]
        return float((steps * mu).sum() / n), float(steps.sum() / n)

    def draw(self, n_requests, k, rng, *, shift=1.0):
        """Per-step accepted lengths of ``n_requests`` requests at K=k."""
        surv = self._survival(k, shift)
        prof = rng.integers(0, self.profiles.shape[0], size=n_requests)
        req_parts, len_parts = [], []
        for seg in range(self.segments):
            raw = rng.lognormal(math.log(self.medians[seg]), self.sigmas[seg], size=n_requests)
            tokens = np.clip(np.rint(raw), 1, self.caps[seg]).astype(np.int64)
            mu = 1 + surv[prof, seg, :].sum(axis=1)  # expected tokens per step
            remaining = tokens.astype(float)
            active = np.arange(n_requests)
            while active.size:
                # a chunk of steps per unfinished request (about 1.2x the expected need);
                # keep the steps taken before its tokens were all produced
                m = np.ceil(remaining[active] / mu[active] * 1.2 + 5).astype(np.int64)
                req = np.repeat(active, m)
                u = rng.random(req.size)
                lengths = (u[:, None] < surv[prof[req], seg, :]).sum(axis=1)
                x = lengths + 1
                cs = np.cumsum(x)
                first = np.cumsum(m) - m
                before = cs - x - (cs[first] - x[first])[np.repeat(np.arange(active.size), m)]
                keep = before < remaining[req]
                req_parts.append(req[keep])
                len_parts.append(lengths[keep])
                remaining -= np.bincount(req[keep], weights=x[keep], minlength=n_requests)
                active = active[remaining[active] > 0]
        req = np.concatenate(req_parts)
        lengths = np.concatenate(len_parts)
        order = np.argsort(req, kind="stable")  # reasoning steps before answer steps
        req, lengths = req[order], lengths[order]
        steps = np.bincount(req, minlength=n_requests)
        return prof, steps, req, lengths


@functools.lru_cache(maxsize=256)
def _workload_moments(workload, k, shift):
    return workload._moments(k, shift)


def make_workload(rates, *, n_profiles=24, heterogeneity=20.0, answer_rates=None,
                  medians=(900.0,), sigmas=(0.9,), caps=(4096,), rng=None):
    """A :class:`Workload` whose profiles scatter around ``rates``."""
    rng = np.random.default_rng(rng)
    segs = [np.asarray(r, float) for r in (rates, answer_rates) if r is not None]
    k_max = len(segs[0])
    n = 1 if heterogeneity is None else int(n_profiles)
    prof = np.empty((n, len(segs), k_max))
    for s, a in enumerate(segs):
        prof[:, s, :] = _scatter(a, heterogeneity, n, rng)
    nseg = len(segs)
    fit = lambda v: tuple(v) if len(v) == nseg else tuple(v) * nseg  # noqa: E731
    return Workload(profiles=prof, medians=fit(medians)[:nseg], sigmas=fit(sigmas)[:nseg],
                    caps=tuple(int(c) for c in fit(caps)[:nseg]))


def simulate_workload(workload, k, *, n_requests=256, concurrency=32, step_seconds=0.03,
                      window_seconds=10.0, thinking="on", shift=1.0, rng=None):
    """Simulate one cell served from a :class:`Workload` (see :func:`make_workload`)."""
    rng = np.random.default_rng(rng)
    prof, steps, req, lengths = workload.draw(n_requests, k, rng, shift=shift)
    times = _step_times(steps, req, concurrency, step_seconds)
    rates = workload.profiles[prof, 0, :k]
    return SimulatedCell(k=k, thinking=thinking,
                         conditional_rates=tuple(float(x) for x in rates.mean(axis=0)),
                         true_al=workload.true_acceptance_length(k, shift=shift),
                         request_rates=rates, lengths=lengths.astype(np.int64), request_of=req,
                         time_of=times, window_seconds=window_seconds)


def mixture_true_acceptance_length(components, k):
    """Exact AL at K=k of a population mixing workloads: sum w T / sum w W."""
    weights = np.array([w for w, _ in components], float)
    moments = np.array([wl.expected_per_request(k) for _, wl in components])
    return float(weights @ moments[:, 0] / (weights @ moments[:, 1]))


def simulate_mixture(components, k, *, n_requests=64, concurrency=32, step_seconds=0.03,
                     window_seconds=10.0, thinking="on", rng=None):
    """Simulate one cell whose requests come from several workloads."""
    rng = np.random.default_rng(rng)
    shares = np.array([w for w, _ in components], float)
    counts = rng.multinomial(n_requests, shares / shares.sum())
    rates, steps, reqs, lengths = [], [], [], []
    offset = 0
    for (_, workload), n in zip(components, counts):
        if n == 0:
            continue
        prof, st, rq, ln = workload.draw(int(n), k, rng)
        rates.append(workload.profiles[prof, 0, :k])
        steps.append(st)
        reqs.append(rq + offset)
        lengths.append(ln)
        offset += int(n)
    order = rng.permutation(n_requests)  # serving order; request r becomes order[r]
    req = order[np.concatenate(reqs)]
    lengths = np.concatenate(lengths)
    sort = np.argsort(req, kind="stable")
    req, lengths = req[sort], lengths[sort]
    steps_of = np.bincount(req, minlength=n_requests)
    request_rates = np.empty((n_requests, k))
    request_rates[order] = np.concatenate(rates)
    times = _step_times(steps_of, req, concurrency, step_seconds)
    return SimulatedCell(k=k, thinking=thinking,
                         conditional_rates=tuple(float(x) for x in request_rates.mean(axis=0)),
                         true_al=mixture_true_acceptance_length(components, k),
                         request_rates=request_rates, lengths=lengths.astype(np.int64),
                         request_of=req, time_of=times, window_seconds=window_seconds)


@dataclass(frozen=True)
class CoverageResult:
    """How often the intervals ``fit`` reports contained the true AL, per method."""

    confidence_level: float
    n_runs: int
    hits: dict  # method -> runs whose interval contained the truth
    widths: dict = field(repr=False)  # method -> mean interval width (of reported runs)
    reported: dict = field(default_factory=dict, repr=False)  # method -> runs with an interval

    @property
    def coverage(self):
        """``{method: fraction of reported runs covered}`` (NaN when none reported)."""
        return {m: (h / self.reported[m] if self.reported.get(m) else math.nan)
                for m, h in self.hits.items()}

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame({"coverage": self.coverage, "runs": self.n_runs,
                             "with interval": self.reported,
                             "mean width": self.widths}).rename_axis("method")


def coverage_study(workload, k, *, n_runs=400, confidence_level=0.95, n_resamples=999,
                   rng=None, **sim_kwargs):
    """Coverage of ``fit``'s default intervals on runs simulated from ``workload``."""
    import warnings

    from goldenal.core.errors import LowSampleWarning
    from goldenal.stats.cell import fit_cell, request_span_windows

    rng = np.random.default_rng(rng)
    views = (("request", "bootstrap"), ("window", "batch-means"))
    hits = {m: 0 for _, m in views}
    widths = {m: 0.0 for _, m in views}
    reported = {m: 0 for _, m in views}
    concurrency = sim_kwargs.get("concurrency", 32)
    for _ in range(n_runs):
        cell = simulate_workload(workload, k, rng=rng, **sim_kwargs)
        for granularity, method in views:
            obs = cell.observations(granularity)
            span = None
            if granularity == "window":
                span = request_span_windows([o.drafts for o in obs],
                                            output_len=sum(workload.caps),
                                            concurrency=concurrency)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LowSampleWarning)
                fitted = fit_cell(obs, k=k, confidence_level=confidence_level,
                                  n_resamples=n_resamples, rng=rng, max_request_windows=span)
            lo, hi = fitted.confidence_interval
            if not math.isfinite(lo):
                continue
            reported[method] += 1
            hits[method] += bool(lo <= cell.true_al <= hi)
            widths[method] += hi - lo
    widths = {m: (w / reported[m] if reported[m] else math.nan) for m, w in widths.items()}
    return CoverageResult(confidence_level=confidence_level, n_runs=n_runs, hits=hits,
                          widths=widths, reported=reported)
