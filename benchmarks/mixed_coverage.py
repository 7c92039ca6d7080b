"""Coverage of fit's per-request interval where many requests accept every draft.

    python benchmarks/mixed_coverage.py                  # 1000 replicates per row
    python benchmarks/mixed_coverage.py --reps 100       # a smoke run
    python benchmarks/mixed_coverage.py --markdown FILE  # also write the table
    python benchmarks/mixed_coverage.py --scenario 0.3:128  # one population
    python benchmarks/mixed_coverage.py --seed 20261206 --sample-seed 1  # a second draw

The population mixes two workloads of ``goldenal.testing.simulate`` (drawn by
``simulate_mixture``): short requests (lognormal median 40 tokens, sigma
0.5, cap 256) that accept every draft, and long ones (median 900 tokens,
sigma 0.9, cap 4096) with the coverage study's realistic profile
(24 Beta profiles around a(1..7) = 0.85 .. 0.50).  The step-weighted AL of
the population, E[tokens] / E[steps], is exact
(``mixture_true_acceptance_length``); the long requests carry most of the
steps, so it lies well below K + 1 although most requests sit there.

Per scenario (share of long requests, requests per cell) and K in (3, 7),
every replicate is fitted by ``fit_cell`` from its per-request records, and
the table reports how many replicates got an interval, how often it held the
truth, how often the truth lay above or below it, and its mean width.  For
comparison, the exact one-sided bound ``fit`` returned before whenever every
sampled request accepted every draft (AL >= 1 + K 0.05^(1/m)): how often
that happened and how often it held the truth.
"""

import argparse
import math
import sys
import time
import warnings

import numpy as np

from goldenal.core.errors import LowSampleWarning
from goldenal.stats import fit_cell
from goldenal.testing.simulate import make_workload, simulate_mixture

RATES = (0.85, 0.78, 0.72, 0.66, 0.6, 0.55, 0.5)
# (share of long requests, requests per cell)
SCENARIOS = ((0.10, 20), (0.10, 64), (0.10, 256), (0.03, 128), (0.30, 64), (0.30, 128))


def workloads(seed):
    short = make_workload([1.0] * len(RATES), heterogeneity=None, medians=(40.0,),
                          sigmas=(0.5,), caps=(256,))
    long_ = make_workload(RATES, medians=(900.0,), sigmas=(0.9,), caps=(4096,), rng=seed)
    return short, long_


def row(share, n, k, reps, resamples, level, rng, short, long_):
    comp = [(1 - share, short), (share, long_)]
    got = hit = above = below = 0
    width = 0.0
    old = old_hit = 0
    truth = None
    for _ in range(reps):
        cell = simulate_mixture(comp, k, n_requests=n, rng=rng)
        truth = cell.true_al
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LowSampleWarning)
            fitted = fit_cell(cell.observations("request"), k=k, confidence_level=level,
                              n_resamples=resamples, rng=rng)
        if fitted.accepted == k * fitted.n_steps:  # what the removed bound would have said
            old += 1
            old_hit += bool(1 + k * (1 - level) ** (1 / n) <= truth)
        lo, hi = fitted.confidence_interval
        if not math.isfinite(lo):
            continue
        got += 1
        hit += lo <= truth <= hi
        above += truth > hi
        below += truth < lo
        width += hi - lo
    cov = hit / got if got else math.nan
    return (f"| {100 * share:g}% long, {n} requests | {k} | {truth:.3f} | {got / reps:.3f} | "
            f"{cov:.3f} | {above / max(got, 1):.3f} | {below / max(got, 1):.3f} | "
            f"{width / max(got, 1):.3f} | {old / reps:.3f} | "
            f"{(f'{old_hit / old:.3f}' if old else '-')} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--seed", type=int, default=20261204,
                        help="draws the population (the long requests' profiles) and, "
                             "unless --sample-seed is given, the samples")
    parser.add_argument("--sample-seed", type=int,
                        help="draws the samples and resamples apart from the population: "
                             "a second draw of the same rows, to see their Monte Carlo spread")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--ks", default="3,7", help="K of the rows, comma-separated")
    parser.add_argument("--scenario", metavar="SHARE:N", action="append",
                        help="only this share of long requests and requests per cell, e.g. "
                             "0.3:128 (repeatable)")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table here")
    args = parser.parse_args(argv)
    scenarios = SCENARIOS
    if args.scenario:
        scenarios = [(float(a), int(b)) for a, b in (x.split(":") for x in args.scenario)]
    rng = np.random.default_rng(args.seed if args.sample_seed is None else args.sample_seed)
    short, long_ = workloads(args.seed)
    drawn = "" if args.sample_seed is None else f", samples drawn with seed {args.sample_seed}"
    out = [f"Population seed {args.seed}{drawn}; {args.reps} replicates per row; level "
           f"{args.level:g}; {args.resamples} resamples.  Coverage and misses are over the "
           "replicates with an interval (share).  Old bound: share of replicates where every "
           "sampled request accepted every draft, and how often the exact one-sided bound "
           "returned then held the truth.",
           "",
           "| population | K | true AL | share | coverage | miss above | miss below | width "
           "| old bound share | old bound coverage |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for share, n in scenarios:
        for k in (int(x) for x in args.ks.split(",")):
            start = time.perf_counter()
            out.append(row(share, n, k, args.reps, args.resamples, args.level, rng, short,
                           long_))
            print(out[-1], f"({time.perf_counter() - start:.0f} s)", file=sys.stderr,
                  flush=True)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
