"""`goldenal audit --fix` / `--diff`: only safe literal replacements, verified before writing."""

import shutil
from pathlib import Path

import pytest

from conftest import ROOT

REPO = ROOT / "tests" / "data" / "audit" / "repo"
GQA = "benchmarks/multi_node/srt-slurm-recipes/vllm/minimax-m3/agentic/1p1d-tep4-tp4-c1-agentic.yaml"
SHARED = "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentic/glm5.2-agentx.yaml"
ASSUMED = "benchmarks/single_node/agentic/kimik3_fp4_mi355x_atom_mtp.sh"
PRINTF = "benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh"
DSPARK = "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/agg-gb200-dspark4-agentic.yaml"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    dest = tmp_path / "repo"
    shutil.copytree(REPO, dest, symlinks=True)
    monkeypatch.chdir(dest)
    return dest


def _snapshot(root):
    return {p: p.read_bytes() for p in Path(root).rglob("*") if p.is_file()}


def test_diff_prints_the_safe_fixes_and_writes_nothing(repo, run_cli):
    before = _snapshot(repo)
    code, out, err = run_cli("audit", ".", "--diff")
    assert code == 1
    assert err.splitlines()[-1] == "Would fix 4 finding(s) in 4 file(s); 7 not fixed."
    assert f"+++ b/{GQA}\n" in out
    assert ('-      speculative-config: \'{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA",'
            '"num_speculative_tokens":3,"rejection_sample_method":"synthetic",'
            '"synthetic_acceptance_length":2.83}\'\n') in out
    assert '"synthetic_acceptance_length":2.78}\'\n' in out
    assert _snapshot(repo) == before


def test_fix_applies_them_and_reports_what_is_left(repo, run_cli):
    before = _snapshot(repo)
    code, out, err = run_cli("audit", ".", "--fix")
    assert err.splitlines()[-1] == "Fixed 4 finding(s) in 4 file(s); 7 not fixed."
    assert code == 1  # other errors remain
    assert out.splitlines()[-3] == ("Found 43 findings (26 errors, 5 warnings, 12 info); "
                                    "7 with a suggested fix; 36 of them printed.")
    assert f"{GQA}:" not in out
    changed = {p.relative_to(repo).as_posix() for p, data in _snapshot(repo).items()
               if before[p] != data}
    assert changed == {GQA} | {
        "benchmarks/multi_node/srt-slurm-recipes/trtllm/minimax-m3/agentic/"
        "disagg-gb300-1p1d-tep8-mtp3.yaml",
        "benchmarks/single_node/serve_configs/minimax-m3-agentic-serve.yaml",
        "configs/test-master.yaml"}
    assert run_cli("audit", ".", "--diff")[2].splitlines()[-1] == (
        "Would fix 0 finding(s) in 0 file(s); 7 not fixed.")


def test_a_literal_shared_with_a_variant_that_needs_another_cell_is_left_alone(repo, run_cli):
    """The K=2 variant inherits the K=3 decode block by anchor: fixing it would break K=3."""
    before = (repo / SHARED).read_bytes()
    run_cli("audit", ".", "--fix")
    assert (repo / SHARED).read_bytes() == before


@pytest.mark.parametrize("path", [ASSUMED, PRINTF])
def test_assumed_or_indirect_values_are_left_alone(repo, run_cli, path):
    """An assumed thinking mode (GAL305 on the line) or a value reaching the knob by printf."""
    before = (repo / path).read_bytes()
    run_cli("audit", ".", "--fix")
    assert (repo / path).read_bytes() == before


def test_fix_names_every_finding_it_did_not_fix_and_why(repo, run_cli):
    """Each suggested fix left alone is named with its reason, on stderr."""
    _, _, err = run_cli("audit", ".", "--diff")
    not_fixed = [line for line in err.splitlines() if line.startswith("Not fixed: ")]
    assert len(not_fixed) == 7
    assert (f"Not fixed: {SHARED}:12:33: GAL201: the literal also serves another config that "
            "needs another value (role decode needs 2.99; a shared anchor, variable or base "
            "section; `goldenal inject` gives a variant inheriting it its own value)") in not_fixed
    assert (f"Not fixed: {DSPARK}:11:214: GAL201: assumed thinking mode: no thinking-mode "
            "signal for this config (GAL305)") in not_fixed
    assert (f"Not fixed: {PRINTF}:17:109: GAL201: indirect value: 2.83 is not written on the "
            "finding's line (set through a variable or computed)") in not_fixed
    assert any(": GAL205: the fix adds a key to the config" in line for line in not_fixed)
    assert any(": GAL308: --fix never removes suppression comments" in line
               for line in not_fixed)
