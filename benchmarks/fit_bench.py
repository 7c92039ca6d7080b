"""Time `goldenal.stats.fit` on a 2 x 8 cell run with 10,000 bootstrap resamples per cell.

    python benchmarks/fit_bench.py [--requests 200] [--resamples 10000] [--repeat 3]

The run is simulated (per-request records, thinking on and off, K = 1..8);
the resampling is vectorised (a weights matrix times per-request totals), so
the time grows with resamples x requests, not with a Python loop.
"""

import argparse
import time

from goldenal.stats import fit
from goldenal.testing.simulate import simulate_run

RATES = {"on": [0.8, 0.72, 0.66, 0.6, 0.55, 0.5, 0.48, 0.45],
         "off": [0.85, 0.75, 0.7, 0.65, 0.6, 0.58, 0.55, 0.5]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per cell")
    parser.add_argument("--steps", type=int, default=500, help="mean steps per request")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    run = simulate_run(RATES, range(1, 9), rng=1, n_requests=args.requests,
                       steps_per_request=args.steps)
    observations = run.observations("request")
    steps = sum(c.n_steps for c in run.cells.values())
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = fit(observations, method="eagle3", n_resamples=args.resamples, rng=0)
        times.append(time.perf_counter() - start)
    print(f"fit of 16 cells ({args.requests} requests, {steps} steps in all), "
          f"{args.resamples} resamples per cell: best {min(times):.2f} s, "
          f"median {sorted(times)[len(times) // 2]:.2f} s over {args.repeat} runs")
    print(repr(result))


if __name__ == "__main__":
    main()
