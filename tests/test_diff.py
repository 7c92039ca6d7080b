"""`goldenal diff`: cell-by-cell deltas judged against the uncertainty."""

import json
from pathlib import Path

import pytest

from goldenal.stats.diff import diff_curves
from goldenal.stats.report import diff_markdown
from goldenal.testing.simulate import simulate_run

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = ROOT / "golden_al_distribution"
RESULTS = Path(__file__).resolve().parent / "data" / "fit" / "inferencex_results"
IDENTITY = ["--model", "minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3",
            "--method", "eagle3", "--curve-id", "mm3_fixture"]


@pytest.fixture
def sim_run(tmp_path):
    """A simulated run with per-request records (K = 1..3): intervals over requests."""
    run = simulate_run([0.8, 0.7, 0.6], [1, 2, 3], rng=17, n_requests=60,
                       steps_per_request=200,
                       identity={"model": "minimax-m3", "curve": "mm3_fixture",
                                 "method": "eagle3", "draft": ["Inferact/MiniMax-M3-EAGLE3"]})
    run.write(tmp_path / "run", artifact="requests")
    return tmp_path / "run"


@pytest.fixture
def fitted_dir(run_cli, tmp_path, sim_run):
    out = tmp_path / "golden"
    code, _, stderr = run_cli("fit", sim_run, "--golden-dir", out, "--n-resamples", "2000",
                              "--allow-simulated")
    assert code == 0, stderr
    return out


def _edited_copy(src, dest, old, new):
    text = src.read_text()
    assert old in text
    dest.write_text(text.replace(old, new, 1))
    return dest


def test_two_committed_curves_have_no_interval(run_cli, tmp_path):
    edited = _edited_copy(PACKAGED / "minimaxm3_eagle3.yaml", tmp_path / "edited.yaml",
                          "    6: 3.57", "    6: 3.70")
    code, stdout, stderr = run_cli("diff", "minimaxm3_eagle3", edited,
                                   "--golden-dir", PACKAGED)
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[:3] == ["A: minimaxm3_eagle3 (committed)", f"B: {edited} (committed)",
                         "thinking  K      A      B      B-A     ±95%       z  verdict"]
    assert lines[3] == "on        1   1.78   1.78   +0.000        -       -  no interval"
    assert "off       6   3.57   3.70   +0.130        -       -  no interval" in lines
    assert lines[-1] == ("0 of 0 cells with an interval differ beyond it; 16 cells have no "
                         "interval on either side.")


def test_same_data_fitted_and_committed_agree(fitted_dir, run_cli, sim_run):
    code, stdout, stderr = run_cli("diff", "mm3_fixture", sim_run, "--golden-dir", fitted_dir,
                                   "--allow-simulated", "--n-resamples", "500")
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[:2] == ["A: mm3_fixture (committed)", f"B: {sim_run} (fitted)"]
    assert all(line.split()[-1] == "inside" for line in lines[3:6])
    assert lines[-1] == "0 of 3 cells with an interval differ beyond it."


def test_log_only_data_has_no_interval_to_judge(run_cli, tmp_path):
    out = tmp_path / "golden"
    code, _, _ = run_cli("fit", RESULTS, *IDENTITY, "--golden-dir", out, "--n-resamples", "200")
    assert code == 0
    code, stdout, stderr = run_cli("diff", "mm3_fixture", RESULTS, "--golden-dir", out,
                                   *IDENTITY, "--n-resamples", "200")
    assert code == 0 and stderr.count("no interval: 33 log windows") == 3
    assert stdout.splitlines()[-1] == ("0 of 0 cells with an interval differ beyond it; 3 "
                                       "cells have no interval on either side.")


def test_shifted_cell_is_outside(fitted_dir, run_cli, tmp_path):
    committed = (fitted_dir / "mm3_fixture.yaml").read_text()
    assert "    3: 2.69\n" in committed
    moved = _edited_copy(fitted_dir / "mm3_fixture.yaml", tmp_path / "moved.yaml",
                         "    3: 2.69", "    3: 2.89")
    code, stdout, stderr = run_cli("diff", fitted_dir / "mm3_fixture.yaml", moved,
                                   "--summary-md", tmp_path / "report.md")
    assert (code, stderr) == (1, "")
    rows = {line.split()[1]: line for line in stdout.splitlines()[3:6]}
    assert rows["1"].endswith("inside") and rows["2"].endswith("inside")
    assert rows["3"].split()[:5] == ["on", "3", "2.69", "2.89", "+0.200"]
    assert rows["3"].endswith("outside")
    assert stdout.splitlines()[-1] == "1 of 3 cells with an interval differ beyond it."
    md = (tmp_path / "report.md").read_text()
    assert md.startswith(f"## goldenal diff: `{fitted_dir / 'mm3_fixture.yaml'}` → "
                         f"`{moved}`\n")
    assert "| on | 3 | 2.69 | 2.89 | +0.200 |" in md and "| **outside** |" in md
    assert "### Flagged cells\n\n- thinking on, K=3: 2.69 → 2.89 (+0.200, " in md
    assert "- **bootstrap**: studentized bootstrap over requests" in md
    code, _, _ = run_cli("diff", fitted_dir / "mm3_fixture.yaml", moved, "--exit-zero")
    assert code == 0
    code, stdout, _ = run_cli("diff", fitted_dir / "mm3_fixture.yaml", moved, "--format",
                              "json")
    doc = json.loads(stdout)
    assert doc["outside"] == 1 and doc["cells"][2]["status"] == "outside"
    assert doc["cells"][2]["a_method"] == "bootstrap" and doc["cells"][2]["b_method"] is None


