"""`goldenal validate`: the packaged curves pass; every planted defect is caught."""

import os

import pytest

from goldenal.golden.validation import validate
from conftest import PACKAGED, REFERENCE_GOLDEN

DECREASING = [
    "dsv4-pro-0813-dspark.yaml:17: warning: thinking_on: AL decreases from K=6 (3.77) to K=7 (3.73)",
    "dsv4-pro-0813-dspark.yaml:18: warning: thinking_on: AL decreases from K=7 (3.73) to K=8 (3.47)",
    "dsv4_mtp.yaml:18: warning: thinking_on: AL decreases from K=6 (2.55) to K=7 (2.54)",
    "dsv4_mtp.yaml:27: warning: thinking_off: AL decreases from K=6 (3.16) to K=7 (3.00)",
    "minimaxm3_eagle3.yaml:26: warning: thinking_off: AL decreases from K=5 (3.59) to K=6 (3.57)",
    "minimaxm3_eagle3_gqa.yaml:19: warning: thinking_on: AL decreases from K=7 (3.52) to K=8 (3.51)",
    "minimaxm3_eagle3_gqa.yaml:27: warning: thinking_off: AL decreases from K=6 (3.76) to K=7 (3.75)",
    "qwen3.5_mtp.yaml:28: warning: thinking_off: AL decreases from K=7 (4.73) to K=8 (4.71)",
]


def _relative(problems, directory):
    return [str(p).replace(str(directory) + os.sep, "") for p in problems]


def test_packaged_curves_have_no_errors_and_list_decreasing_cells(run_cli):
    code, out, err = run_cli("validate", PACKAGED)
    assert code == 0
    assert out.replace(str(PACKAGED) + os.sep, "").splitlines() == DECREASING
    assert err == f"{PACKAGED}: 9 curves, 0 errors, 8 warnings, 0 unreadable\n"


def test_upstream_directory_validates_as_it_is():
    report = validate(REFERENCE_GOLDEN)
    assert report.ok and report.curves == 9
    # upstream line numbers differ by the header length; same eight cells
    assert len(report.warnings) == 8


def _plant(golden, name, old, new):
    path = golden / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


PLANTED = [
    ("    3: 3.39", "    3: abc", 1, "qwen3.5_mtp.yaml:14: error: AL for K=3 must be a plain "
                                     "decimal number (e.g. 2.83) or N/A, got 'abc'"),
    ("    3: 3.39", "    3: '3.39'", 1, "qwen3.5_mtp.yaml:14: error: AL for K=3 must be a plain "
                                        "decimal number (e.g. 2.83) or N/A, got '3.39'"),
    # copied verbatim into JSON and environment variables, so only plain decimals pass
    ("    3: 3.39", "    3: +3.39", 1, "qwen3.5_mtp.yaml:14: error: AL for K=3 must be a plain "
                                       "decimal number (e.g. 2.83) or N/A, got '+3.39'"),
    ("    3: 3.39", "    3: 3.39e0", 1, "qwen3.5_mtp.yaml:14: error: AL for K=3 must be a plain "
                                        "decimal number (e.g. 2.83) or N/A, got '3.39e0'"),
    ("    3: 3.39", "    3: 4.39", 1, "qwen3.5_mtp.yaml:14: error: AL 4.39 for K=3 is outside "
                                      "[1, 4] (1 <= AL <= K+1: the bonus token plus at most K "
                                      "drafts)"),
    ("    1: 1.93", "    1: 0.93", 1, "qwen3.5_mtp.yaml:12: error: AL 0.93 for K=1 is outside "
                                      "[1, 2] (1 <= AL <= K+1: the bonus token plus at most K "
                                      "drafts)"),
    ("    1: 1.93", "    0: 1.93", 1, "qwen3.5_mtp.yaml:12: error: K must be a positive integer, "
                                      "got '0'"),
    ("    2: 2.73", "    2.5: 2.73", 1, "qwen3.5_mtp.yaml:13: error: K must be a positive "
                                        "integer, got '2.5'"),
    ("    4: 3.97", "    3: 3.97", 1, "qwen3.5_mtp.yaml:15: error: duplicate K=3 under "
                                      "thinking_on (first on line 14)"),
    ("  thinking_off:", "  thinking_on:", 1, "qwen3.5_mtp.yaml:20: error: duplicate key "
                                             "'thinking_on' (first on line 11)"),
    ("  thinking_off:", "  thinking_maybe:", 1, "qwen3.5_mtp.yaml:20: error: expected "
                                                "'thinking_on' or 'thinking_off', got "
                                                "'thinking_maybe'"),
    ("    3: 3.39", "    3: [3.39", 2, "qwen3.5_mtp.yaml:15: unreadable: not valid YAML: "),
    # regressions (atheris): a collection as a key raised TypeError (unhashable list) or,
    # as the model, passed as a list of nodes; an empty model name passed too
    ("  thinking_off:", "  [thinking_off]:", 1, "qwen3.5_mtp.yaml:20: error: expected "
                                                "'thinking_on' or 'thinking_off', got a "
                                                "collection"),
    ("qwen3.5-397b-a17b-nvfp4:", "[qwen3.5-397b-a17b-nvfp4]:", 1,
     "qwen3.5_mtp.yaml:10: error: expected the model name as the top-level key, got a "
     "collection"),
    ("qwen3.5-397b-a17b-nvfp4:", "'':", 1,
     "qwen3.5_mtp.yaml:10: error: expected the model name as the top-level key, got an empty "
     "key"),
]


