"""Coverage study of the interval methods (slow; the tests run a small version).

    python benchmarks/coverage_study.py --runs 1000

For several scenarios (number of requests, request heterogeneity), simulate
runs with ``goldenal.simulate``, fit every run three ways (cluster bootstrap
over requests, batch means over logging windows, count-based) and report how
often the nominal interval contained the true AL, and the mean width.
"""

import argparse
import time

from goldenal.simulate import coverage_study

RATES = [0.82, 0.74, 0.66, 0.6, 0.55, 0.5]
LONG = dict(steps_per_request=1000, step_seconds=0.03, concurrency=16, window_seconds=10.0)
SCENARIOS = [
    # (label, simulate_cell keyword arguments)
    ("48 req x 250 steps, 2 s windows, kappa 20",
     dict(n_requests=48, steps_per_request=250, concurrency=8, window_seconds=2.0,
          heterogeneity=20)),
    ("200 req x 1000 steps, 10 s windows, kappa 20", dict(n_requests=200, heterogeneity=20,
                                                          **LONG)),
    ("200 req x 1000 steps, 10 s windows, kappa 5", dict(n_requests=200, heterogeneity=5,
                                                         **LONG)),
    ("64 req x 1000 steps, 10 s windows (short run)", dict(n_requests=64, heterogeneity=20,
                                                           **LONG)),
    ("200 req x 1000 steps, homogeneous requests", dict(n_requests=200, heterogeneity=None,
                                                        **LONG)),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1999)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--level", type=float, default=0.95)
    args = parser.parse_args(argv)
    print(f"nominal level {args.level:g}, {args.runs} runs per scenario, "
          f"{args.resamples} bootstrap resamples, rates {RATES}")
    print(f"{'scenario':<48} {'bootstrap':>10} {'batch-means':>12} {'count':>8}  seconds")
    for label, kwargs in SCENARIOS:
        start = time.perf_counter()
        result = coverage_study(RATES, n_runs=args.runs, confidence_level=args.level,
                                n_resamples=args.resamples, rng=args.seed, **kwargs)
        cov = result.coverage
        print(f"{label:<48} {cov['bootstrap']:>10.3f} {cov['batch-means']:>12.3f} "
              f"{cov['count']:>8.3f}  {time.perf_counter() - start:7.1f}")


if __name__ == "__main__":
    main()
