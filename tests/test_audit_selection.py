"""Which files `goldenal audit` reads, as ruff chooses them, and what its summary says.

Fixtures are written here, shaped like a recipe repository: an agentic SGLang
launcher with a wrong value, copies of it where a linter must not look
(ignored by .gitignore, excluded, a virtualenv), and goldenal's own reports.
"""

import json
import shutil

import pytest

from goldenal.core.errors import ParseError
from goldenal.auditing import AuditReport, audit, audit_report
from goldenal.auditing.walk import is_own_report

WRONG = ("export SGLANG_SIMULATE_ACC_LEN=2.50  # glm5.2_mtp thinking_on K=3\n"
         "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
         "--speculative-num-steps 3 --speculative-eagle-topk 1 "
         "--default-chat-template-kwargs '{\"enable_thinking\": true}'\n")
NAME = "glm5.2_fp4_b200_sglang_mtp.sh"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "repo"
    for d in ("agentic", "experimental/agentic", "build/agentic", ".venv/agentic",
              "keep/agentic"):
        (root / d).mkdir(parents=True)
        (root / d / NAME).write_text(WRONG)
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("build/\n*.bak\n")
    (root / "keep" / ".gitignore").write_text("agentic/\n")
    (root / "agentic" / "old.sh.bak").write_text(WRONG)
    return root


def paths(findings):
    return sorted({f.path for f in findings})


def test_gitignore_and_the_default_excludes_are_respected(tree):
    assert paths(audit([tree])) == ["agentic/" + NAME, "experimental/agentic/" + NAME]
    # .gitignore files below the root and above it both apply
    assert paths(audit([tree / "keep"], root=tree)) == []
    assert paths(audit([tree], respect_gitignore=False)) == [
        "agentic/" + NAME, "agentic/old.sh.bak", "build/agentic/" + NAME,
        "experimental/agentic/" + NAME, "keep/agentic/" + NAME]


def test_exclude_replaces_the_default_and_extend_exclude_adds(tree):
    assert paths(audit([tree], extend_exclude=["experimental/"])) == ["agentic/" + NAME]
    # a replaced default reads the virtualenv too
    assert ".venv/agentic/" + NAME in paths(audit([tree], exclude=["experimental"]))
    assert "experimental/agentic/" + NAME not in paths(audit([tree], exclude=["experimental"]))


def test_a_file_named_on_the_command_line_is_always_read(tree):
    assert paths(audit([tree / "build" / "agentic" / NAME], root=tree)) == [
        "build/agentic/" + NAME]


def test_cli_exclude_flags(tree, run_cli):
    code, out, _ = run_cli("audit", tree, "--extend-exclude", "experimental/,agentic/old*")
    assert code == 1
    assert [ln.split(":")[0] for ln in out.splitlines()[:-2]] == ["agentic/" + NAME]
    code, out, _ = run_cli("audit", tree, "--no-respect-gitignore", "--select", "GAL201")
    assert out.count(": GAL201 ") == 5


def test_pyproject_settings(tree, run_cli, tmp_path):
    golden = tmp_path / "golden"
    import shutil

    from conftest import PACKAGED

    shutil.copytree(PACKAGED, golden)
    curve = golden / "glm5.2_mtp.yaml"
    curve.write_text(curve.read_text().replace("3: 2.99", "3: 2.50"))
    (golden / "index.tsv").unlink()
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "recipes"\n\n[tool.goldenal]\n'
        'extend-exclude = ["experimental/"]\nignore = ["GAL305"]\n'
        f'golden-dir = "{golden}"\n')
    report = audit_report([tree])
    # the project's curve says 2.50: the launcher is right against it
    assert report.findings == () and report.settings == str(tree / "pyproject.toml")
    assert report.golden_dir == str(golden)
    # options given win over the file
    assert paths(audit([tree], golden_dir=str(PACKAGED))) == ["agentic/" + NAME]
    assert len(paths(audit([tree], settings=False))) == 2
    code, out, _ = run_cli("audit", tree, "--isolated")
    assert code == 1 and "experimental/agentic/" + NAME in out
    code, out, _ = run_cli("audit", tree, "--select", "GAL201", "--golden-dir", PACKAGED)
    assert [ln.split(":")[0] for ln in out.splitlines() if " GAL201 " in ln] == [
        "agentic/" + NAME]


