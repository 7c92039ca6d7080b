"""A short, repeatable pass of every atheris harness: each target from a fixed seed for a
fixed number of runs, seeded by the repository's own samples and the recipe shapes in
``seeds/`` (CI runs it; a campaign is the harness itself, run for as long as it is given).

    pip install atheris
    python tests/hostile/fuzz_smoke.py            # every target
    python tests/hostile/fuzz_smoke.py yaml run   # some of them

It keeps the harnesses working as the code under them changes, and replays the
mutations a fixed seed makes of the samples.  A crash fails it, naming the input libFuzzer
saved (keep it as a regression test beside the one it belongs to, and fix the code).
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = "measurements/minimaxm3-eagle3-sim-2026-11"
# srt-slurm recipes as srtctl expands them: variants, zip sections, the 2.0 layout, sweeps
SRT_SLURM = "tests/hostile/seeds/srt-slurm"

# target -> (harness, runs, max input length, seed corpora under the repository)
TARGETS = {
    "readers": ("fuzz_readers_atheris.py", 3000, 65536, ["tests/data/ingest"]),
    "curve": ("fuzz_golden_audit_atheris.py", 3000, 4096, ["golden_al_distribution"]),
    "sh": ("fuzz_golden_audit_atheris.py", 3000, 4096, ["tests/data/audit/repo"]),
    "yaml": ("fuzz_golden_audit_atheris.py", 3000, 4096, ["tests/data/audit/repo", SRT_SLURM]),
    "run": ("fuzz_golden_audit_atheris.py", 1000, 4096, [EXAMPLE]),
    "records": ("fuzz_golden_audit_atheris.py", 150, 20000, [EXAMPLE]),
    "inject-sh": ("fuzz_golden_audit_atheris.py", 3000, 4096, ["tests/data/audit/repo"]),
    "inject-yaml": ("fuzz_golden_audit_atheris.py", 3000, 4096,
                    ["tests/data/audit/repo", SRT_SLURM]),
}
# a target that runs this long has hung: libFuzzer's own limit per input
TIMEOUT_PER_INPUT = 60


def run_target(name, scratch):
    harness, runs, max_len, seeds = TARGETS[name]
    corpus = os.path.join(scratch, name)
    os.mkdir(corpus)
    env = {**os.environ, "GOLDENAL_FUZZ_TARGET": name, "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, os.path.join(HERE, harness), "-seed=1", f"-runs={runs}",
           f"-max_len={max_len}", f"-timeout={TIMEOUT_PER_INPUT}",
           f"-artifact_prefix={corpus}{os.sep}", corpus,
           *(os.path.join(REPO, s) for s in seeds)]
    start = time.monotonic()
    done = subprocess.run(cmd, env=env, cwd=scratch, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace")
    crashes = sorted(f for f in os.listdir(corpus) if f.startswith(("crash-", "timeout-",
                                                                   "oom-")))
    took = time.monotonic() - start
    if done.returncode or crashes:
        tail = "\n".join(done.stderr.splitlines()[-30:])
        print(f"{name}: FAILED after {took:.0f} s (exit {done.returncode}); saved: "
              f"{', '.join(os.path.join(corpus, c) for c in crashes) or 'nothing'}\n{tail}",
              flush=True)
        return False
    print(f"{name}: {runs} runs from seed 1, no crash ({took:.0f} s)", flush=True)
    return True


def main(names):
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        sys.exit(f"error: unknown target {unknown[0]!r}: {', '.join(TARGETS)}")
    with tempfile.TemporaryDirectory(prefix="goldenal-fuzz-smoke-") as scratch:
        results = [run_target(name, scratch) for name in names or TARGETS]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
