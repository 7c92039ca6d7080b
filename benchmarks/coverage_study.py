"""Coverage study of fit's intervals and of the cross-K check on simulated serving.

    python benchmarks/coverage_study.py                       # 300 replicates, ~30 min
    python benchmarks/coverage_study.py --reps 50 --quick     # a smoke run
    python benchmarks/coverage_study.py --markdown docs/statistics-table.md
    python benchmarks/coverage_study.py --request-only --reps 3000 --skip-chain \
        --scenario "48 requests" --ks 1,3                     # a few rows, many replicates

The simulator (``goldenal.testing.simulate.make_workload`` / ``simulate_workload``)
serves a prompt population: every request draws one of 24 acceptance
profiles (Beta scatter around a base profile), thinking-on requests have a
reasoning then an answer segment with different profiles, lengths are
heavy-tailed lognormal token counts up to the output cap (so easy requests
take fewer steps), requests fill 32 (or 16) slots, and 10 s log windows are
shorter than most requests.  The true AL is the exact ratio of expected
tokens to expected steps of the population (``Workload.true_acceptance_length``).

Per scenario and K in (1, 3, 7), every replicate is fitted from its
per-request records and from its log windows, by the methods ``fit`` uses
by default and by the ones it used before (for comparison):

* request studentized -- fit's default for per-request records (bootstrap-t,
  each resample studentized by its linearised SE, widened on the skewed side);
* request BCa -- scipy.stats.bootstrap's BCa, for comparison;
* request percentile (expanded) -- the previous default;
* request linearised t -- the linearised cluster SE with t(n - 1);
* log batches >= span -- fit's default for log windows (batches at least the
  longest request span from the output cap and concurrency; no interval
  with fewer than 10 batches);
* log sqrt(n) batches -- the previous default for log windows;
* count-based -- steps treated as independent (no longer an interval).

Reported: coverage (of replicates with an interval), share of replicates
with an interval, mean width, SE/SD (mean reported SE over the spread of the
estimate), misses above (truth above the interval) and below.

The chain part fits K = 1..7 cells (every request's profile identical across
K) and reports how often a clean run is flagged, and how often a cell whose
rates were scaled down is flagged, against the minimum detectable shift fit
reports for that cell.
"""

import argparse
import math
import sys
import time
import warnings

import numpy as np
from scipy.stats import bootstrap

from goldenal.core.errors import LowSampleWarning
from goldenal.stats import fit, fit_cell
from goldenal.stats.cell import (_percentile, ratio_interval, request_span_windows,
                                   studentized_ratio_interval)
from goldenal.testing.simulate import make_workload, simulate_workload

RATES = (0.85, 0.78, 0.72, 0.66, 0.6, 0.55, 0.5)
ANSWER = (0.9, 0.85, 0.8, 0.75, 0.7, 0.66, 0.62)
BASE = dict(n_requests=256, concurrency=32, step_seconds=0.03, window_seconds=10.0)

# label -> (make_workload kwargs, simulate_workload kwargs)
SCENARIOS = {
    "realistic (256 req, 32 slots)": (dict(), dict(BASE)),
    "thinking segments": (dict(answer_rates=ANSWER, medians=(1500.0, 400.0),
                               sigmas=(0.9, 0.7), caps=(3072, 1024)), dict(BASE)),
    "strong heterogeneity": (dict(heterogeneity=4.0), dict(BASE)),
    "48 requests": (dict(), dict(BASE, n_requests=48, concurrency=16)),
    "128 requests": (dict(), dict(BASE, n_requests=128, concurrency=32)),
    "few windows (64 short req, 2 s)": (dict(medians=(300.0,), caps=(1024,)),
                                        dict(BASE, n_requests=64, window_seconds=2.0)),
    "long requests (cap 8192)": (dict(medians=(2500.0,), caps=(8192,)),
                                 dict(BASE, n_requests=192, step_seconds=0.05)),
    "long log run (640 req, 8 slots)": (dict(medians=(250.0,), sigmas=(0.5,), caps=(512,)),
                                        dict(BASE, n_requests=640, concurrency=8)),
}
CHAIN_SCENARIOS = ("realistic (256 req, 32 slots)", "thinking segments", "strong heterogeneity")
METHODS = ("request studentized", "request BCa", "request percentile", "request linearised t",
           "log batches >= span", "log sqrt(n) batches", "count-based")