@pytest.mark.parametrize("text, message", [
    ("[tool.goldenal]\nselekt = ['GAL2']\n", "unknown key `selekt`"),
    ("[tool.goldenal]\nignore = 305\n", "`ignore` must be a list of strings"),
    ("[tool.goldenal\n", "not valid TOML"),
])
def test_bad_settings_are_a_usage_error(tree, run_cli, text, message):
    (tree / "pyproject.toml").write_text(text)
    with pytest.raises(ParseError, match=message):
        audit([tree])
    code, out, err = run_cli("audit", tree)
    assert code == 2 and out == "" and message in err and "pyproject.toml" in err


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_audit_never_reads_its_own_reports(tree, run_cli, fmt):
    code, out, _ = run_cli("audit", tree, "--format", fmt)
    assert is_own_report(out.encode())
    (tree / f"report.{fmt}").write_text(out)
    (tree / "agentic" / f"report.{fmt}").write_text(out)
    again = run_cli("audit", tree, "--format", fmt)
    assert again[0] == code
    report = audit_report([tree])
    assert (f"report.{fmt}", "a goldenal audit report") in report.skipped
    assert not any(f.path.startswith("report.") for f in report.findings)


def test_a_recipe_is_not_mistaken_for_a_report():
    assert not is_own_report(WRONG.encode())
    assert not is_own_report(b'{"speculative_config": {"synthetic_acceptance_length": 2.8}}')
    assert not is_own_report(b'[{"code": "x", "synthetic_acceptance_length": 2.8}]')


def test_summary_counts_and_show_skipped(tree, run_cli):
    (tree / "helper.sh").write_text(
        "# strips SGLANG_SIMULATE_ACC_LEN from the environment\n"
        "sed -i '/SGLANG_SIMULATE_ACC_LEN/d' env.list\n")
    (tree / "agentic" / "README.md").write_text(
        "Run with `export SGLANG_SIMULATE_ACC_LEN=2.99`.\n")
    (tree / "single_node").mkdir()
    (tree / "single_node" / "fixed_sglang_mtp.sh").write_text(
        "python3 -m sglang.launch_server --speculative-num-steps 3\n")
    report = audit_report([tree])
    assert isinstance(report, AuditReport)
    assert (report.files_read, report.configs_checked) == (7, 2)
    assert report.skipped == (
        ("agentic/README.md", "documentation: no command with a knob could be read"),
        ("helper.sh", "names a synthetic knob but never sets one"),
        ("single_node/fixed_sglang_mtp.sh",
         "speculative settings but no synthetic knob, and not agentic"))
    code, out, _ = run_cli("audit", tree, "--show-skipped")
    assert out.splitlines()[-4:] == [
        "agentic/README.md: skipped: documentation: no command with a knob could be read",
        "helper.sh: skipped: names a synthetic knob but never sets one",
        "single_node/fixed_sglang_mtp.sh: skipped: speculative settings but no synthetic knob, "
        "and not agentic",
        "Checked 2 serve configs in 7 files read; skipped 3 files (--show-skipped lists them)."]
    assert repr(report) == ("<AuditReport 3 findings: 2 serve configs checked in 7 files read, "
                            "3 skipped>")
    # the knob in the README's inline code is found, not checked: never silence
    assert list(report.to_frame()["code"]) == ["GAL309", "GAL201", "GAL201"]
    assert report.findings[0].message == (
        "SGLANG_SIMULATE_ACC_LEN is set here but not checked: it is outside a fenced shell "
        "code block")


