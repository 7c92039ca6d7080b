"""Measurement runs: run.yaml manifests, InferenceX collector directories, the simulator."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from goldenal.core.errors import ParseError
from goldenal.readers import MeasurementRun, load_run

DATA = Path(__file__).parent / "data" / "ingest"


def test_manifest_run_cells_identity_and_config_warnings():
    run = load_run(DATA / "run_manifest")
    assert isinstance(run, MeasurementRun) and run.layout == "manifest"
    assert sorted(run.cells) == [("off", 5), ("on", 3)]
    assert run.identity["run"] == "minimaxm3-eagle3-fixture"
    assert run.identity["draft"] == ["Inferact/MiniMax-M3-EAGLE3"]
    assert "cells" not in run.identity
    on = run.cells[("on", 3)]
    assert [(o.drafts, o.accepted, o.thinking) for o in on] == [(20000, 36600, "on")]
    off = run.cells[("off", 5)]
    assert [(o.drafts, o.accepted, o.thinking) for o in off] == [(331, 632, "off"),
                                                                 (337, 561, "off")]
    where = f"{DATA / 'run_manifest' / 'server_off_k5.log'}:3"
    assert run.warnings == (
        f"{where}: server started with method 'mtp', the run says 'eagle3'",
        f"{where}: server ran with synthetic acceptance (2.8); its AL is an input, not a "
        "measurement of the draft head")
    summary = {c.cell: (round(c.acceptance_length, 6), c.steps) for c in run.summary()}
    assert summary == {("off", 5): (round(1 + 1193 / 668, 6), 668), ("on", 3): (2.83, 20000)}
    assert run.complete


def test_manifest_identity_override_warns(tmp_path):
    shutil.copytree(DATA / "run_manifest", tmp_path / "r")
    run = load_run(tmp_path / "r", model="other-model", k=3)
    assert run.identity["model"] == "other-model"
    assert sorted(run.cells) == [("on", 3)]
    assert run.warnings[0] == ("model: 'other-model' given, run.yaml says 'minimax-m3'; "
                               "using the given value")


def test_collector_directory_identity_from_flags():
    run = load_run(DATA / "collector", model="minimax-m3", draft="Inferact/MiniMax-M3-EAGLE3",
                   method="eagle3", variant=["draft_sample_method=probabilistic"],
                   curve_id="minimaxm3_eagle3")
    assert run.layout == "collector"
    assert run.identity == {"engine": {"name": "vllm"}, "model": "minimax-m3",
                            "draft": ["Inferact/MiniMax-M3-EAGLE3"], "method": "eagle3",
                            "variant": {"draft_sample_method": "probabilistic"},
                            "curve": "minimaxm3_eagle3"}
    assert sorted(run.cells) == [("off", 2), ("on", 5)]
    # logs are used; the K=5 bench JSON holds the same steps and agrees
    assert [o.format for o in run.cells[("on", 5)]] == ["vllm-log-v1", "vllm-log-v1"]
    assert run.warnings == ()
    # the K=2 bench JSON without spec keys is only a note
    assert run.complete
    assert any("no spec_decode_* counts" in p.message and not p.refused for p in run.problems)


def test_collector_config_disagreement_reported(tmp_path):
    d = tmp_path / "c"
    shutil.copytree(DATA / "collector", d)
    (d / "server_on_mtp5.log").rename(d / "server_on_mtp3.log")
    run = load_run(d, method="mtp", draft="Inferact/Other-Draft")
    msgs = [w.split(": ", 1)[1] for w in run.warnings if "server_on_mtp3.log" in w]
    assert "server started with num_speculative_tokens=5, the cell says K=3 (thinking on)" in msgs
    assert "server started with method 'eagle3', the run says 'mtp'" in msgs
    assert ("server loaded draft '/workspace/draft_models/MiniMax-M3-EAGLE3', the run names "
            "Inferact/Other-Draft") in msgs
    # windows of K=5 do not belong to the K=3 cell
    assert run.cells[("on", 3)] == ()


@pytest.mark.parametrize("text, message", [
    ("cells: []\n", "non-empty `cells` list"),
    ("cells:\n  - {thinking: maybe, k: 3, files: [a.log]}\n", "thinking must be 'on' or 'off'"),
    ("cells:\n  - {thinking: 'on', k: 0, files: [a.log]}\n", "k must be a positive integer"),
    ("cells:\n  - {thinking: 'on', k: 3, files: [missing.log]}\n", "no such file 'missing.log'"),
    ("cells: [\n", "not valid YAML"),
    # a repeated key is refused: a YAML loader would keep the last one silently
    ("cells: []\ncells:\n  - {thinking: on, k: 3, files: [a.log]}\n",
     r"run.yaml:2: duplicate key 'cells' \(first at line 1\)"),
    # regression (atheris): a collection as a key raised TypeError (unhashable list)
    ("model: m\n? {temperature: 1.0}\n: x\n", r"run.yaml:2: run.yaml keys are names, got a "
                                              "collection"),
])
def test_bad_manifests(tmp_path, text, message):
    (tmp_path / "run.yaml").write_text(text)
    with pytest.raises(ParseError, match=message):
        load_run(tmp_path)


def test_not_a_run(tmp_path):
    with pytest.raises(ParseError, match="no run.yaml and no collector files"):
        load_run(tmp_path)


@pytest.mark.parametrize("artifact", ["log", "prometheus", "requests"])
def test_simulator_round_trip_is_exact(tmp_path, artifact):
    """The simulator's rendered logs, scrapes and responses read back to its exact counts."""
    from goldenal.testing.simulate import simulate_run

    sim = simulate_run({"on": [0.8, 0.6, 0.5], "off": [0.85, 0.65, 0.5]}, [1, 3],
                       identity={"run": "sim", "model": "m"}, rng=np.random.default_rng(7))
    sim.write(tmp_path / artifact, artifact=artifact)
    run = load_run(tmp_path / artifact)
    assert run.complete and run.warnings == ()
    for cell in run.summary():
        truth = sim.cells[cell.cell]
        n, a, c = truth._counts()
        assert (cell.steps, cell.accepted) == (int(n), int(a))
        assert cell.acceptance_length == truth.pooled_acceptance_length
        if artifact != "log" or cell.k == 1:
            assert cell.accepted_per_position == tuple(int(x) for x in c)