@pytest.mark.parametrize("old, new, code, message", PLANTED)
def test_planted_defect_is_caught(golden_copy, run_cli, old, new, code, message):
    _plant(golden_copy, "qwen3.5_mtp.yaml", old, new)
    rc, out, err = run_cli("validate", golden_copy)
    assert rc == code
    lines = [ln for ln in out.replace(str(golden_copy) + os.sep, "").splitlines()
             if "warning" not in ln]
    assert lines[0].startswith(message), out
    if code == 1:
        assert lines == [message]


def test_lookup_refuses_a_directory_with_a_planted_defect(golden_copy, run_cli):
    _plant(golden_copy, "qwen3.5_mtp.yaml", "    3: 3.39", "    3: 9.39")
    rc, out, err = run_cli("lookup", "qwen3.5", "--k", "2", "--thinking", "on",
                           "--golden-dir", golden_copy)
    assert (rc, out) == (2, "")
    assert err == (f"error: {golden_copy}/qwen3.5_mtp.yaml:14: AL 9.39 for K=3 is outside "
                   "[1, 4] (1 <= AL <= K+1: the bonus token plus at most K drafts)\n")


def test_manifest_naming_a_missing_file(golden_copy, run_cli):
    (golden_copy / "glm5.2_mtp.yaml").unlink()
    rc, out, err = run_cli("validate", golden_copy)
    assert rc == 1
    assert ("manifest.yaml: error: manifest entry 'glm5.2_mtp' names missing file "
            "'glm5.2_mtp.yaml'") in out
    rc, out, err = run_cli("lookup", "qwen3.5", "--k", "2", "--thinking", "on",
                           "--golden-dir", golden_copy)
    assert rc == 2
    assert err == (f"error: {golden_copy}/manifest.yaml: manifest entry 'glm5.2_mtp' names "
                   "missing file 'glm5.2_mtp.yaml'\n")


MANIFEST_TYPES = [
    # regressions: each raised an internal error (TypeError, AttributeError) in validate
    # and lookup before manifest.yaml was checked against manifest.schema.json
    ("    model: qwen3.5-397b-a17b-nvfp4\n", "    model: [qwen3.5-397b-a17b-nvfp4]\n",
     "curves.qwen3.5_mtp.model: ['qwen3.5-397b-a17b-nvfp4'] is not of type 'string'"),
    ("    aliases: [qwen3.5, ", "    aliases: [[qwen3.5], ",
     "curves.qwen3.5_mtp.aliases.0: ['qwen3.5'] is not of type 'string'"),
    ("    draft: []\n", "    draft: {head: 1}\n",
     "curves.qwen3.5_mtp.draft: {'head': 1} is not of type 'array'"),
    ("    draft: []\n", "    draft: 7\n", "curves.qwen3.5_mtp.draft: 7 is not of type 'array'"),
    ("    variant: {}\n", "    variant: [1]\n",
     "curves.qwen3.5_mtp.variant: [1] is not of type 'object'"),
    ("format: 1\n", "format: 2\n", "format: 1 was expected"),
]


