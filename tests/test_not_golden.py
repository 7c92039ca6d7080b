"""Runs marked ``not_golden``: ``measure --not-golden`` writes the mark, ``fit --golden-dir`` refuses.

A real run of a random test model (or any run that is no golden material)
carries ``not_golden: REASON`` in its run.yaml.  ``goldenal fit`` prints its
fit as for any run, but writes no golden directory from it unless
``--allow-not-golden`` is given, and then records the reason in the curve.
Run as a user runs it: the installed command in a subprocess.
"""

import json
import shutil
import subprocess

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import goldenal_cmd
from goldenal.core.errors import ParseError
from goldenal.readers.run import normalize_identity
from measure_stub import StubServer

TEXTS = [f"write a function that returns {i} squared" for i in range(12)]
REASON = "tiny random test model: its AL values are not a golden curve"
REFUSAL = ("the run is not golden material (not_golden: {reason}); use --allow-not-golden to "
           "write it to a scratch directory")
SIMULATED = ("the run is simulated (simulated: true): simulated runs validate the statistics "
             "and are never committed; use --allow-simulated for a scratch directory")
FAST = ("--seed", "1", "--n-resamples", "200")


def cli(*args):
    p = subprocess.run([*goldenal_cmd(), *map(str, args)], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One cell measured by ``goldenal measure --not-golden`` against the stub server."""
    tmp = tmp_path_factory.mktemp("not_golden")
    prompts = tmp / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": t}) + "\n"
                               for i, t in enumerate(TEXTS)))
    stub = StubServer("llamacpp", k=3)
    try:
        code, _, err = cli("measure", stub.url, "--out", tmp / "run", "--model", "tiny-llama",
                           "--draft", "tiny-llama-draft", "--method", "draft",
                           "--curve-id", "tiny_llama_draft", "--k", "3", "--thinking", "off",
                           "--prompts", prompts, "--max-tokens", "64",
                           "--not-golden", f"  {REASON}  ")
    finally:
        stub.stop()
    assert code == 0, err
    return tmp / "run"


def copy_run(run, dest, **changes):
    """A copy of ``run`` with top-level run.yaml keys changed (None deletes the key)."""
    shutil.copytree(run, dest)
    doc = yaml.safe_load((dest / "run.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    (dest / "run.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return dest


def test_measure_writes_the_mark_after_simulated(measured):
    text = (measured / "run.yaml").read_text()
    doc = yaml.safe_load(text)
    assert doc["not_golden"] == REASON     # the given reason, stripped
    assert list(doc)[:4] == ["run", "simulated", "not_golden", "model"]


def test_fit_out_refuses_with_the_run_and_the_reason(measured, tmp_path):
    code, out, err = cli("fit", measured, "--golden-dir", tmp_path / "golden", *FAST)
    assert (code, out) == (1, "")
    assert err == f"error: {measured}: {REFUSAL.format(reason=REASON)}\n"
    assert not (tmp_path / "golden").exists()


def test_fit_without_out_prints_the_fit(measured):
    code, out, err = cli("fit", measured, *FAST)
    assert code == 0, err
    assert out.splitlines()[0] == "curve tiny_llama_draft: 1 cells"
    assert out.splitlines()[2].split()[:2] == ["off", "3"]
    assert err == "note: nothing written; --golden-dir DIR commits the curve to a golden directory\n"


def test_allow_not_golden_writes_and_records_the_reason(measured, tmp_path):
    golden = tmp_path / "scratch"
    code, out, err = cli("fit", measured, "--golden-dir", golden, "--allow-not-golden", *FAST)
    assert (code, err) == (0, "")
    assert out.endswith(f"wrote {golden / 'tiny_llama_draft.yaml'}\n"
                        f"wrote {golden / 'tiny_llama_draft.distribution.json'}\n"
                        f"wrote {golden / 'manifest.yaml'}\nwrote {golden / 'index.tsv'}\n")
    manifest = yaml.safe_load((golden / "manifest.yaml").read_text())
    assert manifest["curves"]["tiny_llama_draft"]["provenance"]["not_golden"] == REASON
    assert f"# NOT GOLDEN: {REASON}\n" in (golden / "tiny_llama_draft.yaml").read_text()
    # validate keeps saying so, wherever the curve goes
    code, out, err = cli("validate", golden)
    assert (code, out) == (0, f"{golden / 'tiny_llama_draft.yaml'}:1: warning: curve "
                              f"tiny_llama_draft was fitted from a run marked not_golden "
                              f"({REASON}): keep it out of a committed golden directory\n")
    assert err == f"{golden}: 1 curves, 0 errors, 1 warnings, 0 unreadable\n"


def test_allow_simulated_does_not_allow_not_golden(measured, tmp_path):
    both = copy_run(measured, tmp_path / "both", simulated=True)
    # without --out the simulated mark alone refuses, as before
    assert cli("fit", both, *FAST)[2] == f"error: {both}: {SIMULATED}\n"
    code, _, err = cli("fit", both, "--golden-dir", tmp_path / "g", "--allow-simulated", *FAST)
    assert (code, err) == (1, f"error: {both}: {REFUSAL.format(reason=REASON)}\n")
    code, _, err = cli("fit", both, "--golden-dir", tmp_path / "g", "--allow-not-golden", *FAST)
    assert (code, err) == (1, f"error: {both}: {SIMULATED}\n")
    code, _, err = cli("fit", both, "--golden-dir", tmp_path / "g", "--allow-simulated",
                       "--allow-not-golden", *FAST)
    assert (code, err) == (0, "")


def test_a_marked_run_among_several_is_named(measured, tmp_path):
    clean = copy_run(measured, tmp_path / "clean", not_golden=None)
    code, _, err = cli("fit", clean, measured, "--golden-dir", tmp_path / "g", *FAST)
    assert (code, err) == (1, f"error: {measured}: {REFUSAL.format(reason=REASON)}\n")
    # the unmarked copy alone commits
    assert cli("fit", clean, "--golden-dir", tmp_path / "g", *FAST)[0] == 0


def test_multi_line_reason_is_reported_on_one_line(measured, tmp_path):
    run = copy_run(measured, tmp_path / "run", not_golden="random weights,\n  debugging only\n")
    code, _, err = cli("fit", run, "--golden-dir", tmp_path / "g", *FAST)
    assert (code, err) == (1, f"error: {run}: "
                              f"{REFUSAL.format(reason='random weights, debugging only')}\n")


@pytest.mark.parametrize("value, shown", [("''", "''"), ("true", "True"), ("[a]", "['a']"),
                                          ("3", "3")])
def test_a_bad_mark_is_one_line_naming_file_and_line(measured, tmp_path, value, shown):
    run = tmp_path / "run"
    shutil.copytree(measured, run)
    text = (run / "run.yaml").read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("not_golden:"))
    end = start + 1
    while end < len(lines) and lines[end].startswith(" "):
        end += 1
    lines[start:end] = [f"not_golden: {value}"]
    (run / "run.yaml").write_text("\n".join(lines) + "\n")
    code, out, err = cli("fit", run, *FAST)
    assert (code, out) == (2, "")
    assert err == (f"error: {run / 'run.yaml'}:{start + 1}: `not_golden`: expected the reason "
                   f"the run is no golden material (a non-empty string), got {shown}\n")


def test_null_mark_is_no_mark(measured, tmp_path):
    run = copy_run(measured, tmp_path / "run", not_golden=None)
    text = (run / "run.yaml").read_text().replace("simulated: false\n",
                                                  "simulated: false\nnot_golden: null\n")
    (run / "run.yaml").write_text(text)
    assert cli("fit", run, "--golden-dir", tmp_path / "g", *FAST)[0] == 0


def test_measure_refuses_an_empty_reason(tmp_path):
    code, out, err = cli("measure", "http://127.0.0.1:9", "--out", tmp_path / "run",
                         "--model", "m", "--k", "3", "--thinking", "off", "--not-golden", " ")
    assert (code, out) == (2, "")
    assert err == ("error: `not_golden` must be the reason the run is no golden material "
                   "(a non-empty string), got ' '\n")


def test_measure_adds_and_keeps_the_mark_on_an_existing_run(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": t}) + "\n"
                               for i, t in enumerate(TEXTS[:3])))
    run = tmp_path / "run"
    base = ["--out", run, "--model", "m", "--thinking", "off", "--prompts", prompts,
            "--max-tokens", "16"]
    for k, extra in ((1, []), (2, ["--not-golden", REASON]), (3, [])):
        stub = StubServer("llamacpp", k=k)
        try:
            code, _, err = cli("measure", stub.url, "--k", k, *base, *extra)
        finally:
            stub.stop()
        assert code == 0, err
        doc = yaml.safe_load((run / "run.yaml").read_text())
        assert doc.get("not_golden") == (None if k == 1 else REASON)
        assert [c["k"] for c in doc["cells"]] == list(range(1, k + 1))
    assert list(doc)[:3] == ["run", "simulated", "not_golden"]



@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.none(), st.booleans(), st.integers(), st.lists(st.text())))
def test_any_mark_reads_as_one_line_reason_or_one_line_error(value):
    """Whatever run.yaml holds under not_golden (through a YAML round trip): a reason on
    one line, no mark (null), or a ParseError naming the key on one line."""
    doc = yaml.safe_load(yaml.safe_dump({"not_golden": value}))
    try:
        out = normalize_identity(doc, path="run.yaml", lines={"not_golden": 7})
    except ParseError as exc:
        assert str(exc).startswith("run.yaml:7: `not_golden`: expected the reason")
        assert "\n" not in str(exc)
        assert not (isinstance(doc["not_golden"], str) and doc["not_golden"].strip())
        return
    if doc["not_golden"] is None:
        assert "not_golden" not in out
    else:
        assert out["not_golden"] == " ".join(doc["not_golden"].split())
        assert out["not_golden"] and "\n" not in out["not_golden"]