def test_run_to_frame():
    pytest.importorskip("pandas")
    frame = load_run(DATA / "run_manifest").to_frame()
    assert list(frame["thinking"]) == ["off", "off", "on"]
    assert list(frame["drafts"]) == [331, 337, 20000]


def test_manifest_pair_in_listed_order_whatever_the_names(tmp_path):
    shutil.copy(DATA / "prom_dp2_k3_before.prom", tmp_path / "scrape-1.prom")
    shutil.copy(DATA / "prom_dp2_k3_after.prom", tmp_path / "scrape-2.prom")
    (tmp_path / "run.yaml").write_text(
        "run: r\ncells:\n  - {thinking: 'on', k: 3, files: [scrape-1.prom, scrape-2.prom]}\n")
    (o,) = load_run(tmp_path).cells[("on", 3)]
    assert (o.drafts, o.accepted, o.extra["window"]) == (20000, 36600, "between scrapes")


def test_collector_bench_result_without_json_suffix(tmp_path):
    shutil.copy(DATA / "collector" / "speedbench_on_mtp5.json", tmp_path / "speedbench_on_mtp5")
    run = load_run(tmp_path)
    (o,) = run.cells[("on", 5)]
    assert (o.format, o.drafts, o.accepted) == ("vllm-bench-json", 668, 1193)


def test_a_llamacpp_start_up_line_is_checked_like_any_engine(tmp_path):
    """The run checks read the readers' engine-neutral start-up facts: llama-server's
    resolved synthetic acceptance line (K=3) is held against a K=4 cell."""
    d = tmp_path / "r"
    d.mkdir()
    shutil.copy(DATA / "llamacpp" / "server_rates_trace.log", d / "server.log")
    (d / "run.yaml").write_text(
        "run: tiny\nsimulated: false\nmodel: tiny\nmethod: draft\ndraft: [org/tiny-draft]\n"
        "engine: {name: llamacpp}\ncells:\n  - {thinking: \"off\", k: 4, files: [server.log]}\n")
    where = f"{d / 'server.log'}:266"
    assert load_run(d).warnings[-2:] == (
        f"{where}: server started with --spec-draft-n-max=3, the cell says K=4 (thinking off)",
        f"{where}: server ran with synthetic acceptance (2.83); its AL is an input, not a "
        "measurement of the draft head")