@pytest.mark.parametrize("old, new, message", MANIFEST_TYPES)
def test_manifest_value_of_the_wrong_type_names_its_line(golden_copy, run_cli, old, new,
                                                         message):
    manifest = golden_copy / "manifest.yaml"
    text = manifest.read_text()
    start = text.index("  qwen3.5_mtp:\n") if old.startswith("    ") else 0
    at = text.index(old, start)
    manifest.write_text(text[:at] + new + text[at + len(old):])
    line = text[:at].count("\n") + 1
    expected = f"error: {manifest}:{line}: manifest {message}\n"
    assert run_cli("validate", golden_copy) == (2, "", expected)
    assert run_cli("lookup", "qwen3.5", "--k", "2", "--thinking", "on",
                   "--golden-dir", golden_copy) == (2, "", expected)


def test_file_missing_from_manifest(golden_copy, run_cli):
    (golden_copy / "extra.yaml").write_text("extra-model:\n  thinking_on:\n    1: 1.50\n")
    rc, out, _ = run_cli("validate", golden_copy)
    assert rc == 1
    assert f"{golden_copy}/extra.yaml: error: curve file is not in manifest.yaml" in out


def test_stale_index_is_an_error(golden_copy, run_cli):
    _plant(golden_copy, "qwen3.5_mtp.yaml", "    3: 3.39", "    3: 3.38")
    rc, out, _ = run_cli("validate", golden_copy)
    assert rc == 1
    assert out.splitlines()[-1] == (f"{golden_copy}/index.tsv: error: out of date with the "
                                    "curve files or manifest; rebuild it with `goldenal index`")
    assert run_cli("index", golden_copy)[0] == 0
    assert run_cli("validate", golden_copy)[0] == 0


def test_missing_provenance_is_an_error(tmp_path, run_cli):
    (tmp_path / "bare.yaml").write_text("bare-model:\n  thinking_on:\n    1: 1.50\n")
    rc, out, _ = run_cli("validate", tmp_path)
    assert rc == 1
    assert out == f"{tmp_path}/bare.yaml:1: error: provenance has no source run URL\n"


def test_unreadable_directory_exits_2(tmp_path, run_cli):
    rc, out, err = run_cli("validate", tmp_path / "nope")
    assert (rc, out) == (2, "")
    assert err == f"error: {tmp_path / 'nope'}: not a directory\n"


def test_not_utf8_curve_file_is_unreadable(golden_copy, run_cli):
    (golden_copy / "qwen3.5_mtp.yaml").write_bytes(b"\xff\xfe model")
    rc, out, _ = run_cli("validate", golden_copy)
    assert rc == 2
    assert f"{golden_copy}/qwen3.5_mtp.yaml: unreadable: not UTF-8 text (byte 0)" in out


def test_validation_report_to_frame():
    frame = validate(PACKAGED).to_frame()
    assert list(frame.columns) == ["severity", "path", "line", "message"]
    assert list(frame.severity) == ["warning"] * 8


def test_hand_edited_index_is_never_served_and_is_an_error(golden_copy, run_cli):
    """Regression: the index's checksums covered the YAML files but not the index itself."""
    index = golden_copy / "index.tsv"
    index.write_text(index.read_text().replace("cell\tqwen3.5_mtp\ton\t3\t3.39",
                                               "cell\tqwen3.5_mtp\ton\t3\t3.40"))
    assert run_cli("lookup", "qwen3.5", "--k", "3", "--thinking", "on",
                   "--golden-dir", golden_copy) == (0, "3.39\n", "")
    rc, out, _ = run_cli("validate", golden_copy)
    assert rc == 1
    assert out.splitlines()[-1] == (f"{golden_copy}/index.tsv: error: out of date with the "
                                    "curve files or manifest; rebuild it with `goldenal index`")


def test_empty_directory_is_an_error(tmp_path, run_cli):
    rc, out, _ = run_cli("validate", tmp_path)
    assert (rc, out) == (1, f"{tmp_path}: error: no curve files (expected *.yaml)\n")
    rc, out, err = run_cli("index", tmp_path)
    assert (rc, out) == (2, "")
    assert err == f"error: {tmp_path}: no curve files to index (expected *.yaml curves)\n"
    assert list(tmp_path.iterdir()) == []
