"""How many requests give an interval of a stated half-width: goldenal plan, checked.

    python benchmarks/plan_study.py                 # 200 replicates per row
    python benchmarks/plan_study.py --reps 20       # a smoke run
    python benchmarks/plan_study.py --markdown FILE

On the coverage study's realistic workload (``goldenal.testing.simulate.make_workload``
around a(1..7) = 0.85 .. 0.50, 24 profiles, lognormal lengths of median 900
tokens up to 4096), per K in (1, 3, 7) and target half-width:

* a 48-request pilot (per-request records, as ``goldenal measure`` writes)
  is planned with ``plan_measurement``: the requests per cell it asks for;
* cells of that many requests are simulated and fitted as ``fit`` does
  (studentized bootstrap over requests): their median half-width and
  coverage;
* the same requests split into 10 independent runs (``--runs 10``, e.g. a
  log-only collector's server logs, one per run), fitted as runs: the
  requests per run the plan asks for, and the runs' median half-width and
  coverage.

The plan comes from one pilot; the "pilot spread" column repeats the
planning over 20 independent pilots and gives the range of requests asked
for (the pilot's own sampling error).
"""

import argparse
import math
import sys
import time
import warnings

import numpy as np

from goldenal.core.errors import LowSampleWarning
from goldenal.stats import fit_cell
from goldenal.stats.plan import plan_measurement
from goldenal.testing.simulate import make_workload, simulate_workload

RATES = (0.85, 0.78, 0.72, 0.66, 0.6, 0.55, 0.5)
PILOT = 48


def _fit(obs, k, rng, resamples):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleWarning)
        return fit_cell(obs, k=k, rng=rng, n_resamples=resamples)


def _check(workload, k, n, reps, rng, resamples, runs=None):
    """(median half-width, coverage, share with an interval) of cells of n requests."""
    half, hits, given = [], 0, 0
    for _ in range(reps):
        if runs is None:
            cell = simulate_workload(workload, k, n_requests=n, rng=rng)
            obs, truth = cell.observations("request"), cell.true_al
        else:
            per = math.ceil(n / runs)
            obs = []
            for i in range(runs):  # independent server runs, one file each
                cell = simulate_workload(workload, k, n_requests=per, rng=rng)
                obs.extend(cell.observations("total", source=f"run{i}.log"))
            truth = cell.true_al
        fitted = _fit(obs, k, rng, resamples)
        lo, hi = fitted.confidence_interval
        if not math.isfinite(lo):
            continue
        given += 1
        half.append((hi - lo) / 2)
        hits += lo <= truth <= hi
    return float(np.median(half)), hits / max(given, 1), given / reps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--widths", default="0.1,0.05")
    parser.add_argument("--ks", default="1,3,7")
    parser.add_argument("--markdown", metavar="FILE")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    workload = make_workload(RATES, rng=args.seed)
    out = [f"{args.reps} replicates per row; {PILOT}-request pilot; level 0.95; "
           f"{args.resamples} resamples.",
           "",
           "| K | true AL | target half-width | requests planned | pilot spread (20 pilots) "
           "| median half-width | coverage | 10 runs: requests per run | median half-width "
           "| coverage |",
           "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for k in (int(x) for x in args.ks.split(",")):
        pilots = [simulate_workload(workload, k, n_requests=PILOT, rng=rng) for _ in range(21)]
        for h in (float(x) for x in args.widths.split(",")):
            start = time.perf_counter()

            def planned(pilot, runs=None):
                plan = plan_measurement({("on", k): pilot.observations("request")},
                                        half_width=h, runs=runs, rng=rng)
                return plan.needed

            n = planned(pilots[0])
            spread = sorted(planned(p) for p in pilots[1:])
            n_runs = planned(pilots[0], runs=10)
            width, cov, _ = _check(workload, k, n, args.reps, rng, args.resamples)
            r_width, r_cov, _ = _check(workload, k, n_runs, args.reps, rng, args.resamples,
                                       runs=10)
            out.append(f"| {k} | {pilots[0].true_al:.3f} | {h:g} | {n} | "
                       f"{spread[1]}-{spread[-2]} | {width:.3f} | {cov:.3f} | "
                       f"{math.ceil(n_runs / 10)} | {r_width:.3f} | {r_cov:.3f} |")
            print(out[-1], f"({time.perf_counter() - start:.0f} s)", file=sys.stderr,
                  flush=True)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
