"""`goldenal list` and `goldenal show`, and where the packaged curves are found."""

import json
import os

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
    gqa = next(ln for ln in lines if ln.startswith("minimaxm3_eagle3_gqa "))
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
