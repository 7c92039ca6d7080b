"""`goldenal list` and `goldenal show`, and where the packaged curves are found."""

import json
import os

import pytest

from goldenal.registry import packaged_dir


def test_packaged_curves_are_found_wherever_goldenal_is_installed():
    directory = packaged_dir()
    assert os.path.isfile(os.path.join(directory, "index.tsv"))
    assert os.path.isfile(os.path.join(directory, "manifest.yaml"))
    assert len([n for n in os.listdir(directory) if n.endswith(".yaml")]) == 10


def test_list_has_one_row_per_curve(run_cli):
    code, out, err = run_cli("list")
    lines = out.splitlines()
    assert (code, err, len(lines)) == (0, "", 10)
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
    import sys

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
    assert (proc.returncode, proc.stderr) == (0, b""), proc.stderr
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_list_on_a_terminal_fits_its_width():
    out = _list_on_a_terminal(columns=80)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["id", "model", "method", "head", "variant", "thinking", "K",
                                "source", "run"]
    # the source run is cut from the left, keeping the run's number
    assert lines[1].endswith("  …31742838308")
    # ids, models and heads wrap (nothing of them is lost); rows are set apart
    first = "".join(line.split(" ")[0] if line[:1] not in " " else "|" for line in lines)
    assert "|minimaxm3_eagle3_gqa|" in first
    assert "|kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method|" in first
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
