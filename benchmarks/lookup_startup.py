"""CPU time of `goldenal lookup` relative to a bare interpreter start-up.

Runs, alternating in one loop so that machine noise hits all alike:
  baseline   python -c pass
  yaml       python -c "import yaml"
  re         python -c "import re"      (what pip's console script imports first)
  main       python -c "...main(['lookup', ...])"   (goldenal's own share)
  lookup     goldenal lookup qwen3.5 --k 3 --thinking on   (console script)
and reports each command's median CPU time (user + system, from the child's
rusage) and its ratio to the baseline.  Target: lookup <= 2.0x baseline on
the packaged curves.  The console script pip writes imports ``re`` before
goldenal (about 0.5x of a start-up on its own); ``main`` shows what goldenal
itself adds.  An editable install starts every interpreter, the baseline
included, with its import finder, which makes all ratios look smaller.

Like pip installing a wheel, it first byte-compiles the goldenal package and
lets the children use the cache (PYTHONDONTWRITEBYTECODE is removed from
their environment): without it every run would recompile the sources.

    python benchmarks/lookup_startup.py [--rounds 60] [--golden-dir DIR]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_time(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--golden-dir", help="time lookups against another directory")
    args = parser.parse_args()
    import compileall

    import goldenal

    compileall.compile_dir(os.path.dirname(goldenal.__file__), quiet=1)
    script = shutil.which("goldenal", path=os.path.dirname(sys.executable))
    lookup = ([script] if script else [sys.executable, "-m", "goldenal"]) + [
        "lookup", "qwen3.5", "--k", "3", "--thinking", "on"]
    if args.golden_dir:
        lookup += ["--golden-dir", args.golden_dir, "--curve", "qwen3.5_mtp"]
        lookup.remove("qwen3.5")
    in_process = ("import sys\nfrom goldenal.cli import main\n"
                  f"sys.exit(main({lookup[lookup.index('lookup'):]!r}))")
    commands = {
        "baseline": [sys.executable, "-c", "pass"],
        "yaml": [sys.executable, "-c", "import yaml"],
        "re": [sys.executable, "-c", "import re"],
        "main": [sys.executable, "-c", in_process],
        "lookup": lookup,
    }
    times = {name: [] for name in commands}
    for name, argv in commands.items():  # warm the page cache
        cpu_time(argv)
    for _ in range(args.rounds):
        for name, argv in commands.items():
            times[name].append(cpu_time(argv))
    base = statistics.median(times["baseline"])
    print(f"{'command':10} {'median CPU ms':>14} {'ratio':>7}")
    for name in commands:
        med = statistics.median(times[name])
        print(f"{name:10} {med * 1000:14.1f} {med / base:7.2f}x")
    ratio = statistics.median(times["lookup"]) / base
    print(f"lookup / baseline = {ratio:.2f}x (target <= 2.00x)")


if __name__ == "__main__":
    main()
