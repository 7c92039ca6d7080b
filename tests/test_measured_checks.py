"""Input checks of the measured direction: run manifests, numeric flags, targets."""

import shutil
from pathlib import Path

import pytest

from goldenal.cli import main
from goldenal.core.errors import ParseError
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


@pytest.mark.filterwarnings("ignore::goldenal.core.errors.LowSampleWarning")  # one aggregate count
def test_scalar_draft_fits_as_one_head(tmp_path):
    from goldenal.stats import fit

    d = make_run(tmp_path, "curve: c\nmodel: m\nmethod: eagle3\ndraft: Org/Head\n" + CELL)
    assert fit(load_run(d), n_resamples=100).identity["draft"] == ["Org/Head"]
    from goldenal.stats.output import curve_from_fit

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
    (["fit", "x", "--golden-dir", "o", "--confidence-level", "1.5"],
     "argument --confidence-level: expected a number between 0 and 1, got '1.5'"),
    (["fit", "x", "--golden-dir", "o", "--n-resamples", "5"],
     "argument --n-resamples: expected an integer >= 100, got '5'"),
    (["fit", "x", "--golden-dir", "o", "--seed", "-1"],
     "argument --seed: expected an integer >= 0, got '-1'"),
    (["diff", "a", "b", "--confidence-level", "nan"],
     "argument --confidence-level: expected a number between 0 and 1, got 'nan'"),
    (["export", "a", "--k", "3", "--thinking", "on", "--n-resamples", "5"],
     "argument --n-resamples: expected an integer >= 100, got '5'"),
    (["verify", "x", "--k", "3", "--target", "2.5", "--z", "inf"],
     "argument --z: expected a positive number, got 'inf'"),
    (["measure", "http://127.0.0.1:9", "--out", "r", "--model", "m", "--k", "3",
      "--thinking", "on", "--retries", "-1"],
     "argument --retries: expected an integer >= 0, got '-1'"),
    (["plan", "p", "--half-width", "-0.05"],
     "argument --half-width: expected a positive number of AL, got '-0.05'"),
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
    from goldenal.measuring.verify import verify

    with pytest.raises(ValueError, match="`k` must be a positive integer, got 0"):
        verify(DATA / "run_manifest" / "server_off_k5.log", "2.5", k=0)


# -- verify targets ------------------------------------------------------------------

@pytest.mark.parametrize("target", ["nan", "inf", "-inf"])
def test_verify_non_finite_target_is_a_usage_error(capsys, target):
    rc = main(["verify", str(DATA / "run_manifest" / "server_off_k5.log"), "--k", "5",
               f"--target={target}"])
    assert rc == 2
    assert capsys.readouterr().err == f"error: `target` must be a finite number, got '{target}'\n"


# -- one committed curve per identity ------------------------------------------------

DUP = ("curve: mm3dup\nmodel: minimax-m3\nmethod: eagle3\n"
       "draft: [Inferact/MiniMax-M3-EAGLE3]\nvariant: {}\n" + CELL)


def test_fit_refuses_a_second_curve_of_the_same_identity(tmp_path, golden_copy, capsys):
    d = make_run(tmp_path, DUP)
    before = sorted(p.name for p in golden_copy.iterdir())
    assert main(["fit", str(d), "--golden-dir", str(golden_copy), "--n-resamples", "100"]) == 3
    assert capsys.readouterr().err == (
        f"error: {golden_copy / 'minimaxm3_eagle3.yaml'}: the output directory already holds "
        "curve minimaxm3_eagle3 with the same model, method, draft and variant as mm3dup; pass "
        "--replace REASON to replace minimaxm3_eagle3 (the reason is recorded), or give the "
        "new curve another variant\n")
    assert sorted(p.name for p in golden_copy.iterdir()) == before


