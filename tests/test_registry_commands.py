"""`goldenal list` and `goldenal show`, and where the packaged curves are found."""

import json
import os
import shutil

import pytest

from conftest import PACKAGED
from goldenal.golden.registry import packaged_dir


def test_packaged_curves_are_found_wherever_goldenal_is_installed():
    directory = packaged_dir()
    assert os.path.isfile(os.path.join(directory, "index.tsv"))
    assert os.path.isfile(os.path.join(directory, "manifest.yaml"))
    assert len([n for n in os.listdir(directory) if n.endswith(".yaml")]) == 10


def test_list_has_one_row_per_curve(run_cli):
    code, out, err = run_cli("list", "--golden-dir", PACKAGED)
    lines = out.splitlines()
    assert (code, err, len(lines)) == (0, f"golden directory: {PACKAGED} (--golden-dir)\n", 10)
    assert lines[0].split() == ["id", "model", "method", "head", "variant", "thinking", "K",
                                "source", "run"]
    gqa = next(ln for ln in lines if ln.startswith("minimaxm3_eagle3_gqa\t"))
    assert gqa.split() == ["minimaxm3_eagle3_gqa", "minimax-m3", "eagle3",
                           "Inferact/MiniMax-M3-EAGLE3-GQA", "-", "on/off", "1-8",
                           "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/29784780049"]


def test_list_json(run_cli):
    code, out, _ = run_cli("list", "--format", "json")
    rows = json.loads(out)
    assert [r["id"] for r in rows][:2] == ["dsv4-pro-0813-dspark", "dsv4_mtp"]
    probabilistic = rows[5]
    assert probabilistic["variant"] == ("draft_sample_method=probabilistic, "
                                        "rejection_sample_method=block")


def test_show_prints_the_matrix(run_cli):
    code, out, err = run_cli("show", "glm5.2_mtp")
    assert (code, err) == (0, "")
    assert out.splitlines()[-9:] == [
        " K   thinking_on", " 1          1.84", " 2          2.50", " 3          2.99",
        " 4          3.33", " 5          3.61", " 6          3.78", " 7          3.91",
        " 8          4.06"]


def test_show_unknown_curve(run_cli):
    code, out, err = run_cli("show", "glm5_mtp")
    assert (code, out) == (1, "")
    assert err.startswith("error: no curve 'glm5_mtp'; did you mean glm5.2_mtp?")


def test_help_lists_every_command_and_exit_codes(run_cli):
    code, out, _ = run_cli("--help")
    assert code == 0
    assert "exit codes:" in out and "lookup" in out and "validate" in out


def test_no_command_is_a_usage_error(run_cli):
    code, out, err = run_cli()
    assert (code, out) == (2, "")
    assert err.startswith("usage: goldenal")


def test_list_piped_is_tab_separated_with_every_value_in_full(run_cli):
    code, out, err = run_cli("list")
    lines = out.splitlines()
    assert lines[0].split("\t") == ["id", "model", "method", "head", "variant", "thinking", "K",
                                    "source run"]
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(row) == 8 for row in rows)
    assert rows[5][0] == ("kimik3_dspark_probabilistic_sample_method_block_"
                          "rejection_sample_method")
    assert rows[5][4] == "draft_sample_method=probabilistic, rejection_sample_method=block"
    assert "…" not in out


