"""`goldenal fit` as a user runs it: outputs, round trip through lookup, refusals."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from goldenal.testing.simulate import simulate_run

DATA = Path(__file__).resolve().parent / "data" / "fit"
RESULTS = DATA / "inferencex_results"  # InferenceX collector layout, K = 1..3, thinking on
IDENTITY = ["--model", "minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3",
            "--method", "eagle3", "--curve-id", "mm3_fixture"]


@pytest.fixture
def fitted_dir(run_cli, tmp_path):
    out = tmp_path / "golden"
    code, stdout, stderr = run_cli("fit", RESULTS, *IDENTITY, "--golden-dir", out,
                                   "--n-resamples", "2000")
    # log windows alone, with no output cap or concurrency known: no honest interval
    assert code == 0
    assert stderr == "".join(f"warning: cell thinking on, K={k}: no interval: {NO_SPAN}\n"
                             for k in (1, 2, 3))
    return out, stdout


NO_SPAN = ("33 log windows and no known request span: a request can outlast any batch of "
           "windows; give per-request records, the output cap and concurrency "
           "(dataset.output_len, concurrency in run.yaml), or 10 or more independent runs; "
           "see `goldenal plan` and docs/statistics.md, \"Planning a measurement\", for the "
           "requests or runs an interval needs")


NO_CROSS_K = ("no cell has 10 or more per-request records with per-position counts: log "
              "windows and aggregate counts cannot separate the step re-weighting across K")


def test_fit_prints_the_cells_and_writes_both_files(fitted_dir):
    out, stdout = fitted_dir
    lines = stdout.splitlines()
    assert lines[0] == "curve mm3_fixture: 3 cells"
    assert lines[1] == ("thinking  K     AL  95% interval        method           steps")
    assert [line.split()[:3] for line in lines[2:5]] == [["on", "1", "1.79"],
                                                          ["on", "2", "2.36"],
                                                          ["on", "3", "2.67"]]
    assert lines[2] == "on        1   1.79  -                   none             12645"
    assert all(line.split()[3:5] == ["-", "none"] for line in lines[2:5])
    assert lines[5:] == [f"cross-K check, thinking on: skipped: {NO_CROSS_K}",
                         f"no interval: {NO_SPAN}",
                         "output cap check skipped: no output cap stated (dataset.output_len "
                         "in run.yaml)",
                         "estimand: AL of the prompt population the measured requests were "
                         "drawn from: the ratio of expected tokens to expected verification "
                         "steps per request; for the fixed benchmark prompt set itself the "
                         "intervals are conservative",
                         f"wrote {out / 'mm3_fixture.yaml'}",
                         f"wrote {out / 'mm3_fixture.distribution.json'}",
                         f"wrote {out / 'manifest.yaml'}", f"wrote {out / 'index.tsv'}"]
    text = (out / "mm3_fixture.yaml").read_text()
    assert "minimax-m3:\n  thinking_on:\n    1: 1.79\n    2: 2.36\n    3: 2.67\n" in text
    dist = json.loads((out / "mm3_fixture.distribution.json").read_text())
    cell = dist["cells"][2]
    assert (cell["thinking"], cell["k"], cell["value"]) == ("on", 3, "2.67")
    assert cell["interval"] == {"low": None, "high": None, "level": 0.95, "method": "none",
                                "reason": NO_SPAN}
    assert cell["standard_error"] is None
    assert dist["estimand"].startswith("AL of the prompt population")
    assert len(cell["per_position"]["survival"]) == 3
    assert dist["models"]["on"]["kind"] == "chain"
    manifest = yaml.safe_load((out / "manifest.yaml").read_text())
    entry = manifest["curves"]["mm3_fixture"]
    assert entry["method"] == "eagle3" and entry["draft"] == ["Inferact/MiniMax-M3-EAGLE3"]


def test_round_trip_through_lookup(fitted_dir, run_cli):
    out, _ = fitted_dir
    for k, value in ((1, "1.79"), (2, "2.36"), (3, "2.67")):
        code, stdout, stderr = run_cli("lookup", "--golden-dir", out, "--curve", "mm3_fixture",
                                       "--k", k, "--thinking", "on")
        assert (code, stdout, stderr) == (0, value + "\n", "")


def test_json_output_for_ci(run_cli, tmp_path):
    code, stdout, _ = run_cli("fit", RESULTS, *IDENTITY, "--golden-dir", tmp_path / "g",
                              "--n-resamples", "500", "--format", "json")  # log windows only
    assert code == 0
    doc = json.loads(stdout)
    assert doc["curve"] == "mm3_fixture"
    assert [os.path.basename(f) for f in doc["files"]] == [
        "mm3_fixture.yaml", "mm3_fixture.distribution.json", "manifest.yaml", "index.tsv"]
    first = doc["cells"][0]
    assert set(first) == {"thinking", "k", "value", "estimate", "interval", "n_steps",
                          "mean_only", "checks"}
    assert first["interval"] == {"low": None, "high": None, "level": 0.95, "method": "none"}
    # a log-only run says which checks were skipped, and why
    assert first["checks"] == {
        "interval": {"status": "skipped", "reason": NO_SPAN},
        "output_cap": {"status": "skipped",
                       "reason": "no output cap stated (dataset.output_len in run.yaml)"},
        "cross_k": {"status": "skipped", "reason": NO_CROSS_K}}
    assert doc["checks"] == {"cross_k": {"on": {"status": "skipped", "reason": NO_CROSS_K}}}
    assert doc["flags"] == []
    assert first["value"] == "%.2f" % first["estimate"]


def test_existing_curve_is_refused_and_untouched(fitted_dir, run_cli):
    out, _ = fitted_dir
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, stdout, stderr = run_cli("fit", RESULTS, *IDENTITY, "--golden-dir", out)
    assert (code, stdout) == (3, "")
    assert stderr == (f"error: {out / 'mm3_fixture.yaml'}: the output directory already holds "
                      "curve mm3_fixture; pass --replace REASON to replace it (the reason is "
                      "recorded)\n")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_replace_records_the_reason(fitted_dir, run_cli, tmp_path):
    out, _ = fitted_dir
    run = simulate_run([0.9, 0.8, 0.7], [1, 2, 3], rng=1, n_requests=20,
                       steps_per_request=100,
                       identity={"model": "minimax-m3", "curve": "mm3_fixture",
                                 "draft": ["Inferact/MiniMax-M3-EAGLE3"]})
    run.write(tmp_path / "rerun", artifact="requests")
    code, _, stderr = run_cli("fit", tmp_path / "rerun", "--golden-dir", out, "--allow-simulated",
                              "--replace", "re-measured on 0.20.1", "--n-resamples", "500")
    assert code == 0, stderr
    manifest = yaml.safe_load((out / "manifest.yaml").read_text())
    (record,) = manifest["curves"]["mm3_fixture"]["provenance"]["replacements"]
    assert record["reason"] == "re-measured on 0.20.1"
    assert record["cells"]["thinking_on K=1"].startswith("1.79 -> ")


def test_simulated_run_is_refused(run_cli, tmp_path):
    run = simulate_run([0.8, 0.7], [1, 2], rng=3, n_requests=10, steps_per_request=50,
                       identity={"curve": "sim"})
    run.write(tmp_path / "sim", artifact="requests")
    code, stdout, stderr = run_cli("fit", tmp_path / "sim", "--golden-dir", tmp_path / "g")
    assert (code, stdout) == (1, "")
    assert stderr.startswith(f"error: {tmp_path / 'sim'}: the run is simulated")
    assert not (tmp_path / "g").exists()


def test_missing_cells_are_refused(run_cli, tmp_path):
    gap = tmp_path / "results"
    gap.mkdir()
    for k in (1, 3):
        shutil.copy(RESULTS / f"server_on_mtp{k}.log", gap)
    code, stdout, stderr = run_cli("fit", gap, *IDENTITY, "--golden-dir", tmp_path / "g")
    assert (code, stdout) == (2, "")
    assert stderr == (f"error: {gap}: run is missing cells: thinking on has K=1..3 but no "
                      "K=2; list every cell in run.yaml\n")
    assert not (tmp_path / "g").exists()


def test_k_disagreeing_with_the_manifest_is_refused(run_cli, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(RESULTS / "server_on_mtp3.log", run)
    (run / "run.yaml").write_text(
        "run: r\nmodel: m\ncurve: c\nmethod: eagle3\ndraft: [o/d]\n"
        "cells:\n  - {thinking: 'on', k: 2, files: [server_on_mtp3.log]}\n")
    code, stdout, stderr = run_cli("fit", run, "--golden-dir", tmp_path / "g")
    assert (code, stdout) == (2, "")
    assert stderr.startswith(f"error: {run / 'server_on_mtp3.log'}:2: per-position list has 3 "
                             "entries but the server runs num_speculative_tokens=2")
    assert not (tmp_path / "g").exists()


def test_identity_conflict_between_runs(run_cli, tmp_path):
    for name, model in (("a", "model-a"), ("b", "model-b")):
        simulate_run([0.8], [1], rng=1, n_requests=5, steps_per_request=20,
                     identity={"model": model, "curve": "c"}).write(tmp_path / name,
                                                                     artifact="requests")
    code, _, stderr = run_cli("fit", tmp_path / "a", tmp_path / "b", "--golden-dir", tmp_path / "g",
                              "--allow-simulated")
    assert code == 2
    assert stderr == (f"error: {tmp_path / 'b'}: identity conflict: model is 'model-a' in "
                      f"{tmp_path / 'a'} but 'model-b' here\n")


def test_summary_markdown(run_cli, tmp_path):
    md = tmp_path / "summary.md"
    code, _, _ = run_cli("fit", RESULTS, *IDENTITY, "--golden-dir", tmp_path / "g", "--n-resamples",
                         "500", "--summary-md", md)
    assert code == 0
    text = md.read_text()
    assert text.startswith("## goldenal fit: `mm3_fixture`\n")
    assert "| on | 3 | 2.67 |" in text
    assert "### How the intervals were computed" in text
    assert "- **none**: no interval: fewer than 10 independent units" in text


def test_help_has_an_example(run_cli):
    code, stdout, _ = run_cli("fit", "--help")
    assert code == 0 and "goldenal fit measurements/" in stdout


def test_server_config_contradicting_the_manifest_is_refused(run_cli, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    start = ("(APIServer pid=2741) INFO 11-30 04:59:00 [utils.py:253] non-default args: "
             "{'model': 'MiniMaxAI/MiniMax-M3', 'speculative_config': {'method': 'mtp', "
             "'num_speculative_tokens': 3}}\n")
    (run / "server_on_mtp3.log").write_text(start + (RESULTS / "server_on_mtp3.log").read_text())
    (run / "run.yaml").write_text(
        "run: r\nmodel: m\ncurve: c\nmethod: eagle3\ndraft: [o/d]\n"
        "cells:\n  - {thinking: 'on', k: 3, files: [server_on_mtp3.log]}\n")
    code, stdout, stderr = run_cli("fit", run, "--golden-dir", tmp_path / "g")
    assert (code, stdout) == (2, "")
    assert stderr == (f"error: {run / 'server_on_mtp3.log'}:1: server started with method "
                      "'mtp', the run says 'eagle3'; correct run.yaml (or the flags)\n")
    assert not (tmp_path / "g").exists()


def _tree(directory):
    return sorted(str(p.relative_to(directory)) for p in Path(directory).rglob("*"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_without_out_the_curve_is_printed_and_nothing_written(run_cli, tmp_path, monkeypatch,
                                                              fmt):
    run = tmp_path / "run"
    shutil.copytree(RESULTS, run)
    before = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run_cli("fit", run, *IDENTITY, "--n-resamples", "500",
                                   "--format", fmt)
    assert code == 0
    # log windows alone: the three cells warn that they have no interval
    assert stderr.splitlines() == [f"warning: cell thinking on, K={k}: no interval: {NO_SPAN}"
                                   for k in (1, 2, 3)] + [
        "note: nothing written; --golden-dir DIR commits the curve to a golden directory"]
    assert _tree(tmp_path) == before
    if fmt == "json":
        doc = json.loads(stdout)
        assert (doc["curve"], doc["files"]) == ("mm3_fixture", [])
        assert [c["value"] for c in doc["cells"]] == ["1.79", "2.36", "2.67"]
    else:
        lines = stdout.splitlines()
        assert lines[0] == "curve mm3_fixture: 3 cells"
        assert [line.split()[:3] for line in lines[2:5]] == [["on", "1", "1.79"],
                                                              ["on", "2", "2.36"],
                                                              ["on", "3", "2.67"]]
        assert not any(line.startswith("wrote ") for line in lines)


def test_without_out_a_simulated_run_is_still_refused(run_cli, tmp_path):
    run = simulate_run([0.8, 0.7], [1, 2], rng=3, n_requests=10, steps_per_request=50,
                       identity={"curve": "sim"})
    run.write(tmp_path / "sim", artifact="requests")
    code, stdout, stderr = run_cli("fit", tmp_path / "sim")
    assert (code, stdout) == (1, "")
    assert "the run is simulated" in stderr


def test_log_windows_get_batches_longer_than_a_request_when_the_cap_is_known(run_cli, tmp_path):
    """run.yaml gives the output cap and concurrency: batches of the longest request span."""
    run = simulate_run([0.8, 0.7], [1, 2], rng=5, n_requests=400, steps_per_request=100,
                       concurrency=4, step_seconds=0.05)
    run.write(tmp_path / "run")
    manifest = tmp_path / "run" / "run.yaml"
    doc = yaml.safe_load(manifest.read_text())
    doc["dataset"]["output_len"] = 400
    doc["concurrency"] = 4
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, stdout, stderr = run_cli("fit", tmp_path / "run", "--golden-dir", tmp_path / "g",
                                   "--allow-simulated", "--n-resamples", "500",
                                   "--format", "json")
    assert (code, stderr) == (0, "")
    cells = json.loads(stdout)["cells"]
    assert [c["interval"]["method"] for c in cells] == ["batch-means", "batch-means"]
    dist = json.loads((tmp_path / "g" / "simulated_chain.distribution.json").read_text())
    # 4 requests share each window's ~800 steps: 200 steps per request and window, so a
    # 400-token request spans at most 2 windows; 50 windows make 25 batches
    assert [c["n_clusters"] for c in dist["cells"]] == [25, 25]
    assert dist["cells"][0]["units"] == "batches"
    assert "batches of 2 windows, at least the longest request's span" in \
        dist["cells"][0]["notes"]


def test_fit_out_is_a_deprecated_alias_of_golden_dir(run_cli, tmp_path):
    code, stdout, stderr = run_cli("fit", RESULTS, *IDENTITY, "--out", tmp_path / "g",
                                   "--n-resamples", "200")
    assert code == 0
    assert stderr.splitlines()[0] == "warning: --out is deprecated here; use --golden-dir"
    assert stdout.endswith(f"wrote {tmp_path / 'g' / 'index.tsv'}\n")
    assert (tmp_path / "g" / "mm3_fixture.yaml").exists()


def _request_run(tmp_path, output_len):
    run = simulate_run({"on": [0.9, 0.8, 0.7]}, [1, 2], rng=1, n_requests=20,
                       steps_per_request=100,
                       identity={"model": "m", "curve": "c", "method": "eagle3"})
    run.write(tmp_path / "r", artifact="requests")
    path = tmp_path / "r" / "run.yaml"
    path.write_text(path.read_text().replace("output_len: 4096", f"output_len: {output_len}"))
    return tmp_path / "r"


def test_requests_longer_than_the_stated_cap_refuse_the_interval(run_cli, tmp_path):
    run = _request_run(tmp_path, 100)
    code, stdout, stderr = run_cli("fit", run, "--allow-simulated", "--n-resamples", "500",
                                   "--format", "json")
    assert code == 0
    doc = json.loads(stdout)
    cap = doc["cells"][0]["checks"]["output_cap"]
    assert cap["status"] == "failed"
    assert re.fullmatch(r"request \S+ \(\S+requests_on_k1\.jsonl\) produced \d+ tokens, more "
                        r"than run\.yaml's dataset\.output_len 100 \(plus the 1 drafts a last "
                        r"step may overshoot\): the stated cap is wrong; correct "
                        r"dataset\.output_len", cap["reason"])
    assert doc["cells"][0]["interval"]["method"] == "none"
    assert "dataset.output_len 100" in stderr.splitlines()[0]
    # the cross-K check reads the requests themselves, not the cap: it still runs
    assert doc["checks"]["cross_k"]["on"]["status"] == "done"


def test_request_run_states_every_check_it_did(run_cli, tmp_path):
    run = _request_run(tmp_path, 4096)
    code, stdout, _ = run_cli("fit", run, "--allow-simulated", "--n-resamples", "500",
                              "--format", "json")
    assert code == 0
    doc = json.loads(stdout)
    assert doc["checks"] == {"cross_k": {"on": {
        "status": "done", "reason": "2 cells compared, none beyond the margin"}}}
    checks = doc["cells"][1]["checks"]
    assert checks["interval"] == {"status": "done", "reason": None}
    assert checks["cross_k"] == {"status": "done", "reason": None}
    assert checks["output_cap"]["status"] == "done"
    assert re.fullmatch(r"longest request \d+ tokens, within dataset\.output_len 4096 \(\+2\)",
                        checks["output_cap"]["reason"])


def test_the_zero_inflated_interval_is_named_with_its_coverage(run_cli, tmp_path):
    """Nine requests short of K among 51 accepting every draft: fit says which interval."""
    from conftest import write_request_run
    from test_fit_cell import FULL, SHORT

    run = write_request_run(tmp_path / "mixed", FULL + SHORT, 3)
    code, stdout, stderr = run_cli("fit", run, "--n-resamples", "999", "--seed", "0")
    assert (code, stderr) == (0, "note: nothing written; --golden-dir DIR commits the curve "
                                 "to a golden directory\n")
    assert stdout.splitlines()[2] == ("on        3   3.21  [1.636, 3.746]      bootstrap        "
                                      " 8130")
    assert ("interval, thinking on, K=3: 9 requests short of K among 51 accepting every "
            "draft: the zero-inflated interval (their share, deficit per step and lengths "
            "combined), 94-98% coverage at 95% in the mixed study of docs/statistics.md; it "
            "rests on those 9: `goldenal plan` gives the requests for 10") in stdout.splitlines()
    code, stdout, _ = run_cli("fit", run, "--n-resamples", "999", "--seed", "0",
                              "--format", "json")
    (cell,) = json.loads(stdout)["cells"]
    assert cell["checks"]["interval"]["status"] == "done"
    assert cell["checks"]["interval"]["reason"].startswith("9 requests short of K among 51")
