import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = ROOT / "golden_al_distribution"
DATA = ROOT / "tests" / "data"
# The published curve files as InferenceX ships them, and real engine log lines
# (sources: tests/data/README.md).  The suite reads nothing outside the repository.
REFERENCE_GOLDEN = DATA / "upstream_golden"
SAMPLES = DATA / "samples"


def published_cells(directory=PACKAGED):
    """(curve id, thinking, K, value text) for every cell of a directory, read naively.

    Deliberately independent of goldenal's parser: a line-oriented read of the
    committed files.
    """
    cells = []
    for path in sorted(Path(directory).glob("*.yaml")):
        if path.name == "manifest.yaml":
            continue
        mode = None
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped in ("thinking_on:", "thinking_off:"):
                mode = stripped[len("thinking_"):-1]
            elif mode and line.startswith("    ") and ":" in stripped:
                k, value = stripped.split(":")
                cells.append((path.stem, mode, int(k), value.strip()))
    return cells


def write_request_run(directory, rows, k, *, thinking="on"):
    """A run directory of one cell: vLLM per-request records, one per (steps, accepted)."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (n, a) in enumerate(rows):
        base, extra = divmod(a, n)  # every step accepts base or base + 1 drafts
        hist = [0] * (k + 1)
        hist[base] += n - extra
        if extra:
            hist[base + 1] += extra
        spec = {"acceptance_histogram": hist, "num_spec_steps": n,
                "num_accepted_draft_tokens": a, "num_draft_tokens": k * n, "num_spec_tokens": k}
        lines.append(json.dumps({"id": f"r{i}", "metrics": {"speculative_decoding": spec}}))
    name = f"requests_{thinking}_k{k}.jsonl"
    (directory / name).write_text("\n".join(lines) + "\n")
    (directory / "run.yaml").write_text(
        "model: m\ncurve: mixed\nmethod: eagle3\ndraft: [d]\nengine: {name: vllm, version: "
        "0.20.1}\ndataset: {name: speed-bench, category: coding, output_len: 4096}\n"
        f"date: '2026-12-01'\ncells:\n- {{thinking: '{thinking}', k: {k}, files: [{name}]}}\n")
    return directory


@pytest.hookimpl(trylast=True)  # after any shuffling plugin: the order it leaves stays
def pytest_collection_modifyitems(config, items):
    """The end-to-end tests (tests/e2e/) run last: a first run builds llama-server for
    them, and the fast suite's failures show before that build starts."""
    e2e = ROOT / "tests" / "e2e"
    items[:] = sorted(items, key=lambda item: Path(str(item.fspath)).is_relative_to(e2e))


@pytest.fixture(autouse=True, scope="session")
def _audit_cache_of_the_session(tmp_path_factory):
    """No audit of the suite, module and session fixtures included, uses the user's cache.

    Only ``$GOLDENAL_CACHE_DIR`` (the audit cache's own variable) is set:
    ``XDG_CACHE_HOME`` stays as it is, so the e2e tests still find the
    ``llama-server`` built under the user cache directory (tests/e2e/llama_build.py).
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GOLDENAL_CACHE_DIR", str(tmp_path_factory.mktemp("audit-cache-session")))
        yield


@pytest.fixture(autouse=True)
def _audit_cache(_audit_cache_of_the_session, tmp_path_factory, monkeypatch):
    """``goldenal audit`` keeps its per-file cache in a temporary directory, never ~/.cache."""
    monkeypatch.setenv("GOLDENAL_CACHE_DIR", str(tmp_path_factory.mktemp("audit-cache")))


@pytest.fixture
def golden_copy(tmp_path):
    """A writable copy of the packaged golden directory."""
    dest = tmp_path / "golden"
    shutil.copytree(PACKAGED, dest)
    return dest


@pytest.fixture
def run_cli(capsys):
    """Run ``goldenal`` in-process: returns (exit code, stdout, stderr)."""
    from goldenal.cli import main

    def run(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def goldenal_cmd():
    """The installed console script, else ``python -m goldenal``."""
    script = shutil.which("goldenal", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "goldenal"]