def _list_on_a_terminal(*argv, columns):
    """``goldenal list`` with its stdout on a pseudo-terminal of ``columns`` columns."""
    import pty
    import subprocess

    from conftest import goldenal_cmd

    leader, follower = pty.openpty()
    env = dict(os.environ, COLUMNS=str(columns), PYTHONIOENCODING="utf-8")
    proc = subprocess.run(goldenal_cmd() + ["list", *argv], stdout=follower,
                          stderr=subprocess.PIPE, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    # stderr names the golden directory read, nothing else
    assert proc.returncode == 0 and proc.stderr.startswith(b"golden directory: "), proc.stderr
    assert proc.stderr.count(b"\n") == 1, proc.stderr
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_list_on_a_terminal_fits_its_width():
    out = _list_on_a_terminal(columns=80)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["id", "model", "method", "head", "variant", "thinking", "K",
                                "source", "run"]
    # the source run is cut from the left, keeping (most of) the run's number
    assert lines[1].endswith("  …1742838308")
    # ids, models and heads wrap (nothing of them is lost); rows are set apart
    first = "".join(line.split(" ")[0] if line[:1] not in " " else "|" for line in lines)
    assert "|minimaxm3_eagle3_gqa|" in first
    assert "|kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method|" in first
    # an id breaks only after one of its separators, never inside a word
    column = lines[0].index("model")
    rows, row = [], []
    for line in lines[1:] + [""]:
        if line == "":  # rows are set apart by a blank line
            rows.append(row)
            row = []
        elif line[:column].strip():
            row.append(line[:column].rstrip())
    ids = []
    for pieces in rows:
        assert all(p.endswith(("_", "-")) for p in pieces[:-1]), pieces
        ids.append("".join(pieces))
    assert "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method" in ids
    assert len(ids) == 9
    wider = _list_on_a_terminal(columns=120).splitlines()
    assert max(len(line) for line in wider) <= 120
    assert wider[1].endswith("  …/runs/31742838308")


def test_list_wide_on_a_terminal_shows_every_value_in_full():
    lines = _list_on_a_terminal("--wide", columns=80).splitlines()
    assert len(lines) == 10 and max(len(line) for line in lines) > 200
    gqa = next(ln for ln in lines if ln.startswith("minimaxm3_eagle3_gqa "))
    assert gqa.split()[-1] == "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/29784780049"


def test_list_table_wraps_to_a_width():
    from goldenal.commands.list_curves import format_table

    records = [{"id": "minimaxm3_eagle3_gqa", "K": "1-8"}, {"id": "qwen3.5_mtp", "K": "1-3"}]
    assert format_table(records, ("id", "K"), width=16) == (
        "id           K\n"
        "minimaxm3_   1-8\n"
        "eagle3_gqa\n"
        "\n"
        "qwen3.5_mtp  1-3\n")
    assert format_table(records, ("id", "K")) == (
        "id                    K\n"
        "minimaxm3_eagle3_gqa  1-8\n"
        "qwen3.5_mtp           1-3\n")


@pytest.mark.parametrize("argv, curve", [
    (["minimaxm3_eagle3_gqa"], "minimaxm3_eagle3_gqa"),
    (["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA"], "minimaxm3_eagle3_gqa"),
    (["MiniMax-M3", "--draft", "/models/MiniMax-M3-EAGLE3"], "minimaxm3_eagle3"),
    (["nvidia/GLM-5.2-NVFP4"], "glm5.2_mtp"),
    (["glm5.2"], "glm5.2_mtp"),
    (["kimi-k3", "--variant", "probabilistic"],
     "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method"),
    (["kimi-k3", "--variant", "none"], "kimik3_dspark"),
    (["--curve", "qwen3.5_mtp"], "qwen3.5_mtp"),
])
def test_show_accepts_what_lookup_accepts(run_cli, argv, curve):
    code, out, err = run_cli("show", *argv)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"curve     {curve}"


@pytest.mark.parametrize("argv, message", [
    (["minimax-m3"], "error: 2 curves match model minimax-m3; the draft head (and variant) "
                     "served decides which applies: --draft Inferact/MiniMax-M3-EAGLE3 for "
                     "Inferact/MiniMax-M3-EAGLE3; --draft Inferact/MiniMax-M3-EAGLE3-GQA for "
                     "Inferact/MiniMax-M3-EAGLE3-GQA\n"),
    (["kimi-k3"], "error: 2 curves match model kimi-k3; the sampling variant served decides "
                  "which applies: --variant none|probabilistic (probabilistic: "
                  "draft_sample_method=probabilistic, rejection_sample_method=block)\n"),
    (["minimax-m4"], "error: no curve 'minimax-m4'; did you mean minimax-m3? (curves: "),
    (["qwen35_mpt"], "error: no curve 'qwen35_mpt'; did you mean qwen3.5_mtp, "
                     "qwen3.5-397b-a17b-nvfp4? (curves: "),
    (["minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3-MLA"],
     "error: no curve for model minimax-m3 with draft 'Inferact/MiniMax-M3-EAGLE3-MLA'; "),
    ([], "error: give a curve id or a model\n"),
])
def test_show_refusals_name_what_exists(run_cli, argv, message):
    code, out, err = run_cli("show", *argv)
    assert (code, out) == (1 if argv else 2, "")
    assert err.startswith(message)
# ------------------------------------------------------- golden directory discovery

def _project(tmp_path, value):
    """A recipe repository with its own golden_al_distribution/ (InferenceX's shape)."""
    project = tmp_path / "InferenceX"
    golden = project / "golden_al_distribution"
    shutil.copytree(PACKAGED, golden)
    path = golden / "minimaxm3_eagle3_gqa.yaml"
    path.write_text(path.read_text().replace("3: 2.78", f"3: {value}"))
    from goldenal.cli import main

    assert main(["index", str(golden)]) == 0     # the fast path's index, rebuilt
    deep = project / "benchmarks" / "single_node" / "agentic"
    deep.mkdir(parents=True)
    return project, golden, deep


def test_the_nearest_golden_dir_in_the_parents_wins_over_the_packaged_one(
        tmp_path, run_cli, monkeypatch, capsys):
    project, golden, deep = _project(tmp_path, "2.71")
    capsys.readouterr()      # what building the project printed
    monkeypatch.delenv("GOLDENAL_DIR", raising=False)
    monkeypatch.chdir(deep)
    args = ("lookup", "minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3-GQA", "--k", "3",
            "--thinking", "on")
    assert run_cli(*args) == (0, "2.71\n", "")
    code, _, err = run_cli("list")
    assert code == 0
    assert err == (f"golden directory: {golden} (nearest golden_al_distribution/ from the "
                   "current directory)\n")
    # $GOLDENAL_DIR and --golden-dir still win
    monkeypatch.setenv("GOLDENAL_DIR", str(PACKAGED))
    assert run_cli(*args) == (0, "2.78\n", "")
    assert run_cli("list")[2] == f"golden directory: {PACKAGED} ($GOLDENAL_DIR)\n"
    monkeypatch.delenv("GOLDENAL_DIR")
    assert run_cli(*args, "--golden-dir", PACKAGED) == (0, "2.78\n", "")


def test_audit_uses_the_project_curves(tmp_path, run_cli, monkeypatch):
    project, _, deep = _project(tmp_path, "2.71")
    (deep / "minimaxm3_fp4_b200_vllm_mtp.sh").write_text(
        "vllm serve MiniMaxAI/MiniMax-M3 --speculative-config '{\"method\":\"eagle3\","
        "\"model\":\"Inferact/MiniMax-M3-EAGLE3-GQA\",\"num_speculative_tokens\":3,"
        "\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":2.71}' "
        "--default-chat-template-kwargs '{\"enable_thinking\": true}'\n")
    monkeypatch.delenv("GOLDENAL_DIR", raising=False)
    monkeypatch.chdir(project)
    code, out, _ = run_cli("audit", "benchmarks")
    assert (code, out.splitlines()[0]) == (0, "Found 0 findings (0 errors, 0 warnings, 0 info).")
    monkeypatch.chdir(tmp_path)      # outside the project: the packaged curves (2.78)
    code, out, _ = run_cli("audit", project / "benchmarks")
    assert code == 1 and "expected 2.78" in out


def test_discovery_keeps_lookup_light(tmp_path, monkeypatch):
    """The discovery walk is os-only: lookup's import budget is unchanged."""
    import subprocess
    import sys

    _, _, deep = _project(tmp_path, "2.71")
    code = ("import sys\nfrom goldenal.cli import main\n"
            "rc = main(['lookup', 'minimax-m3', '--draft', 'Inferact/MiniMax-M3-EAGLE3-GQA', "
            "'--k', '3', '--thinking', 'on'])\n"
            "heavy = sorted(m for m in ('numpy', 'pandas', 'yaml', 'json', 'argparse', "
            "'pathspec') if m in sys.modules)\nprint(rc, heavy)\n")
    env = {k: v for k, v in os.environ.items() if k != "GOLDENAL_DIR"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=deep, env=env,
                          capture_output=True, text=True)
    assert proc.stdout == "2.71\n0 []\n", proc.stderr