def test_cells_only_on_one_side(tmp_path):
    shorter = tmp_path / "short.yaml"
    shorter.write_text("minimax-m3:\n  thinking_on:\n    1: 1.78\n    2: 2.38\n")
    result = diff_curves(PACKAGED / "minimaxm3_eagle3.yaml", shorter)
    status = {(r.thinking, r.k): r.status for r in result.rows}
    assert status[("on", 1)] == "no interval" and status[("on", 3)] == "only in A"
    assert status[("off", 1)] == "only in A"
    assert repr(result).endswith("16 cells, 0 outside the uncertainty>")
    frame = result.to_frame()
    assert frame.loc[("on", 2), "delta"] == 0.0
    assert "### Flagged cells\n\nNone" in diff_markdown(result)


def test_unknown_curve_id(run_cli):
    code, stdout, stderr = run_cli("diff", "nope", "minimaxm3_eagle3", "--golden-dir",
                                   PACKAGED)
    assert (code, stdout) == (1, "")
    assert stderr.startswith("error: 'nope' is neither a file, a run directory nor a curve id")


def test_fitted_objects_compare_directly():
    from goldenal.stats import fit
    from goldenal.testing.simulate import simulate_run

    a = simulate_run([0.8, 0.7], [1, 2], rng=1, n_requests=40, steps_per_request=200)
    b = simulate_run([0.8, 0.5], [1, 2], rng=2, n_requests=40, steps_per_request=200)
    fa = fit(a.observations("request"), n_resamples=999, rng=0, **a.identity)
    fb = fit(b.observations("request"), n_resamples=999, rng=0, **b.identity)
    result = diff_curves(fa, fb)
    status = {r.k: r.status for r in result.rows}
    assert status == {1: "inside", 2: "outside"}
    row = result.rows[1]
    assert row.z == pytest.approx(row.delta / row.se) and row.z < -3


def test_plot_delegates_to_goldenal_plot(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edited = _edited_copy(PACKAGED / "minimaxm3_eagle3.yaml", tmp_path / "edited.yaml",
                          "    6: 3.57", "    6: 3.70")
    try:
        fig, ax = plt.subplots()
        assert diff_curves(PACKAGED / "minimaxm3_eagle3.yaml", edited).plot(ax=ax) is not None
    finally:
        plt.close("all")


def test_a_fitted_run_keeps_its_name_in_labels_titles_and_reprs():
    import warnings

    import goldenal
    from goldenal.plot import _diff_title
    from goldenal.stats.report import fit_markdown

    run_dir = Path(__file__).resolve().parents[1] / "measurements" / "minimaxm3-eagle3-sim-2026-11"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = goldenal.fit(goldenal.load_run(run_dir), n_resamples=200, rng=0)
    assert (fitted.curve_id, fitted.run_id, fitted.name) == (
        "minimaxm3_eagle3", "minimaxm3-eagle3-sim-2026-11", "minimaxm3-eagle3-sim-2026-11")
    assert repr(fitted).startswith(
        "<CurveFit minimaxm3_eagle3 from run minimaxm3-eagle3-sim-2026-11: 12 cells, ")
    assert fit_markdown(fitted).startswith(
        "## goldenal fit: `minimaxm3_eagle3` from run `minimaxm3-eagle3-sim-2026-11`\n")
    result = diff_curves("minimaxm3_eagle3", fitted)
    assert (result.b.label, result.b.kind, result.b.curve_id) == (
        "minimaxm3-eagle3-sim-2026-11", "fitted", "minimaxm3_eagle3")
    assert repr(result).startswith(
        "<CurveDiff minimaxm3_eagle3 vs minimaxm3-eagle3-sim-2026-11 (fitted): 16 cells, ")
    assert _diff_title(result) == ("minimaxm3-eagle3-sim-2026-11 (fitted) minus "
                                   "minimaxm3_eagle3, per cell")
    assert diff_markdown(result).startswith(
        "## goldenal diff: `minimaxm3_eagle3` → `minimaxm3-eagle3-sim-2026-11`")