def test_assumptions_are_counted_in_text_and_kept_in_json(tmp_path, run_cli):
    agentic = tmp_path / "agentic"
    agentic.mkdir()
    for i in range(3):   # no thinking signal: the default is assumed each time
        (agentic / f"glm5.2_fp4_b200_sglang_mtp_{i}.sh").write_text(
            "export SGLANG_SIMULATE_ACC_LEN=2.99\n"
            "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
            "--speculative-num-steps 3 --speculative-eagle-topk 1\n")
    code, out, _ = run_cli("audit", tmp_path)
    assert (code, out.splitlines()) == (0, [
        "Found 3 findings (0 errors, 0 warnings, 3 info); 0 of them printed.",
        "Assumed the thinking mode of 3 serve configs (GAL305, not printed; --show-assumptions "
        "prints all 3).",
        "Checked 3 serve configs in 3 files read; skipped 0 files."])
    code, out, _ = run_cli("audit", tmp_path, "--show-assumptions")
    assert out.count(": GAL305 no thinking-mode signal in the files; assumed") == 3
    assert "Assumed the thinking mode" not in out
    assert "Found 3 findings (0 errors, 0 warnings, 3 info).\n" in out  # all printed
    _, out, _ = run_cli("audit", tmp_path, "--format", "json")
    assert [d["code"] for d in json.loads(out)] == ["GAL305"] * 3
    _, out, _ = run_cli("audit", tmp_path, "--format", "sarif")
    assert len(json.loads(out)["runs"][0]["results"]) == 3


def test_a_directory_pattern_does_not_exclude_a_file_of_that_name(tmp_path):
    """`build/` (as in .gitignore) names directories; a launcher called `build` is read."""
    agentic = tmp_path / "agentic"
    (agentic / "build").mkdir(parents=True)
    (agentic / "build" / NAME).write_text(WRONG)
    (tmp_path / "other" / "agentic").mkdir(parents=True)
    (tmp_path / "other" / "agentic" / "build").write_text("#!/bin/bash\n" + WRONG)
    assert paths(audit([tmp_path], extend_exclude=["build/"])) == ["other/agentic/build"]
    assert paths(audit([tmp_path], extend_exclude=["build"])) == []


def test_settings_above_the_repository_root_are_never_read(tree, run_cli, tmp_path):
    """A pyproject.toml above the repository with exclude=["*"] used to make "0 files read"."""
    outer = tmp_path / "outer"
    repo = outer / "repo"
    shutil.copytree(tree, repo)
    (repo / ".git").rmdir()
    (outer / "pyproject.toml").write_text('[tool.goldenal]\nexclude = ["*"]\n')
    expected = audit_report([repo], settings=False)
    assert expected.files_read > 0 and expected.findings
    # not a repository yet: the audited directory's own file only
    assert audit_report([repo]).settings is None
    (repo / ".git").mkdir()
    sub = repo / "agentic"
    for start in (repo, sub):
        report = audit_report([start], root=str(start))
        assert report.settings is None, start
        assert report.files_read == audit_report([start], root=str(start),
                                                 settings=False).files_read
    code, out, err = run_cli("audit", repo)
    assert code == 1 and "in 0 files read" not in out, out
    # a file inside the repository, between it and the audited path, still counts
    (repo / "pyproject.toml").write_text('[tool.goldenal]\nignore = ["GAL305"]\n')
    assert audit_report([sub], root=str(sub)).settings == str(repo / "pyproject.toml")
    # a worktree or submodule marks its root with a .git file
    (repo / ".git").rmdir()
    (repo / ".git").write_text("gitdir: elsewhere\n")
    (repo / "pyproject.toml").unlink()
    assert audit_report([sub], root=str(sub)).settings is None
    # named with --config, a file anywhere is read
    assert audit_report([repo], settings=str(outer / "pyproject.toml")).files_read == 0
