"""CPU time of ``goldenal audit`` against ``grep -rlE`` over the same tree.

Run by hand::

    python benchmarks/audit_vs_grep.py /path/to/recipe-repo [--rounds 7]

The reference tree is an InferenceX checkout (about 1,300 files, 16 MB).
``python benchmarks/make_recipe_tree.py /tmp/ix-tree`` writes one of the same
size with about five times its serve configs: a harder case, not the budget's.

The budget's grep looks for the knob names: every engine's synthetic-acceptance
knob and the runner's, as the audit's prefilter spells them
(:data:`goldenal.auditing.evidence.KNOB_BYTES`), the search a reviewer would
run by hand.  grep's time depends on the pattern, not only on the tree: GNU
grep 3.8 runs the prefilter's whole alternation (the knobs, the speculative
settings and the suppression comment, which selects the same files the audit
reads) about three times faster, since a short common word such as
``speculative`` lets it skip ahead.  Both are measured and printed; the
second ratio is the stricter reference, reported without a budget.

Alternates the measurements in one run: grep's CPU time is the user+sys
time of the child process (``resource.getrusage(RUSAGE_CHILDREN)``); the
audit's is ``time.process_time()`` around the library call, with the
registry loaded once beforehand (as a long-lived linter process would).
Each round measures both greps, a cold audit (no cache: every file parsed,
the primary number) and a warm one (the cache of
:mod:`goldenal.auditing.cache`, in a temporary directory, filled by the
previous run over the same unchanged tree: the whole run is answered after a
walk that only stats each file).  Reports the medians and the ratios; the
audit's budget is 5x the knob-name grep cold and 2x warm: the exit status is
1 above either.
"""

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time



def patterns():
    """``(knob names, the prefilter's names)``, each as one extended regular expression."""
    from goldenal.auditing import evidence as ev

    knob_names = [name.decode() for name in ev.KNOB_BYTES]
    prefilter = knob_names + [name.decode() for name in (*ev.SPEC_BYTES, b"goldenal:")]
    # plain words: nothing to escape (a backslash before "-" is undefined in an ERE)
    assert all(re.fullmatch(r"[\w:-]+", name) for name in prefilter), prefilter
    return "|".join(knob_names), "|".join(prefilter)


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
    knob_regex, prefilter_regex = patterns()
    with tempfile.TemporaryDirectory() as cache:
        audit_cpu(args.root, registry)          # warm imports and the page cache
        audit_cpu(args.root, registry, cache)   # fill the cache
        grep_cpu(args.root, knob_regex)
        g, g_wide, cold, warm = [], [], [], []
        n = n_warm = 0
        for _ in range(args.rounds):
            g.append(grep_cpu(args.root, knob_regex))
            t, n = audit_cpu(args.root, registry)
            cold.append(t)
            g_wide.append(grep_cpu(args.root, prefilter_regex))
            t, n_warm = audit_cpu(args.root, registry, cache)
            warm.append(t)
    if n != n_warm:
        print(f"error: {n} findings cold, {n_warm} warm", file=sys.stderr)
        return 2
    gm, wide, cm, wm = (statistics.median(x) for x in (g, g_wide, cold, warm))

    def ratio(t, base):
        return t / base if base else float("inf")

    print(f"knob names : grep -rlE '{knob_regex}'")
    print(f"prefilter  : grep -rlE '{prefilter_regex}'")
    print(f"grep, knob names : median {gm * 1000:.1f} ms CPU over {args.rounds} rounds")
    print(f"grep, prefilter  : median {wide * 1000:.1f} ms CPU")
    print(f"audit, cold      : median {cm * 1000:.1f} ms CPU, no cache ({n} findings)")
    print(f"audit, warm      : median {wm * 1000:.1f} ms CPU with the cache filled")
    print(f"ratio            : {ratio(cm, gm):.1f}x cold (budget 5x), {ratio(wm, gm):.1f}x warm "
          f"(budget 2x) over the knob-name grep")
    print(f"                   {ratio(cm, wide):.1f}x cold, {ratio(wm, wide):.1f}x warm over the "
          "prefilter grep (no budget)")
    return 0 if ratio(cm, gm) <= 5 and ratio(wm, gm) <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
