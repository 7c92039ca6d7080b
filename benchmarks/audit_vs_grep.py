"""CPU time of ``goldenal audit`` against ``grep -rlE`` over the same tree.

Run by hand::

    python benchmarks/audit_vs_grep.py /path/to/recipe-repo [--rounds 7]

The reference tree is an InferenceX checkout (about 1,300 files, 16 MB).
``python benchmarks/make_recipe_tree.py /tmp/ix-tree`` writes one of the same
size with about five times its serve configs: a harder case, not the budget's.

grep looks for the very names the audit's prefilter looks for (every engine's
synthetic-acceptance knob, the speculative settings and the suppression comment,
from :mod:`goldenal.auditing.evidence`), so both select the same files; its time
depends on the pattern (GNU grep's literal search is fastest with a short
common word such as ``speculative`` in the alternation), so the pattern is
printed with the result.

Alternates the two measurements in one run: grep's CPU time is the user+sys
time of the child process (``resource.getrusage(RUSAGE_CHILDREN)``); the
audit's is ``time.process_time()`` around the library call, with the
registry loaded once beforehand (as a long-lived linter process would).
Each round measures grep, a cold audit (no cache: every file parsed, the
primary number) and a warm one (the cache of :mod:`goldenal.auditing.cache`,
in a temporary directory, filled by the previous run over the same unchanged
tree: the whole run is answered after a walk that only stats each file).
Reports the medians and the ratios; the audit's budget is 5x grep cold and
2x warm: the exit status is 1 above either.
"""

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time



def pattern():
    """The prefilter's names as one extended regular expression."""
    from goldenal.auditing import evidence as ev

    names = [name.decode() for name in (*ev.KNOB_BYTES, *ev.SPEC_BYTES, b"goldenal:")]
    # plain words: nothing to escape (a backslash before "-" is undefined in an ERE)
    assert all(re.fullmatch(r"[\w:-]+", name) for name in names), names
    return "|".join(names)


def grep_cpu(root, regex):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["grep", "-rlE", regex, root], stdout=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def audit_cpu(root, registry, cache=False):
    from goldenal.auditing import audit

    start = time.process_time()
    findings = audit([root], registry=registry, cache=cache)
    return time.process_time() - start, len(findings)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    from goldenal.golden.registry import load_registry

    registry = load_registry()
    regex = pattern()
    with tempfile.TemporaryDirectory() as cache:
        audit_cpu(args.root, registry)          # warm imports and the page cache
        audit_cpu(args.root, registry, cache)   # fill the cache
        grep_cpu(args.root, regex)
        g, cold, warm = [], [], []
        n = n_warm = 0
        for _ in range(args.rounds):
            g.append(grep_cpu(args.root, regex))
            t, n = audit_cpu(args.root, registry)
            cold.append(t)
            t, n_warm = audit_cpu(args.root, registry, cache)
            warm.append(t)
    if n != n_warm:
        print(f"error: {n} findings cold, {n_warm} warm", file=sys.stderr)
        return 2
    gm, cm, wm = statistics.median(g), statistics.median(cold), statistics.median(warm)
    print(f"grep -rlE '{regex}'")
    print(f"grep -rlE : median {gm * 1000:.1f} ms CPU over {args.rounds} rounds")
    ratio, warm_ratio = (cm / gm, wm / gm) if gm else (float("inf"),) * 2
    print(f"audit     : median {cm * 1000:.1f} ms CPU cold, no cache ({n} findings)")
    print(f"  warm    : median {wm * 1000:.1f} ms CPU with the cache filled")
    print(f"ratio     : {ratio:.1f}x cold (budget 5x), {warm_ratio:.1f}x warm (budget 2x)")
    return 0 if ratio <= 5 and warm_ratio <= 2 else 1

if __name__ == "__main__":
    sys.exit(main())
