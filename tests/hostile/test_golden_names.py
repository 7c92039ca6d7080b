"""Nothing is written outside a golden directory, and nothing replaces its manifest or index.

Curve ids and file names are checked before anything is written, by every
command that writes a golden directory (import, fit, index).
"""

from pathlib import Path

import pytest

from goldenal.golden.curvefile import check_curve_id
from goldenal.core.errors import UsageError
from hostile.hostile_support import snapshot

FIT_RUN = Path(__file__).resolve().parents[1] / "data" / "fit" / "inferencex_results"

BAD_IDS = ["../other/config", "..", "../x", "/etc/passwd", "a/b", "a\\b", ".hidden", "manifest",
           "MANIFEST", "index", "readme", "manifest.v2", "x.yaml", "nul", "com1", "a b",
           "caf\u00e9", "x" * 129, "", "-rf", "a..b", "x\n", "x\x00"]


@pytest.mark.parametrize("curve_id", BAD_IDS)
def test_bad_curve_ids_are_refused(curve_id):
    with pytest.raises(UsageError, match="is not allowed"):
        check_curve_id(curve_id)


@pytest.mark.parametrize("curve_id", ["minimaxm3_eagle3_gqa", "dsv4-pro-0813-dspark",
                                      "qwen3.5_mtp", "kimik3_dspark_probabilistic_sample_method"
                                      "_block_rejection_sample_method", "A9"])
def test_upstream_names_are_allowed(curve_id):
    assert check_curve_id(curve_id) == curve_id


@pytest.mark.parametrize("curve_id", ["../other/config", "manifest", "index", "/tmp/abs", ""])
def test_import_refuses_before_writing(golden_copy, upstream_file, run_cli, tmp_path, curve_id):
    outside = tmp_path / "other"
    outside.mkdir()
    source = upstream_file()
    before, before_outside = snapshot(golden_copy), snapshot(tmp_path)
    code, out, err = run_cli("import", source, "--golden-dir", golden_copy, "--curve-id",
                             curve_id, "--method", "eagle3", "--draft", "x/y", "--replace", "r")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: curve id {curve_id!r} is not allowed: ") and err.count("\n") == 1
    assert snapshot(golden_copy) == before
    assert snapshot(tmp_path) == before_outside


def test_import_refuses_a_file_stem_that_is_reserved(golden_copy, tmp_path, run_cli):
    path = tmp_path / "manifest.yaml"
    path.write_text("minimax-m3:\n  thinking_on:\n    3: 2.80\n")
    before = snapshot(golden_copy)
    code, _, err = run_cli("import", path, "--golden-dir", golden_copy, "--replace", "r")
    assert code == 2 and err.startswith(f"error: {path}: curve id 'manifest' is not allowed")
    assert snapshot(golden_copy) == before


@pytest.mark.parametrize("curve_id", ["../escaped", "index"])
def test_fit_refuses_before_fitting(tmp_path, run_cli, curve_id):
    out = tmp_path / "golden"
    code, _, err = run_cli("fit", FIT_RUN, "--model", "minimax-m3", "--method", "eagle3",
                           "--draft", "Inferact/MiniMax-M3-EAGLE3", "--curve-id", curve_id,
                           "--golden-dir", out, "--n-resamples", "100")
    assert code == 2
    assert err.startswith(f"error: curve id {curve_id!r} is not allowed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden"] or not out.exists()
    assert not out.exists() or not any(out.iterdir())


def test_a_manifest_naming_a_file_outside_is_refused_by_every_command(golden_copy, tmp_path,
                                                                      run_cli, upstream_file):
    manifest = golden_copy / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("file: qwen3.5_mtp.yaml",
                                                     "file: ../qwen3.5_mtp.yaml"))
    victim = tmp_path / "qwen3.5_mtp.yaml"
    victim.write_text("precious\n")
    source = upstream_file("qwen3.5_mtp", model="qwen3.5-397b-a17b-nvfp4")
    before = snapshot(tmp_path)
    for argv in (["index", golden_copy], ["validate", golden_copy],
                 ["import", source, "--golden-dir", golden_copy, "--replace", "r"]):
        code, _, err = run_cli(*argv)
        assert code == 2, argv
        assert err == (f"error: {manifest}: curve file name '../qwen3.5_mtp.yaml' is not "
                       "allowed: expected <curve id>.yaml in the golden directory itself (letters, "
                       "digits, '.', '_', '-'; not a reserved name)\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("bad", ["../other/x", "manifest", "a b"])
def test_a_manifest_id_no_writer_would_accept_is_refused_by_every_command(
        golden_copy, run_cli, upstream_file, bad):
    manifest = golden_copy / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("\n  qwen3.5_mtp:\n", f"\n  {bad}:\n"))
    source = upstream_file("minimaxm3_eagle3", model="minimax-m3", value="2.79")
    before = snapshot(golden_copy)
    for argv in (["index", golden_copy], ["validate", golden_copy],
                 ["import", source, "--golden-dir", golden_copy, "--replace", "r"],
                 ["lookup", "qwen3.5", "--k", "3", "--thinking", "on", "--golden-dir", golden_copy]):
        code, _, err = run_cli(*argv)
        assert code == 2, argv
        assert err.startswith(f"error: {manifest}: curve id {bad!r} is not allowed: "), argv
    assert snapshot(golden_copy) == before
