"""The fuzz smoke's seeds, run here as the harness runs each input: they must stay inputs
the code reads (a refusal is fine, a crash is not), and every corpus it names must exist,
or the smoke would start from nothing without a word."""

import importlib.util
import warnings
from pathlib import Path

import pytest

from goldenal.apply.inject import inject
from goldenal.auditing import audit_report
from goldenal.core.errors import GoldenALError

HERE = Path(__file__).resolve().parent
SEEDS = sorted((HERE / "seeds" / "srt-slurm").glob("*.yaml"))


def _smoke():
    spec = importlib.util.spec_from_file_location("fuzz_smoke", HERE / "fuzz_smoke.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_corpus_the_smoke_seeds_from_exists_and_holds_files():
    smoke = _smoke()
    for name, (harness, _, _, corpora) in smoke.TARGETS.items():
        assert (HERE / harness).is_file(), name
        for corpus in corpora:
            path = Path(smoke.REPO) / corpus
            assert path.is_dir() and any(p.is_file() for p in path.rglob("*")), (name, corpus)


def test_the_srt_slurm_seeds_are_there():
    assert len(SEEDS) == 10


@pytest.mark.parametrize("seed", SEEDS, ids=[p.stem for p in SEEDS])
def test_a_seed_is_audited_and_injected_without_a_crash(tmp_path, seed):
    path = tmp_path / "recipe.yaml"
    path.write_bytes(seed.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = audit_report([str(path)], root=str(tmp_path), settings=False,
                              respect_gitignore=False)
        assert all("\n" not in f.message for f in report.findings)
        try:
            result = inject(str(tmp_path / "serve.yaml"), text=seed.read_text(), force=True,
                            allow_non_agentic=True, _defer=True)
        except GoldenALError as exc:
            assert "rewritten file would not parse" not in str(exc)
        else:
            assert not result.written
    assert path.read_bytes() == seed.read_bytes()