DEFAULTS = ("request studentized", "log batches >= span")


def old_batch_means(windows, level):
    """The previous default: batches of isqrt(n) windows, ratio estimator, t(m - 1)."""
    table = np.array([[o.drafts, o.accepted] for o in windows], float)
    n = table.shape[0]
    if n < 2:
        return math.nan, math.nan, math.nan
    size = max(1, math.isqrt(n))
    if n // size < 2:
        size = n // 2
    m = max(n // size, 1)
    idx = np.minimum(np.arange(n) // size, m - 1)
    b = np.zeros((m, 2))
    np.add.at(b, idx, table)
    if m < 2:
        return math.nan, math.nan, math.nan
    _, se, lo, hi = ratio_interval(b[:, 1], b[:, 0], level)
    return 1 + lo, 1 + hi, se


def count_based(cell, k, level):
    """The previous count-based interval: steps as independent draws."""
    from scipy.stats import norm

    n = cell.n_steps
    s = np.array(cell.per_position.counts) / n
    mean = cell.accepted / n
    var = float(((2 * np.arange(1, k + 1) - 1) * s).sum() - mean ** 2)
    se = math.sqrt(max(var, 0) / n)
    q = norm.ppf(0.5 + level / 2)
    al = cell.mean_acceptance_length
    return al - q * se, al + q * se, se


def one_replicate(workload, k, sim_kwargs, cap, level, resamples, rng):
    sim = simulate_workload(workload, k, rng=rng, **sim_kwargs)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        cell = fit_cell(sim.observations("request"), k=k, n_resamples=resamples, rng=rng,
                        confidence_level=level)
        out["request studentized"] = (*cell.confidence_interval, cell.standard_error)
        units = cell.units
        bca = bootstrap((units[:, 0], units[:, 1]),
                        lambda n, a, axis=-1: 1 + a.sum(axis) / n.sum(axis), paired=True,
                        vectorized=True, method="BCa", n_resamples=resamples, rng=rng,
                        confidence_level=level)
        out["request BCa"] = (*bca.confidence_interval, bca.standard_error)
        al_r = 1 + cell.replicates[:, 1] / cell.replicates[:, 0]
        lo, hi = _percentile(al_r, level, cell.n_clusters)
        out["request percentile"] = (lo, hi, float(np.std(al_r, ddof=1)))
        _, se, lo, hi = ratio_interval(cell.units[:, 1], cell.units[:, 0], level)
        out["request linearised t"] = (1 + lo, 1 + hi, se)
        windows = sim.observations("window")
        span = request_span_windows([o.drafts for o in windows], output_len=cap,
                                    concurrency=sim_kwargs["concurrency"])
        logcell = fit_cell(windows, k=k, n_resamples=resamples, rng=rng,
                           confidence_level=level, max_request_windows=span)
        out["log batches >= span"] = (*logcell.confidence_interval, logcell.standard_error)
        out["log sqrt(n) batches"] = old_batch_means(windows, level)
        out["count-based"] = count_based(cell, k, level)
    return cell.mean_acceptance_length, len(windows), out


def request_replicate(workload, k, sim_kwargs, level, resamples, rng):
    """Only fit's default for per-request records, from the requests' totals.

    The same draw as :func:`one_replicate` (``Workload.draw``, which
    ``simulate_workload`` lays out on a timeline) and the same interval
    (``studentized_ratio_interval``, which ``fit_cell`` applies to the
    requests' totals), without the timeline, log windows and comparison
    methods: fast enough for thousands of replicates per row.
    """
    n = sim_kwargs["n_requests"]
    _, steps, req, lengths = workload.draw(n, k, rng)
    units = np.column_stack([steps, np.bincount(req, weights=lengths, minlength=n)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi, se, _ = studentized_ratio_interval(units.astype(float), level, resamples, rng,
                                                   k=k)
        lo, hi = max(lo, 1.0), min(hi, k + 1.0)  # clipped as fit_cell clips
    return 1 + units[:, 1].sum() / units[:, 0].sum(), {"request studentized": (lo, hi, se)}


def summarise(truth, estimates, rows):
    """Per method: coverage, share with an interval, width, SE/SD, misses above/below."""
    sd = float(np.std(estimates, ddof=1))
    res = {}
    for method in (m for m in METHODS if m in rows[0]):
        lo = np.array([r[method][0] for r in rows], float)
        hi = np.array([r[method][1] for r in rows], float)
        se = np.array([r[method][2] for r in rows], float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        n = int(ok.sum())
        if n == 0:
            res[method] = dict(share=0.0, coverage=None, width=None, se_sd=None,
                               above=None, below=None)
            continue
        res[method] = dict(
            share=n / len(rows), coverage=float(((lo <= truth) & (truth <= hi))[ok].mean()),
            width=float((hi - lo)[ok].mean()),
            se_sd=float(np.nanmean(se[ok]) / sd) if sd > 0 else None,
            above=float((truth > hi)[ok].mean()), below=float((truth < lo)[ok].mean()))
    return res


def run_intervals(args, out):
    rng = np.random.default_rng(args.seed)
    scen = list(SCENARIOS)[:3] if args.quick else list(SCENARIOS)
    if args.scenario:
        scen = [label for label in scen if any(label.startswith(p) for p in args.scenario)]
    ks = [int(x) for x in args.ks.split(",")]
    out.append("### Intervals\n")
    out.append(f"{args.reps} replicates per row; nominal level {args.level:g}; "
               f"{args.resamples} bootstrap resamples"
               f"{' (per-request studentized only)' if args.request_only else ''}.  "
               "Coverage is over the replicates that got an interval (share).  SE/SD: mean "
               "reported standard error over the standard deviation of the estimate across "
               "replicates.\n")
    out.append("| scenario | K | windows | method | share | coverage | width | SE/SD "
               "| miss above | miss below |")
    out.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for label in scen:
        wl_kwargs, sim_kwargs = SCENARIOS[label]
        workload = make_workload(RATES, rng=np.random.default_rng(7), **wl_kwargs)
        cap = sum(workload.caps)
        for k in ks:
            start = time.perf_counter()
            truth = workload.true_acceptance_length(k)
            rows, est, nwin = [], [], []
            for _ in range(args.reps):
                if args.request_only:
                    (e, r), w = request_replicate(workload, k, sim_kwargs, args.level,
                                                  args.resamples, rng), math.nan
                else:
                    e, w, r = one_replicate(workload, k, sim_kwargs, cap, args.level,
                                            args.resamples, rng)
                rows.append(r)
                est.append(e)
                nwin.append(w)
            summary = summarise(truth, est, rows)
            win = "–" if args.request_only else f"{np.median(nwin):.0f}"
            for method, s in summary.items():
                mark = "**" if method in DEFAULTS else ""
                if s["coverage"] is None:
                    out.append(f"| {label} | {k} | {win} | {mark}{method}{mark} "
                               "| 0 | no interval | – | – | – | – |")
                    continue
                out.append(f"| {label} | {k} | {win} | {mark}{method}{mark} | "
                           f"{s['share']:.2f} | {s['coverage']:.3f} | {s['width']:.3f} | "
                           f"{s['se_sd']:.2f} | {s['above']:.3f} | {s['below']:.3f} |")
            print(f"{label} K={k}: truth {truth:.4f}, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)


def shift_for(workload, k, delta):
    """Rate factor f with true AL(k, f) = AL(k) - delta (secant iterations)."""
    base = workload.true_acceptance_length(k)
    f0, f1 = 1.0, 0.98
    g0 = base - workload.true_acceptance_length(k, shift=f0) - delta
    for _ in range(20):
        g1 = base - workload.true_acceptance_length(k, shift=f1) - delta
        if abs(g1) < 1e-5 or g1 == g0:
            break
        f0, f1, g0 = f1, f1 - g1 * (f1 - f0) / (g1 - g0), g1
    return f1


def run_chain(args, out):
    rng = np.random.default_rng(args.seed + 1)
    ks = range(1, 8)
    target = 4
    out.append("\n### Cross-K check\n")
    out.append(f"{args.chain_reps} runs of K = 1..7 per scenario, every request's profile "
               "identical across K.  *Null*: share of clean runs with any flag (nominal "
               f"{1 - args.level:.2f}; target at most twice that).  *Shifted*: the K={target} "
               "cell's rates scaled so its true AL drops by the shift; recovery is the share "
               f"of runs flagging K={target} among runs whose reported minimum detectable "
               f"shift at K={target} is below the true shift; wrong flags are flags of other "
               "cells.\n")
    out.append(f"| scenario | shift | median detectable at K={target} | runs flagged (null) "
               "| runs with detectable < shift | recovered | wrong flags |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    scen = CHAIN_SCENARIOS[:1] if args.quick else CHAIN_SCENARIOS
    if args.chain_scenario:
        scen = [label for label in CHAIN_SCENARIOS if label.startswith(args.chain_scenario)]
    for label in scen:
        wl_kwargs, sim_kwargs = SCENARIOS[label]
        workload = make_workload(RATES, rng=np.random.default_rng(7), **wl_kwargs)
        shifts = [float(s) for s in args.shifts.split(",")]
        factors = {d: shift_for(workload, target, d) for d in shifts}
        null_flagged = 0
        stats = {d: [0, 0, 0] for d in shifts}  # eligible, recovered, wrong
        mds = []
        start = time.perf_counter()
        for _ in range(args.chain_reps):
            cells = {("on", k): simulate_workload(workload, k, rng=rng, **sim_kwargs)
                     .observations("request") for k in ks}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LowSampleWarning)
                clean = fit(cells, method="eagle3", rng=rng, n_resamples=100)
            model = clean.models["on"]
            null_flagged += bool(model.flags)
            mds.append(model.detectable.get(target, math.nan))
            for d in shifts:
                bad = dict(cells)
                bad[("on", target)] = simulate_workload(
                    workload, target, rng=rng, shift=factors[d], **sim_kwargs
                ).observations("request")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", LowSampleWarning)
                    shifted = fit(bad, method="eagle3", rng=rng, n_resamples=100)
                m = shifted.models["on"]
                ks_flagged = {f.k for f in m.flags}
                if m.detectable.get(target, math.inf) < d:
                    stats[d][0] += 1
                    stats[d][1] += target in ks_flagged
                stats[d][2] += bool(ks_flagged - {target})
        n = args.chain_reps
        for d in shifts:
            eligible, rec, wrong = stats[d]
            out.append(f"| {label} | {d:.3f} | {np.nanmedian(mds):.3f} | {null_flagged / n:.3f} | "
                       f"{eligible / n:.2f} | "
                       f"{(rec / eligible) if eligible else float('nan'):.3f} | "
                       f"{wrong / n:.3f} |")
        print(f"chain {label}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--chain-reps", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=1999)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--shifts", default="0.05,0.15",
                        help="AL drops of the shifted cell, comma-separated")
    parser.add_argument("--quick", action="store_true", help="three scenarios, one chain")
    parser.add_argument("--chain-scenario", metavar="PREFIX",
                        help="only the chain scenarios whose label starts with PREFIX")
    parser.add_argument("--scenario", metavar="PREFIX", action="append",
                        help="only the interval scenarios whose label starts with PREFIX "
                             "(repeatable)")
    parser.add_argument("--ks", default="1,3,7", help="K of the interval rows, comma-separated")
    parser.add_argument("--request-only", action="store_true",
                        help="only fit's per-request interval (no timeline, log windows or "
                             "comparison methods): thousands of replicates per row")
    parser.add_argument("--skip-intervals", action="store_true")
    parser.add_argument("--skip-chain", action="store_true")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables here")
    args = parser.parse_args(argv)
    out = []
    if not args.skip_intervals:
        run_intervals(args, out)
    if not args.skip_chain:
        run_chain(args, out)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
