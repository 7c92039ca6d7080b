"""Audit regressions: GAL306 severity and agreement between inject and audit."""

from goldenal.cli import main


def _audit(capsys, *args):
    rc = main(["audit", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_an_unparseable_agentic_recipe_fails_the_audit(tmp_path, capsys):
    agentic = tmp_path / "agentic"
    agentic.mkdir()
    (agentic / "r.yaml").write_text("backend:\n  sglang_config: {aggregated: [\n"
                                    "SGLANG_SIMULATE_ACC_LEN: '2'\n")
    rc, out, err = _audit(capsys, str(tmp_path))
    assert (rc, err) == (1, "")
    assert out.splitlines() == [
        "agentic/r.yaml:4:1: GAL306 cannot parse recipe: did not find expected ',' or ']'",
        "Found 1 finding (1 error, 0 warnings, 0 info).",
        "Checked 0 serve configs in 1 file read; skipped 1 file (--show-skipped lists them)."]


def test_an_unparseable_serve_config_is_an_error_and_an_incidental_file_a_warning(
        tmp_path, capsys):
    agentic = tmp_path / "agentic"
    agentic.mkdir()
    (agentic / "serve.json").write_text('{"speculative_config": {"num_speculative_tokens": 3,'
                                        '\n"synthetic_acceptance_length": 2.8\n')
    (agentic / "notes.json").write_text('{"synthetic_acceptance_length": 2.8\n')
    rc, out, err = _audit(capsys, "--format", "json", str(tmp_path))
    import json

    found = {(f["path"], f["code"], f["severity"]) for f in json.loads(out)}
    assert found == {("agentic/serve.json", "GAL306", "error"),
                     ("agentic/notes.json", "GAL306", "warning")}
    assert rc == 1


def test_the_rule_page_says_when_gal306_is_an_error(capsys):
    rc, out, _ = _audit(capsys, "--explain", "GAL306")
    assert rc == 0
    assert "does not parse is an **error**, so the audit exits 1" in out