def test_fit_replace_replaces_the_curve_of_that_identity(tmp_path, golden_copy, capsys):
    from goldenal.golden.registry import load_registry
    from goldenal.golden.validation import validate

    d = make_run(tmp_path, DUP)
    assert main(["fit", str(d), "--golden-dir", str(golden_copy), "--n-resamples", "100",
                 "--replace", "remeasured"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {golden_copy / 'minimaxm3_eagle3.yaml'}" in out
    assert not (golden_copy / "mm3dup.yaml").exists()
    reg = load_registry(golden_copy)
    assert "mm3dup" not in reg.curves
    assert reg.curves["minimaxm3_eagle3"].cells["on"][3] == "2.83"
    assert (golden_copy / "minimaxm3_eagle3.distribution.json").exists()
    assert not [p for p in validate(golden_copy).errors if "same identity" in p.message]


def test_validate_reports_two_curves_of_one_identity(golden_copy, capsys):
    manifest = golden_copy / "manifest.yaml"
    text = manifest.read_text()
    # give the GQA head's curve the identity of the plain EAGLE3 curve
    start = text.index("  minimaxm3_eagle3_gqa:")
    block = text[start:]
    draft_line = next(line for line in block.splitlines() if line.strip().startswith("draft:"))
    manifest.write_text(text[:start] + block.replace(
        draft_line, "    draft: [Inferact/MiniMax-M3-EAGLE3]", 1))
    rc = main(["validate", str(golden_copy)])
    err = capsys.readouterr()
    lines = [line for line in (err.out + err.err).splitlines() if "same identity" in line]
    assert rc == 1
    assert lines == [(f"{manifest}: error: curves minimaxm3_eagle3 and minimaxm3_eagle3_gqa "
                      "have the same identity (model minimax-m3, method eagle3, draft "
                      "Inferact/MiniMax-M3-EAGLE3, variant none); lookups cannot tell them "
                      "apart: remove one or give them different variants")]


# -- outputs checked before anything is written --------------------------------------

def test_fit_checks_summary_destination_before_writing(tmp_path, capsys):
    d = make_run(tmp_path, "curve: c\nmodel: m\nmethod: eagle3\n" + CELL)
    out = tmp_path / "golden"
    bad = tmp_path / "nonexistent" / "s.md"
    assert main(["fit", str(d), "--golden-dir", str(out), "--summary-md", str(bad)]) == 2
    assert capsys.readouterr().err == (f"error: {bad}: --summary-md: directory "
                                       f"{bad.parent} does not exist\n")
    assert not out.exists()


def test_failed_atomic_write_names_the_target(tmp_path):
    from goldenal.core.files import write_text_atomic

    target = tmp_path / "missing" / "x.json"
    with pytest.raises(OSError) as exc:
        write_text_atomic(target, "{}")
    assert exc.value.filename == str(target)


# -- one-line warnings and messages with their path ----------------------------------

def test_ingest_empty_directory_names_it(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["ingest", str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path / 'empty'}: no observations "
                                       "(no measurement files read)\n")


def test_ingest_keeps_k_warnings_when_every_window_is_dropped(tmp_path, capsys):
    d = make_run(tmp_path, 'model: m\ncells: [{thinking: "off", k: 3, '
                 'files: [server_off_k5.log]}]\n', files=("server_off_k5.log",))
    assert main(["ingest", str(d)]) == 2
    err = capsys.readouterr().err.splitlines()
    log = d / "server_off_k5.log"
    assert f"warning: {log}:4: a window with K=5 in the cell thinking off, K=3; left out of " \
           "the cell" in err
    assert f"warning: {log}:3: server started with num_speculative_tokens=5, the cell says " \
           "K=3 (thinking off)" in err


# -- mean-only cells -----------------------------------------------------------------

SGLANG = 'curve: c14\nmodel: m14\nmethod: eagle3\ncells: [{thinking: "on", k: 3, ' \
         'files: [sglang_decode_11948.log]}]\n'


def test_fit_refuses_mean_only_cells(tmp_path, capsys):
    d = make_run(tmp_path, SGLANG, files=("sglang_decode_11948.log",), source=DATA)
    out = tmp_path / "golden"
    assert main(["fit", str(d), "--golden-dir", str(out)]) == 1
    assert capsys.readouterr().err == (
        f"error: {d / 'sglang_decode_11948.log'}: 1 cell(s) rest on printed means only, "
        "without step counts (thinking on K=3): their average is not a pooled AL and has no "
        "interval; measure with counts (metrics, per-request data), or pass --allow-mean-only "
        "to commit them anyway\n")
    assert not out.exists() or not any(out.iterdir())


def test_fit_allow_mean_only_commits_and_marks_the_cell(tmp_path, capsys):
    import json

    d = make_run(tmp_path, SGLANG, files=("sglang_decode_11948.log",), source=DATA)
    out = tmp_path / "golden"
    assert main(["fit", str(d), "--golden-dir", str(out), "--allow-mean-only", "--format",
                 "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [(c["value"], c["mean_only"], c["n_steps"]) for c in doc["cells"]] == \
        [("1.95", True, None)]
    assert captured.err == ("warning: thinking on K=3: golden value 1.95 committed from "
                            "printed means only (--allow-mean-only): no step counts, no "
                            "interval\n")
    dist = json.loads((out / "c14.distribution.json").read_text())
    assert dist["cells"][0]["mean_only"] is True


def test_fit_text_output_names_mean_only_cells(tmp_path, capsys):
    d = make_run(tmp_path, SGLANG, files=("sglang_decode_11948.log",), source=DATA)
    assert main(["fit", str(d), "--golden-dir", str(tmp_path / "g"), "--allow-mean-only"]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.split() == ["on", "3", "1.95", "-", "mean-only", "-"]


def test_load_run_checks_identity_given_in_python():
    with pytest.raises(ParseError, match="`draft`: expected a draft head id or a list of "
                                         "them, got 5"):
        load_run(DATA / "run_manifest", draft=5)


def test_write_fit_refuses_mean_only_in_python(tmp_path):
    from goldenal.core.errors import PolicyError
    from goldenal.stats import fit, write_fit

    d = make_run(tmp_path, SGLANG, files=("sglang_decode_11948.log",), source=DATA)
    curvefit = fit(load_run(d))
    with pytest.raises(PolicyError, match="rest on printed means only"):
        write_fit(curvefit, tmp_path / "golden")
    assert write_fit(curvefit, tmp_path / "golden", allow_mean_only=True)[0] == \
        str(tmp_path / "golden" / "c14.yaml")


# -- verify with refused windows -----------------------------------------------------

TRUNCATED = ("(APIServer pid=4242) INFO 11-30 05:09:10 [metrics.py:101] SpecDecoding metrics: "
             "Mean acceptance length: 2.82, Accepted throughput: 364.90 tokens/s, Drafted")


def _damaged_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_text((DATA / "verify" / "synthetic_2.83.log").read_text() + TRUNCATED)
    return log


def test_verify_with_refused_windows_is_incomplete(tmp_path, capsys):
    log = _damaged_log(tmp_path)
    assert main(["verify", str(log), "--target", "2.83", "--k", "3"]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"incomplete: 1 window refused (first: {log}:29: damaged spec-decode "
                          "line: unexpected text 'Drafted'); the readable windows give: hit: ")
    from goldenal.measuring.verify import verify

    assert verify(log, "2.83", k=3).verdict == "incomplete"


def test_verify_allow_incomplete_judges_the_readable_windows(tmp_path, capsys):
    log = _damaged_log(tmp_path)
    assert main(["verify", str(log), "--target", "2.83", "--k", "3",
                 "--allow-incomplete"]) == 0
    assert capsys.readouterr().out.startswith("hit: realized AL 2.8282 vs target 2.83")


# -- diff: the committed value's rounding --------------------------------------------

def test_diff_adds_rounding_variance_of_a_committed_side(tmp_path):
    import math

    from scipy.stats import norm

    from goldenal.stats.diff import diff_curves
    from goldenal.stats import fit
    from goldenal.plot import diff_frame

    curve = tmp_path / "c.yaml"
    curve.write_text("m:\n  thinking_on:\n    3: 2.84\n")
    from goldenal.testing.simulate import simulate_cell

    # per-request records: the fitted side has a standard error (an aggregate has none)
    records = simulate_cell([0.8, 0.7, 0.6], n_requests=40, steps_per_request=100,
                            rng=1).observations("request")
    fitted = fit({("on", 3): records}, method="eagle3", n_resamples=100)
    cell = fitted.cells[("on", 3)]
    assert cell.interval_method == "bootstrap"
    result = diff_curves(curve, fitted)
    (row,) = result.rows
    se = math.sqrt(cell.standard_error ** 2 + 0.01 ** 2 / 12)
    assert row.se == pytest.approx(se, rel=1e-12)
    assert row.delta == pytest.approx(cell.mean_acceptance_length - 2.84, abs=1e-12)
    frame = diff_frame(result)
    q = norm.ppf(0.975)
    assert frame["high"].iloc[0] - frame["delta"].iloc[0] == pytest.approx(q * se, rel=1e-9)
    assert list(frame["interval"]) == ["se"]


def test_combined_standard_error_rule():
    from goldenal.stats.diff import combined_standard_error

    assert combined_standard_error(None, None, rounded_a=True, rounded_b=True) is None
    assert combined_standard_error(0.003, None, rounded_b=True) == \
        pytest.approx((0.003 ** 2 + 0.01 ** 2 / 12) ** 0.5)
    assert combined_standard_error(0.003, 0.004) == pytest.approx(0.005)
    assert combined_standard_error(0.003, None) == pytest.approx(0.003)


# -- run directories outside fit are refused as fit refuses them ---------------------

SIMULATED = "simulated: true\ncurve: c16\nmodel: m\nmethod: eagle3\n" + CELL
SYNTHETIC = ('curve: c15\nmodel: m\nmethod: mtp\ncells: [{thinking: "off", k: 5, '
             'files: [server_off_k5.log]}]\n')


@pytest.mark.parametrize("argv", [
    ["export", "{run}", "--k", "3", "--thinking", "on"],
    ["diff", "minimaxm3_eagle3", "{run}"],
    ["plot", "minimaxm3_eagle3", "{run}", "--out", "{tmp}/p.png"],
])
def test_simulated_run_is_refused_outside_fit(tmp_path, capsys, argv):
    d = make_run(tmp_path, SIMULATED)
    argv = [a.format(run=d, tmp=tmp_path) for a in argv]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"error: {d}: the run is simulated (simulated: true): simulated runs validate the "
        "statistics and are never committed; use --allow-simulated for a scratch directory\n")
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("argv", [
    ["export", "{run}", "--k", "5", "--thinking", "off"],
    ["diff", "minimaxm3_eagle3", "{run}"],
    ["plot", "minimaxm3_eagle3", "{run}", "--out", "{tmp}/p.png"],
])
def test_synthetic_acceptance_run_is_refused_outside_fit(tmp_path, capsys, argv):
    d = make_run(tmp_path, SYNTHETIC, files=("server_off_k5.log",))
    argv = [a.format(run=d, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: {d / 'server_off_k5.log'}:3: server ran with synthetic acceptance (2.8); its "
        "AL is an input, not a measurement of the draft head; correct run.yaml (or the "
        "flags)\n")


def test_export_allowed_simulated_run_is_not_measured(tmp_path, capsys):
    import json

    d = make_run(tmp_path, SIMULATED)
    assert main(["export", str(d), "--k", "3", "--thinking", "on", "--allow-simulated",
                 "--n-resamples", "100"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["measured"] is False
    assert doc["marginal_accept_rates"] == [1.0, 0.83, 0.0]


def test_diff_allow_simulated_fits_the_run(tmp_path, capsys):
    d = make_run(tmp_path, SIMULATED)
    assert main(["diff", "minimaxm3_eagle3", str(d), "--allow-simulated", "--exit-zero"]) == 0
    assert "on        3   2.83   2.83" in capsys.readouterr().out


# -- export: warnings as one line ----------------------------------------------------

def test_export_run_prints_fit_warnings_as_one_line(tmp_path, capsys):
    d = tmp_path / "results"
    d.mkdir()
    log = Path(__file__).parent / "data" / "fit" / "inferencex_results" / "server_on_mtp3.log"
    d.joinpath("server_on_mtp3.log").write_text(
        "".join(log.read_text().splitlines(keepends=True)[:12]))
    assert main(["export", str(d), "--k", "3", "--thinking", "on", "--model", "m", "--method",
                 "eagle3", "--n-resamples", "100"]) == 0
    assert capsys.readouterr().err == (
        "warning: cell thinking on, K=3: no interval: 6 log windows and no known request "
        "span: a request can outlast any batch of windows; give per-request records, the "
        "output cap and concurrency (dataset.output_len, concurrency in run.yaml), or 10 or "
        "more independent runs; see `goldenal plan` and docs/statistics.md, \"Planning a "
        "measurement\", for the requests or runs an interval needs\n")


# -- speculation profiles are a measurement format -----------------------------------

@pytest.mark.filterwarnings("ignore::goldenal.core.errors.LowSampleWarning")  # one aggregate count
def test_ingest_reads_an_exported_profile_with_its_counts(tmp_path):
    from goldenal.stats import fit
    from goldenal.apply.export import export_profile, write_profile
    from goldenal.readers import sniff

    d = make_run(tmp_path, "curve: c\nmodel: m\nmethod: eagle3\n" + CELL)
    path = write_profile(export_profile(fit(load_run(d), n_resamples=100), k=3,
                                        thinking="on"), tmp_path / "speculation_profile.json")
    assert sniff(path) == "speculation-profile"
    (o,) = ingest([path])
    assert (o.format, o.k, o.drafts, o.accepted, o.accepted_per_position, o.thinking,
            o.mean_only) == ("speculation-profile", 3, 20000, 36600, (20000, 16600, 0), "on",
                             False)


def test_ingest_profile_without_histogram_is_mean_only(tmp_path, capsys):
    from goldenal.apply.export import export_profile, write_profile

    path = write_profile(export_profile("kimik3_dspark", k=3, thinking="on"),
                         tmp_path / "p.json")
    obs = ingest([path])
    assert [(o.k, o.mean_only, o.mean_al) for o in obs] == [(3, True, 2.87)]
    assert main(["ingest", str(path)]) == 0
    assert "cell p.json K=3: mean-only, 1 window(s)" in capsys.readouterr().out


# -- one function each -----------------------------------------------------------------

def test_run_directory_detection_and_loading_have_one_home(tmp_path):
    import goldenal.stats.diff
    from goldenal.stats import output
    from goldenal.readers.run import is_run_dir

    assert not hasattr(goldenal.stats.diff, "load_run_for_fit")
    assert callable(output.load_run_for_fit)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "server_on_mtp3.log").write_text("")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "server_notes.txt").write_text("")
    assert is_run_dir(DATA / "run_manifest") and is_run_dir(tmp_path / "c")
    assert not is_run_dir(tmp_path / "x") and not is_run_dir(DATA / "run_manifest" / "run.yaml")


def test_curve_side_resolution_is_shared(tmp_path):
    from goldenal.stats.diff import resolve_curve

    curve, path, dist = resolve_curve("minimaxm3_eagle3")
    assert (curve.id, path.endswith("minimaxm3_eagle3.yaml"), dist) == (
        "minimaxm3_eagle3", True, None)
    f = tmp_path / "c.yaml"
    f.write_text("m:\n  thinking_on:\n    3: 2.84\n")
    curve, path, dist = resolve_curve(f)
    assert (curve.id, curve.cells, path) == ("c", {"on": {3: "2.84"}}, str(f))


def test_export_prints_the_run_load_warnings(tmp_path, capsys):
    d = make_run(tmp_path, "curve: c\nmodel: m\nmethod: eagle3\n" + CELL)
    assert main(["export", str(d), "--k", "3", "--thinking", "on", "--model", "other",
                 "--n-resamples", "100"]) == 0
    assert capsys.readouterr().err == (
        "warning: model: 'other' given, run.yaml says 'm'; using the given value\n"
        "warning: cell thinking on, K=3: no interval: 1 aggregate count(s) from 1 run(s): "
        "steps are not independent; give per-request records or 10 or more independent "
        "runs; see `goldenal plan` and docs/statistics.md, \"Planning a measurement\", for "
        "the requests or runs an interval needs\n")
