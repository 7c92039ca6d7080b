"""Input checks of the measured direction: run manifests, numeric flags, targets."""

import shutil
from pathlib import Path

import pytest

from goldenal.cli import main
from goldenal.errors import ParseError
from goldenal.readers import ingest, load_run

DATA = Path(__file__).parent / "data" / "ingest"
PROMS = ("metrics_on_k3_before.prom", "metrics_on_k3_after.prom")


def make_run(tmp_path, manifest, name="r", files=PROMS, source=DATA / "run_manifest"):
    """A run directory with the fixture's files and the given run.yaml text."""
    d = tmp_path / name
    d.mkdir()
    for f in files:
        shutil.copy(Path(source) / f, d / Path(f).name)
    (d / "run.yaml").write_text(manifest)
    return d


CELL = 'cells: [{thinking: "on", k: 3, files: [metrics_on_k3_before.prom, ' \
       'metrics_on_k3_after.prom]}]\n'


# -- run.yaml identity ---------------------------------------------------------------

def test_scalar_draft_is_one_head(tmp_path):
    d = make_run(tmp_path, "curve: c\nmodel: m\ndraft: Org/Head\n" + CELL)
    assert load_run(d).identity["draft"] == ["Org/Head"]


def test_scalar_draft_fits_as_one_head(tmp_path):
    from goldenal.fitting import fit

    d = make_run(tmp_path, "curve: c\nmodel: m\nmethod: eagle3\ndraft: Org/Head\n" + CELL)
    assert fit(load_run(d), n_resamples=100).identity["draft"] == ["Org/Head"]
    from goldenal.fitting.output import curve_from_fit

    assert curve_from_fit(fit(load_run(d), n_resamples=100)).draft == ("Org/Head",)


@pytest.mark.parametrize("line,key,message", [
    ("draft: 5", "draft", "`draft`: expected a draft head id or a list of them, got 5"),
    ("draft: [Org/Head, 7]", "draft",
     "`draft`: expected draft head ids (strings), got ['Org/Head', 7]"),
    ('simulated: "no"', "simulated", "`simulated`: expected true or false, got 'no'"),
    ("variant: [a, b]", "variant", "`variant`: expected a mapping of KEY: VALUE, got ['a', 'b']"),
    ("model: 5", "model", "`model`: expected a string, got 5"),
])
def test_bad_identity_names_run_yaml_and_line(tmp_path, capsys, line, key, message):
    d = make_run(tmp_path, "curve: c\n" + line + "\n" + CELL)
    with pytest.raises(ParseError) as exc:
        load_run(d)
    assert (exc.value.path, exc.value.line, exc.value.message) == (
        str(d / "run.yaml"), 2, message)
    assert main(["ingest", str(d)]) == 2
    assert capsys.readouterr().err == f"error: {d / 'run.yaml'}:2: {message}\n"


def test_simulated_must_be_a_boolean_not_a_truthy_string(tmp_path):
    d = make_run(tmp_path, "simulated: false\n" + CELL)
    assert load_run(d).identity["simulated"] is False


# -- repeated cells ------------------------------------------------------------------

def test_repeated_cell_is_refused_with_its_line(tmp_path):
    d = make_run(tmp_path, "model: m\ncells:\n"
                 '  - {thinking: "on", k: 3, files: [metrics_on_k3_after.prom]}\n'
                 '  - {thinking: "off", k: 3, files: [metrics_on_k3_after.prom]}\n'
                 '  - {thinking: "on", k: 3, files: [metrics_on_k3_before.prom]}\n')
    with pytest.raises(ParseError) as exc:
        load_run(d)
    assert str(exc.value) == (f"{d / 'run.yaml'}:5: cells[2]: thinking on, K=3 repeats "
                              "cells[0] (line 3); list every file of a cell in one `files` list")


def test_cell_error_names_the_path_once(tmp_path, capsys):
    d = make_run(tmp_path, "cells: [{thinking: maybe, k: 3, files: [metrics_on_k3_after.prom]}]\n")
    assert main(["ingest", str(d)]) == 2
    assert capsys.readouterr().err == (f"error: {d / 'run.yaml'}:1: cells[0]: thinking must be "
                                       "'on' or 'off', got 'maybe'\n")


# -- numeric arguments ---------------------------------------------------------------

@pytest.mark.parametrize("argv,message", [
    (["ingest", "x", "--k", "0"], "argument --k: expected a positive integer, got '0'"),
    (["verify", "x", "--k", "-1", "--target", "2.5"],
     "argument --k: expected a positive integer, got '-1'"),
    (["fit", "x", "--out", "o", "--confidence-level", "1.5"],
     "argument --confidence-level: expected a number between 0 and 1, got '1.5'"),
    (["fit", "x", "--out", "o", "--n-resamples", "5"],
     "argument --n-resamples: expected an integer >= 100, got '5'"),
    (["fit", "x", "--out", "o", "--seed", "-1"],
     "argument --seed: expected an integer >= 0, got '-1'"),
    (["diff", "a", "b", "--confidence-level", "nan"],
     "argument --confidence-level: expected a number between 0 and 1, got 'nan'"),
    (["export", "a", "--k", "3", "--thinking", "on", "--n-resamples", "5"],
     "argument --n-resamples: expected an integer >= 100, got '5'"),
    (["verify", "x", "--k", "3", "--target", "2.5", "--z", "inf"],
     "argument --z: expected a positive number, got 'inf'"),
])
def test_bad_numeric_arguments_are_usage_errors(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].endswith(f"error: {message}")
    assert "internal error" not in err and "Traceback" not in err


def test_library_entry_points_check_k(tmp_path):
    with pytest.raises(ValueError, match="`k` must be a positive integer, got 0"):
        ingest([DATA / "run_manifest" / "server_off_k5.log"], k=0)
    with pytest.raises(ValueError, match="`k` must be a positive integer, got -2"):
        load_run(DATA / "run_manifest", k=-2)
    from goldenal.verification import verify

    with pytest.raises(ValueError, match="`k` must be a positive integer, got 0"):
        verify(DATA / "run_manifest" / "server_off_k5.log", "2.5", k=0)


# -- verify targets ------------------------------------------------------------------

@pytest.mark.parametrize("target", ["nan", "inf", "-inf"])
def test_verify_non_finite_target_is_a_usage_error(capsys, target):
    rc = main(["verify", str(DATA / "run_manifest" / "server_off_k5.log"), "--k", "5",
               f"--target={target}"])
    assert rc == 2
    assert capsys.readouterr().err == f"error: `target` must be a finite number, got '{target}'\n"
