"""Time against input size for the pathological shapes of tests/hostile/shapes.py.

For each shape (spaces in ``[[ ]]``, nested ``if``s, a line of repeated
``EXTRA_INPUTS=``, an arithmetic exponent tower through ``goldenal audit``; a
long header comment through curve-file parsing) it times sizes n, 2n, 4n, 8n
and prints each time with its ratio to the smallest.  Linear time shows as
ratios near 1, 2, 4, 8; quadratic as 1, 4, 16, 64.  Target: the 8n/n ratio
below 16 for every shape (the sizes the requirements name are 4n or 8n).
Nested ``if``s are linear in the nesting depth: a line's enclosing conditions
are a path sharing its prefix with the enclosing line's
(``goldenal.recipes.shell.Path``), and the audit reads each path only through
its conditions that matter; 400 levels audit in about 20 ms (4 s before
conditions deeper than MAX_FORK_DEPTH stopped forking, 230 ms while every line
copied its whole path).

    python benchmarks/hostile_shapes.py [--repeat 3]
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from hostile.shapes import SCRIPTS, header_comment  # noqa: E402

from goldenal.golden.curvefile import parse_curve_text, parse_header  # noqa: E402
from goldenal.auditing import audit  # noqa: E402

BASE = {"brackets": 250, "nested_ifs": 50, "extra_inputs": 2000, "arith_tower": 1,
        "header_comment": 2000}


def timed(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    audit([os.path.abspath(__file__)])  # imports and caches out of the timings
    work = tempfile.mkdtemp(prefix="goldenal-shapes-")
    worst = 0.0
    for shape, base in BASE.items():
        times = []
        for factor in (1, 2, 4, 8):
            n = base * factor
            if shape == "header_comment":
                header = parse_curve_text(header_comment(n), "curve.yaml").header
                times.append(timed(lambda: parse_header(header), args.repeat))
                continue
            path = os.path.join(work, f"{shape}_{n}.sh")
            with open(path, "w") as fh:
                fh.write(SCRIPTS[shape](n))
            times.append(timed(lambda: audit([path]), args.repeat))
        ratios = [t / times[0] if times[0] else 0.0 for t in times]
        worst = max(worst, ratios[-1])
        print(f"{shape:<15} n={base:<6} " + "  ".join(
            f"{base * f:>6}: {t * 1000:8.2f} ms ({r:5.1f}x)"
            for f, t, r in zip((1, 2, 4, 8), times, ratios)))
    print(f"largest 8n/n ratio: {worst:.1f} (target < 16)")
    return 0 if worst < 16 else 1


if __name__ == "__main__":
    sys.exit(main())
