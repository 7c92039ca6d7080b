"""Coverage-guided fuzzing with atheris of what strangers hand goldenal besides measurements:
golden curve files, recipes (for `audit` and `inject`) and run manifests.

Not part of the test suite (a campaign runs for as long as it is given).
GOLDENAL_FUZZ_TARGET picks what one input is: ``curve`` (a golden curve
file), ``sh`` or ``yaml`` (a recipe file audited against the packaged curves),
``run`` (the ``run.yaml`` of a measurement run holding the example run's
request records, loaded as ``fit`` loads it), ``records`` (the K=3 request records
of the example run's thinking-on cells K=2-4, fitted: every interval given must lie
in [1, K + 1] around its estimate), ``inject-sh`` or ``inject-yaml``
(a serve config ``inject`` rewrites to carry the golden AL, deferred: nothing
written; an edit refused by its own read-back counts as a crash):

    pip install atheris
    mkdir -p /tmp/goldenal-curves
    GOLDENAL_FUZZ_TARGET=curve python tests/hostile/fuzz_golden_audit_atheris.py \\
        -max_total_time=600 /tmp/goldenal-curves golden_al_distribution
    mkdir -p /tmp/goldenal-recipes
    GOLDENAL_FUZZ_TARGET=sh python tests/hostile/fuzz_golden_audit_atheris.py \\
        -max_total_time=600 /tmp/goldenal-recipes tests/data/audit/repo
    mkdir -p /tmp/goldenal-srt-slurm
    GOLDENAL_FUZZ_TARGET=inject-yaml python tests/hostile/fuzz_golden_audit_atheris.py \\
        -max_total_time=600 /tmp/goldenal-srt-slurm tests/hostile/seeds/srt-slurm
    mkdir -p /tmp/goldenal-records
    GOLDENAL_FUZZ_TARGET=records python tests/hostile/fuzz_golden_audit_atheris.py \\
        -max_total_time=600 -max_len=20000 /tmp/goldenal-records \\
        measurements/minimaxm3-eagle3-sim-2026-11

As with ``fuzz_readers_atheris.py``, libFuzzer writes into the first corpus
directory, so a scratch directory comes first.  A crash is any exception
other than the project's own refusals (``GoldenALError``); findings are
normal output.  Keep a crasher as a regression test beside the one it
belongs to and fix the code.
"""

import importlib
import os
import pkgutil
import shutil
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports(include=["goldenal"]):   # coverage of goldenal's code
    import goldenal.auditing
    import goldenal.engines
    import goldenal.golden
    from goldenal.auditing import audit_report
    from goldenal.core.errors import GoldenALError
    from goldenal.golden.curvefile import curve_from_file, parse_curve_text
    from goldenal.golden.registry import load_registry

    import goldenal.apply
    import goldenal.readers
    import goldenal.recipes
    import goldenal.stats
    from goldenal.apply.inject import inject
    from goldenal.readers import load_run

    for _package in (goldenal.auditing, goldenal.engines, goldenal.golden, goldenal.readers,
                     goldenal.apply, goldenal.recipes, goldenal.stats):
        for _module in pkgutil.iter_modules(_package.__path__):
            importlib.import_module(f"{_package.__name__}.{_module.name}")

TARGET = os.environ.get("GOLDENAL_FUZZ_TARGET", "curve")
_DIR = tempfile.mkdtemp(prefix="goldenal-fuzz-")
_REGISTRY = load_registry()


def _curve(text):
    parsed = parse_curve_text(text, "curve.yaml")
    if not parsed.errors:
        curve_from_file(parsed, curve_id="fuzzed")


def _recipe(data):
    path = os.path.join(_DIR, f"recipe.{TARGET}")
    with open(path, "wb") as fh:
        fh.write(data)
    report = audit_report([path], root=_DIR, registry=_REGISTRY, settings=False,
                          respect_gitignore=False)
    for finding in report.findings:
        assert "\n" not in finding.message, finding.message


_EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "measurements", "minimaxm3-eagle3-sim-2026-11")


def _run(data):
    run = os.path.join(_DIR, "run")
    if not os.path.isdir(run):
        shutil.copytree(_EXAMPLE, run)
    with open(os.path.join(run, "run.yaml"), "wb") as fh:
        fh.write(data)
    load_run(run)


def _records(data):
    import math

    from goldenal.stats.curve import fit

    run = os.path.join(_DIR, "records")
    if not os.path.isdir(run):
        os.mkdir(run)
        for k in (2, 4):
            shutil.copy(os.path.join(_EXAMPLE, f"requests_on_k{k}.jsonl"), run)
        with open(os.path.join(run, "run.yaml"), "w") as fh:
            fh.write(_RECORDS_RUN)
    with open(os.path.join(run, "requests_on_k3.jsonl"), "wb") as fh:
        fh.write(data)
    curve = fit(load_run(run), n_resamples=100, rng=0)
    for cell in curve.cells.values():
        low, high = cell.confidence_interval
        if cell.failed or low is None or math.isnan(low):
            continue
        mean = cell.mean_acceptance_length
        assert 1 <= low <= mean <= high <= cell.k + 1, (cell.k, low, mean, high)


_RECORDS_RUN = """\
run: fuzzed
model: minimax-m3
curve: minimaxm3_eagle3
method: eagle3
draft: [Inferact/MiniMax-M3-EAGLE3]
engine: {name: vllm, version: 0.20.1}
dataset: {name: fuzzed, category: coding, output_len: 4096}
cells:
- {thinking: 'on', k: 2, files: [requests_on_k2.jsonl]}
- {thinking: 'on', k: 3, files: [requests_on_k3.jsonl]}
- {thinking: 'on', k: 4, files: [requests_on_k4.jsonl]}
"""


def _inject(data):
    path = os.path.join(_DIR, "serve." + TARGET.split("-")[1])
    try:
        result = inject(path, text=data.decode("utf-8", "replace"), force=True,
                        allow_non_agentic=True, _defer=True)
    except GoldenALError as exc:
        # inject's read-back refusing its own edit is a bug that would have been written
        assert "rewritten file would not parse" not in str(exc), str(exc)
        raise
    assert not result.written  # deferred: pending, never committed here


def one_input(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if TARGET == "curve":
                _curve(data.decode("utf-8", "replace"))
            elif TARGET == "run":
                _run(data)
            elif TARGET == "records":
                _records(data)
            elif TARGET.startswith("inject-"):
                _inject(data)
            else:
                _recipe(data)
        except GoldenALError:
            return


if __name__ == "__main__":
    if TARGET not in ("curve", "sh", "yaml", "run", "records", "inject-sh", "inject-yaml"):
        sys.exit(f"error: GOLDENAL_FUZZ_TARGET={TARGET!r}: curve, sh, yaml, run, records, "
                 "inject-sh or inject-yaml")
    first = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if first and os.path.abspath(first).startswith(repo + os.sep):
        sys.exit(f"error: {first} would receive the fuzzer's new inputs: "
                 "give a scratch corpus directory first (see the docstring)")
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
