"""``goldenal audit`` as users run it: output formats, exit codes, bad input, rule pages."""

import json
import os
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml

import goldenal.auditing

from goldenal.auditing import RULES, audit, explain
from goldenal.cli import main
from goldenal.core.errors import UsageError

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(HERE)
REPO = os.path.join(HERE, "data", "audit", "repo")
SCHEMAS = os.path.join(os.path.dirname(goldenal.auditing.__file__), "schemas")  # as installed
# the official OASIS schema, vendored unchanged (tests/data/sarif/README.md)
SARIF_SCHEMA = os.path.join(HERE, "data", "sarif", "sarif-schema-2.1.0.json")
SUMMARY = ("Found 47 findings (30 errors, 5 warnings, 12 info); 11 with a suggested fix; 40 of "
           "them printed.")
ASSUMED = ("Assumed the thinking mode of 7 serve configs (GAL305, not printed; "
           "--show-assumptions prints all 47).")
COUNTS = "Checked 61 serve configs in 44 files read; skipped 6 files (--show-skipped lists them)."


def run(capsys, *argv):
    rc = main(["audit", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def load_schema(name):
    with open(os.path.join(SCHEMAS, name)) as fh:
        return json.load(fh)


def test_text_output_and_exit_code(capsys):
    rc, out, err = run(capsys, REPO, "--root", REPO)
    lines = out.splitlines()
    assert rc == 1 and err == ""
    assert lines[-3:] == [SUMMARY, ASSUMED, COUNTS]
    assert len(lines) == 47 - 7 + 3       # the 7 assumed thinking modes are counted, not listed
    assert " GAL305 " not in out
    assert lines[1] == ("benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentic/"
                        "agg-gb200-broken-mtp.yaml:8:1: GAL306 cannot parse recipe: did not find "
                        "expected ',' or ']'")
    # the finding points at the literal to edit, not at the knob's name
    assert ("configs/test-master.yaml:22:42: GAL201 [*] SYNTHETIC_ACCEPTANCE_LENGTH=2.49 differs "
            "from the golden cell dsv4_mtp thinking_on K=2: expected 2.27;") in out
    for line in lines[:-3]:
        assert re.match(r"^[^:]+:\d+:\d+: GAL[1-3]\d\d( \[\*\])? \S", line), line


def test_json_output_validates(capsys):
    rc, out, _ = run(capsys, REPO, "--root", REPO, "--format", "json")
    data = json.loads(out)
    jsonschema.validate(data, load_schema("findings.schema.json"))
    assert rc == 1 and len(data) == 47
    gqa = [d for d in data if d["path"].endswith("1p1d-tep4-tp4-c1-agentic.yaml")][0]
    assert {k: gqa[k] for k in ("code", "name", "severity", "line", "found", "expected")} == {
        "code": "GAL201", "name": "golden-value-mismatch", "severity": "error", "line": 17,
        "found": "2.83", "expected": "2.78"}


def test_sarif_output_validates(capsys):
    rc, out, _ = run(capsys, REPO, "--root", REPO, "--format", "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert log["$schema"] == ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/"
                              "schemas/sarif-schema-2.1.0.json")
    run0 = log["runs"][0]
    assert log["version"] == "2.1.0" and len(run0["results"]) == 47   # every GAL305 kept
    ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    assert ids == sorted(set(r["ruleId"] for r in run0["results"]))
    first = run0["results"][0]
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 22,
                                                                  "startColumn": 33}
    assert {r["level"] for r in run0["results"]} == {"error", "warning", "note"}
    assert run0["properties"] == {"filesRead": 44, "configsChecked": 61, "filesSkipped": 6}
    notes = run0["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == 6 and notes[0]["message"]["text"] == "skipped: cannot parse recipe"


def test_sarif_fixes_carry_artifact_changes_and_the_flag_is_a_related_location(capsys):
    """The result points at the literal a person edits; the knob's name is related."""
    _, out, _ = run(capsys, REPO, "--root", REPO, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    fixes = [r for r in results if "fixes" in r]
    assert len(fixes) == 7
    assert all(f["fixes"][0]["artifactChanges"][0]["replacements"] for f in fixes)
    master = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"] == "configs/test-master.yaml" and r["ruleId"] == "GAL201"][0]
    # `          - "SYNTHETIC_ACCEPTANCE_LENGTH=2.49"`: the literal spans columns 42-45
    assert master["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 22, "startColumn": 42, "endColumn": 46}
    assert master["relatedLocations"] == [{
        "id": 0, "message": {"text": "SYNTHETIC_ACCEPTANCE_LENGTH is set here"},
        "physicalLocation": {"artifactLocation": {"uri": "configs/test-master.yaml",
                                                  "uriBaseId": "%SRCROOT%"},
                             "region": {"startLine": 22, "startColumn": 14}}}]
    assert master["fixes"] == [{
        "description": {"text": "replace 2.49 with 2.27"},
        "artifactChanges": [{
            "artifactLocation": {"uri": "configs/test-master.yaml", "uriBaseId": "%SRCROOT%"},
            "replacements": [{"deletedRegion": {"startLine": 22, "startColumn": 42,
                                                "endColumn": 46},
                              "insertedContent": {"text": "2.27"}}]}]}]
    # a fix that is not one edit stays a suggestion, never a fix without changes
    unfixable = [r for r in results if r["ruleId"] == "GAL205"][0]
    assert "fixes" not in unfixable
    assert unfixable["properties"]["suggestedFix"] == 'add "rejection_sample_method": "synthetic"'


def test_sarif_edits_applied_to_the_files_give_the_fixed_text(capsys, tmp_path):
    """Applying every artifactChange by its columns produces the golden literal."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, symlinks=True)
    _, out, _ = run(capsys, str(copy), "--format", "sarif")
    for r in json.loads(out)["runs"][0]["results"]:
        for fix in r.get("fixes", []):
            change, = fix["artifactChanges"]
            rep, = change["replacements"]
            region = rep["deletedRegion"]
            path = copy / change["artifactLocation"]["uri"]
            line = path.read_text().split("\n")[region["startLine"] - 1]
            fixed = (line[:region["startColumn"] - 1] + rep["insertedContent"]["text"]
                     + line[region["endColumn"] - 1:])
            if r["ruleId"] == "GAL308":
                assert "goldenal:" in line and "goldenal:" not in fixed
            else:
                assert r["properties"]["found"] in line
                assert fixed == line.replace(r["properties"]["found"],
                                             r["properties"]["expected"], 1)


def test_the_official_sarif_schema_rejects_broken_logs():
    validator = jsonschema.Draft4Validator(sarif_schema())
    assert not validator.is_valid({"version": "2.0.0", "runs": []})
    assert not validator.is_valid({"version": "2.1.0", "runs": [{"tool": {"driver": {
        "name": "x"}}, "results": [{"ruleId": "A", "level": "fatal",
                                    "message": {"text": "m"}}]}]})
    # a fix must spell its changes
    assert not validator.is_valid({"version": "2.1.0", "runs": [{"tool": {"driver": {
        "name": "x"}}, "results": [{"message": {"text": "m"},
                                    "fixes": [{"description": {"text": "d"}}]}]}]})


def sarif_schema():
    with open(SARIF_SCHEMA) as fh:
        return json.load(fh)


def test_github_annotations(capsys):
    rc, out, _ = run(capsys, REPO, "--root", REPO, "--format", "github", "--select", "GAL202,GAL305")
    lines = out.splitlines()
    assert lines[2] == (
        "::error file=benchmarks/multi_node/srt-slurm-recipes/trtllm/minimax-m3/agentic/"
        "disagg-gb300-1p1d-tep8-mtp3.yaml,line=9,col=50,title=GAL202 trtllm-not-al-minus-one::"
        "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.78 is the golden AL itself; TensorRT-LLM "
        "takes AL - 1 = 1.78 (minimaxm3_eagle3_gqa thinking_on K=3) [role decode]")
    assert all(x.startswith(("::error ", "::notice ")) for x in lines)
    assert sum(x.startswith("::notice ") for x in lines) == 7


def test_select_ignore_exit_zero(capsys):
    rc, out, _ = run(capsys, REPO, "--root", REPO, "--select", "GAL305")
    # selecting GAL305 by name lists them
    assert rc == 0 and out.splitlines()[-2] == "Found 7 findings (0 errors, 0 warnings, 7 info)."
    assert len(out.splitlines()) == 9
    rc, out, _ = run(capsys, REPO, "--root", REPO, "--ignore", "GAL1,GAL2,GAL3")
    assert rc == 0 and out == "Found 0 findings (0 errors, 0 warnings, 0 info).\n" + COUNTS + "\n"
    rc, out, _ = run(capsys, REPO, "--root", REPO, "--exit-zero")
    assert rc == 0 and out.splitlines()[-3] == SUMMARY


def test_explain(capsys):
    rc, out, _ = run(capsys, "--explain", "GAL201")
    assert rc == 0
    assert out.startswith("# golden-value-mismatch (GAL201)\n")
    for heading in ("## What it does", "## Why it matters", "## Example", "## Use instead",
                    "## Fix safety"):
        assert heading in out
    rc, out2, _ = run(capsys, "--explain", "golden-value-mismatch")
    assert out2 == out
    rc, out, err = run(capsys, "--explain", "GAL999")
    assert rc == 2 and err == "error: unknown rule 'GAL999'\n"


def test_nothing_to_audit_exits_2(capsys):
    rc, out, err = run(capsys, "/nonexistent/recipes")
    assert rc == 2 and out == ""
    assert err == ("error: /nonexistent/recipes: nothing to audit: /nonexistent/recipes "
                   "not found\n")


def test_clean_tree_exits_0(tmp_path, capsys):
    d = tmp_path / "agentic"
    d.mkdir()
    (d / "glm5.2_fp4_b200_sglang_mtp.sh").write_text(
        "export SGLANG_SIMULATE_ACC_LEN=2.99  # glm5.2_mtp thinking_on K=3\n"
        "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--default-chat-template-kwargs '{\"enable_thinking\": true}'\n")
    rc, out, err = run(capsys, str(tmp_path))
    assert (rc, out, err) == (0, "Found 0 findings (0 errors, 0 warnings, 0 info).\n"
                                 "Checked 1 serve config in 1 file read; skipped 0 files.\n", "")


def test_bad_input_never_crashes(tmp_path, capsys):
    root = tmp_path / "repo"
    agentic = root / "agentic"
    agentic.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x_sglang_mtp.sh").write_text("export SGLANG_SIMULATE_ACC_LEN=9\n")
    os.symlink(outside, agentic / "linked-outside")
    os.symlink(agentic, agentic / "loop")
    (agentic / "broken.yaml").write_text("backend:\n  sglang_config: {aggregated: [\n"
                                         "SGLANG_SIMULATE_ACC_LEN: '2'\n")
    (agentic / "blob.bin").write_bytes(b"\x00\x01SGLANG_SIMULATE_ACC_LEN\x00")
    (agentic / "dangling").symlink_to(tmp_path / "missing")
    os.symlink(agentic, root / "zz-alias")    # a second name for an audited directory
    rc, out, err = run(capsys, str(root))
    # an unparseable recipe is an error (nobody checked it): exit 1
    assert err == "" and rc == 1
    assert out.splitlines() == [
        "agentic/blob.bin:1:1: GAL306 binary file skipped",
        "agentic/broken.yaml:4:1: GAL306 cannot parse recipe: did not find expected ',' or ']'",
        "agentic/dangling:1:1: GAL306 broken or looping symlink; not followed",
        "agentic/linked-outside:1:1: GAL306 symlink leads outside the audited root; "
        "not followed",
        "agentic/loop:1:1: GAL306 symlink loop; not followed",
        "Found 5 findings (1 error, 0 warnings, 4 info).",
        "Checked 0 serve configs in 2 files read; skipped 5 files (--show-skipped lists them).",
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path, capsys):
    f = tmp_path / "agentic" / "x.sh"
    f.parent.mkdir()
    f.write_text("export SGLANG_SIMULATE_ACC_LEN=2.99\n")
    f.chmod(0)
    rc, out, _ = run(capsys, str(tmp_path))
    assert out.splitlines()[0].startswith("agentic/x.sh:1:1: GAL306 unreadable:")


def test_subprocess_help():
    proc = subprocess.run([sys.executable, "-m", "goldenal", "audit", "--help"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0
    assert "goldenal audit --explain GAL201" in proc.stdout


# ------------------------------------------------------------------ rule catalogue

def test_every_rule_has_a_page():
    for code, rule in RULES.items():
        assert re.fullmatch(r"GAL[1-3]\d\d", code) and rule.code == code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
        assert rule.severity in ("error", "warning", "info")
        for part in (rule.summary, rule.what, rule.why, rule.example, rule.use_instead,
                     rule.fix_safety):
            assert part.strip()
        page = explain(code)
        assert page.count("\n## ") == 5


def test_fixture_covers_every_rule():
    codes = {f.code for f in audit([REPO], root=REPO)}
    assert codes == set(RULES)


def test_pre_commit_hook():
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml")) as fh:
        hooks = yaml.safe_load(fh)
    hook, = hooks
    assert hook["id"] == "goldenal-audit" and hook["entry"] == "goldenal audit"
    assert hook["pass_filenames"] is False


@pytest.mark.parametrize("argv, message", [
    (["--select", "GAL9"], "error: --select: no rule code, prefix or name 'GAL9' (codes "
                           "GAL101-GAL313, prefixes GAL1, GAL2, GAL3; `goldenal audit --explain "
                           "CODE` describes one)\n"),
    (["--ignore", "GAL2,GAL2O1"], "error: --ignore: no rule code, prefix or name 'GAL2O1'; did "
                                  "you mean GAL201? (codes GAL101-GAL313, prefixes GAL1, GAL2, "
                                  "GAL3; `goldenal audit --explain CODE` describes one)\n"),
    (["--select", "golden-value-mismach"], "error: --select: no rule code, prefix or name "
                                           "'golden-value-mismach'; did you mean "
                                           "golden-value-mismatch? (codes "),
    (["--select", "X"], "error: --select: no rule code, prefix or name 'X' (codes "),
])
def test_select_and_ignore_refuse_unknown_codes(capsys, argv, message):
    rc, out, err = run(capsys, REPO, "--root", REPO, *argv)
    assert (rc, out) == (2, "")
    assert err.startswith(message)


def test_select_and_ignore_accept_codes_prefixes_and_names(capsys):
    for spec in ("GAL", "gal2", "GAL20", "GAL201", "golden-value-mismatch"):
        rc, _, err = run(capsys, REPO, "--root", REPO, "--select", spec, "--exit-zero")
        assert (rc, err.startswith("error")) == (0, False), spec
    with pytest.raises(UsageError, match="--ignore: no rule code, prefix or name 'GAL4'"):
        audit([REPO], root=REPO, ignore=["GAL4"])


# ------------------------------------------------------------------ GitHub Action

def _action_step(name):
    with open(os.path.join(ROOT, "action.yml")) as fh:
        action = yaml.safe_load(fh)
    assert action["runs"]["using"] == "composite"
    return action, next(s for s in action["runs"]["steps"] if s.get("name") == name)


@pytest.mark.parametrize("upload", ["true", "false"])
def test_the_action_audits_writes_a_step_summary_and_fails_on_errors(tmp_path, upload):
    """The composite action's audit step, run as the runner runs it (bash, env from inputs)."""
    action, step = _action_step("Audit")
    inputs = action["inputs"]
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = {**os.environ, "PATHS": REPO, "ARGS": inputs["args"]["default"], "UPLOAD": upload,
           "SARIF": str(tmp_path / "out.sarif"), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(output),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == "exit-code=1\n"
    text = summary.read_text()
    assert text.startswith("## goldenal audit\n\n```\n") and SUMMARY in text and COUNTS in text
    if upload == "true":
        log = json.loads((tmp_path / "out.sarif").read_text())
        assert len(log["runs"][0]["results"]) == 47
    else:
        assert proc.stdout.count("::error file=") == 30
    _, fail = _action_step("Fail on errors")
    assert fail["if"] == "${{ steps.audit.outputs.exit-code != '0' }}"
    assert "exit \"$CODE\"" in fail["run"]


# a wrong value (glm5.2_mtp thinking_on K=3 is 2.99) in a launcher two directories down
SUBDIR_LAUNCHER = ("#!/usr/bin/env bash\nexport SGLANG_SIMULATE_ACC_LEN=2.50\n"
                   "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
                   "--speculative-num-steps 3 --speculative-eagle-topk 1 "
                   "--default-chat-template-kwargs '{\"enable_thinking\": true}'\n")


@pytest.mark.parametrize("upload", ["true", "false"])
def test_the_action_with_a_subdirectory_annotates_paths_from_the_repository_root(tmp_path,
                                                                                 upload):
    """``paths: benchmarks/x``: annotations and SARIF name the files as the repository does."""
    action, step = _action_step("Audit")
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    launcher = repo / "benchmarks" / "x" / "agentic" / "glm5.2_sglang_mtp.sh"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(SUBDIR_LAUNCHER)
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = {**os.environ, "PATHS": "benchmarks/x", "ARGS": "--no-cache", "UPLOAD": upload,
           "SARIF": str(tmp_path / "out.sarif"), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(output),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == "exit-code=1\n"
    rel = "benchmarks/x/agentic/glm5.2_sglang_mtp.sh"
    assert f"{rel}:2:32: GAL201 [*] SGLANG_SIMULATE_ACC_LEN=2.50 differs" in summary.read_text()
    if upload == "true":
        (result,) = json.loads((tmp_path / "out.sarif").read_text())["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == rel
    else:
        assert proc.stdout.startswith(f"::error file={rel},line=2,col=32,title=GAL201 ")


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_every_format_reports_paths_from_the_repository_root(tmp_path, monkeypatch, capsys,
                                                             fmt):
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    launcher = repo / "benchmarks" / "x" / "agentic" / "glm5.2_sglang_mtp.sh"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(SUBDIR_LAUNCHER)
    rel = "benchmarks/x/agentic/glm5.2_sglang_mtp.sh"
    # from the root, from inside the audited directory, and from outside the repository
    for cwd, arg in ((repo, "benchmarks/x"), (launcher.parent, "."), (tmp_path, str(launcher))):
        monkeypatch.chdir(cwd)
        rc = main(["audit", arg, "--no-cache", "--isolated", "--format", fmt])
        out = capsys.readouterr().out
        assert rc == 1
        if fmt == "json":
            assert [f["path"] for f in json.loads(out)] == [rel]
        elif fmt == "sarif":
            (result,) = json.loads(out)["runs"][0]["results"]
            assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == rel
        elif fmt == "github":
            assert out.startswith(f"::error file={rel},line=2,col=32,")
        else:
            assert out.startswith(f"{rel}:2:32: GAL201 ")
    # --root names another directory
    monkeypatch.chdir(repo)
    main(["audit", "benchmarks/x", "--no-cache", "--isolated", "--root", "benchmarks"])
    assert capsys.readouterr().out.startswith("x/agentic/glm5.2_sglang_mtp.sh:2:32: GAL201 ")


# -- output a stranger's file cannot break into lines of its own ---------------------------

CUT_CONDITION = ('#!/usr/bin/env bash\nNUM_SPEC_TOKENS=3\nSPEC_ARGS=(\n'
                 '    --speculative-algorithm EAGLE\n    --speculative-num-steps 3\n)\n'
                 'if [ "${MODE:-a\nb}" != "x" ]; then\n'
                 '    export SGLANG_SIMULATE_ACC_LEN=1.78\nfi\n')


def test_a_condition_cut_across_lines_stays_on_its_finding_line(tmp_path, run_cli):
    """Regression (atheris): the branch a finding names quoted a condition whose quote
    spans two lines, and its second line (``b}" != "x" ]]``) stood alone in the output."""
    (tmp_path / "run.sh").write_text(CUT_CONDITION)
    code, out, err = run_cli("audit", tmp_path, "--isolated", "--no-cache")
    lines = out.splitlines()
    assert lines[:2] == [
        "run.sh:5:1: GAL304 cannot determine whether this spec-decode config (engine, K=3) is "
        "agentic or fixed-sequence-length: no benchmark type, isl/osl, recipe or variant name, "
        "or path says; an agentic one needs a synthetic knob [branch no arm of "
        'if [ "${MODE:-a b}" != "x" ]]',
        "run.sh:9:12: GAL304 cannot determine the golden cell for SGLANG_SIMULATE_ACC_LEN=1.78: "
        "model (no served model or model prefix in the files) "
        '[branch if [ "${MODE:-a b}" != "x" ]]']
    assert len(lines) == 5 and lines[3].startswith("Found 3 findings")


def test_a_file_name_holding_a_line_break_is_shown_escaped(tmp_path, run_cli):
    """A name such as ``a<newline>GAL999 fake.sh`` must not print a line that reads as a
    finding of its own."""
    (tmp_path / "a\nGAL999 fake.sh").write_text(CUT_CONDITION)
    code, out, err = run_cli("audit", tmp_path, "--isolated", "--no-cache")
    findings = out.splitlines()[:3]
    assert [f.split(":", 1)[0] for f in findings] == ["a\\x0aGAL999 fake.sh"] * 3
    assert len(out.splitlines()) == 5


def test_one_line_and_printable():
    from goldenal.auditing.rules import one_line
    from goldenal.core.errors import ParseError, printable

    assert one_line('if [ "a\n   b" ]\tx') == 'if [ "a b" ] x'
    assert printable("a\nb\x1b[31mc\u2028d\x85") == "a\\x0ab\\x1b[31mc\\u2028d\\x85"
    assert printable("plain: 2.83 ünïcode") == "plain: 2.83 ünïcode"
    assert str(ParseError("bad", path="x\ny.log", line=3)) == "x\\x0ay.log:3: bad"
