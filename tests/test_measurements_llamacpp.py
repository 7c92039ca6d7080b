"""The committed real llama.cpp run (measurements/llamacpp-tiny-random-2026-12/), read as it is.

``goldenal measure`` wrote it against a real llama-server doing draft-model
speculative decoding with a tiny random target and draft (``make.sh`` beside
it).  No server is needed here: the expected counts are read from the raw
files with plain JSON and a regular expression (not goldenal's readers), and
``ingest``, ``fit``, ``diff`` and ``verify`` must give exactly them.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

import goldenal
from conftest import goldenal_cmd
from goldenal.measuring.measure import load_prompts

RUN = Path(__file__).resolve().parents[1] / "measurements" / "llamacpp-tiny-random-2026-12"
# (steps, accepted, accepted per position) per K, as the server counted them
CELLS = {1: (2016, 1038, [1038]), 2: (1733, 1319, [873, 446]), 3: (1624, 1430, [808, 392, 230])}
COUNTER = re.compile(r"^llamacpp:spec_decode_num_(drafts|accepted_tokens|draft_tokens)_total "
                     r"(\d+)$", re.M)


def records(k):
    return [json.loads(line) for line in (RUN / f"requests_off_k{k}.jsonl").read_text()
            .splitlines()]


def scrape_delta(k):
    before, after = ({name: int(v) for name, v in COUNTER.findall(
        (RUN / f"metrics_off_k{k}_{when}.prom").read_text())} for when in ("before", "after"))
    return {name: after[name] - before.get(name, 0) for name in after}


@pytest.mark.parametrize("k", sorted(CELLS))
def test_raw_files_agree_with_each_other(k):
    steps, accepted, per_pos = CELLS[k]
    rows = records(k)
    assert len(rows) == 12 and all(r["status"] == "ok" and r["k"] == k for r in rows)
    # the requests' counter deltas tile the cell's window
    delta = scrape_delta(k)
    assert (delta["drafts"], delta["accepted_tokens"]) == (steps, accepted)
    assert sum(r["drafts"] for r in rows) == steps
    assert sum(r["accepted"] for r in rows) == accepted
    assert delta["draft_tokens"] == sum(r["draft_tokens"] for r in rows)
    assert [sum(r["accepted_per_position"][i] for r in rows) for i in range(k)] == per_pos
    # and every request's counters are what the server said in its own response
    for r in rows:
        assert (r["draft_tokens"], r["accepted"]) == (r["timings"]["draft_n"],
                                                      r["timings"]["draft_n_accepted"])
        assert r["completion_tokens"] == 256


def test_ingest_reads_the_exact_counts(run_cli):
    run = goldenal.load_run(RUN)
    assert run.identity["model"] == "goldenal-tiny-random"
    assert run.identity["engine"] == {"name": "llamacpp", "version": "b1-0c1e570"}
    assert run.warnings == () and run.complete
    for cell in run.summary().cells:
        steps, accepted, per_pos = CELLS[cell.k]
        assert cell.cell == ("off", cell.k) and cell.engine == "llamacpp"
        assert (cell.steps, cell.accepted, list(cell.accepted_per_position)) == (
            steps, accepted, per_pos)
        assert (cell.windows, cell.formats) == (12, ("measure-requests",))
    code, out, err = run_cli("ingest", RUN)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "cell thinking off K=1: AL 1.5149 pooled over 2016 steps, 12 window(s)",
        "cell thinking off K=2: AL 1.7611 pooled over 1733 steps, 12 window(s)",
        "cell thinking off K=3: AL 1.8805 pooled over 1624 steps, 12 window(s)",
        "36 windows from 3 files; --windows lists each"]


def test_fit_refuses_to_commit_the_run(tmp_path):
    """run.yaml says not_golden: fit --golden-dir writes no golden directory from it."""
    reason = " ".join(yaml.safe_load((RUN / "run.yaml").read_text())["not_golden"].split())
    p = subprocess.run([*goldenal_cmd(), "fit", str(RUN), "--golden-dir", str(tmp_path / "g")],
                       capture_output=True, text=True, timeout=300)
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr == (f"error: {RUN}: the run is not golden material (not_golden: {reason}); "
                        "use --allow-not-golden to write it to a scratch directory\n")
    assert not (tmp_path / "g").exists()


def test_fit_gives_al_from_the_counts_with_request_intervals(run_cli, tmp_path):
    code, out, err = run_cli("fit", RUN, "--golden-dir", tmp_path / "g", "--allow-not-golden",
                             "--seed", "1", "--format", "json")
    assert code == 0, err
    cells = json.loads(out)["cells"]
    assert [(c["k"], c["value"], c["n_steps"]) for c in cells] == [
        (1, "1.51", 2016), (2, "1.76", 1733), (3, "1.88", 1624)]
    for c in cells:
        steps, accepted, _ = CELLS[c["k"]]
        assert c["estimate"] == 1 + accepted / steps
        assert c["interval"]["method"] == "bootstrap"
        assert c["interval"]["low"] < c["estimate"] < c["interval"]["high"]
    stored = json.loads((tmp_path / "g" / "goldenal_tiny_random_draft.distribution.json")
                        .read_text())["cells"]
    assert [(c["k"], c["accepted"], c["n_clusters"], c["per_position"]["accepted_per_position"])
            for c in stored] == [(k, a, 12, p) for k, (_, a, p) in sorted(CELLS.items())]
    # diff reads the run against the curve fitted from it: the deltas are the rounding of
    # the committed two-decimal values, inside every interval
    code, out, err = run_cli("diff", tmp_path / "g" / "goldenal_tiny_random_draft.yaml", RUN,
                             "--seed", "1", "--format", "json")
    assert code == 0, err
    diffed = json.loads(out)
    assert diffed["outside"] == 0
    for c, fitted in zip(diffed["cells"], cells):
        assert (c["k"], c["a"], c["b"], c["status"]) == (fitted["k"], fitted["value"],
                                                         fitted["value"], "inside")
        assert c["delta"] == pytest.approx(fitted["estimate"] - float(fitted["value"]),
                                           abs=1e-12)


def test_verify_sees_real_acceptance_not_a_pinned_knob(run_cli):
    code, out, _ = run_cli("verify", RUN, "--target", "1.88", "--k", "3", "--thinking", "off")
    assert code == 1
    assert out.startswith("missed: realized AL 1.8805 vs target 1.88 (tolerance ")
    assert "per-position survival [0.498, 0.241, 0.142] is not the min-variance schedule" in out


def test_the_run_is_labelled_and_small():
    head = (RUN / "run.yaml").read_text().splitlines()[0]
    assert head.startswith("# TINY RANDOM MODEL") and "NOT a golden curve" in (
        RUN / "run.yaml").read_text()
    assert "not a golden curve" in (RUN / "README.md").read_text()
    run = goldenal.load_run(RUN)
    assert run.identity["simulated"] is False
    assert "TINY RANDOM MODEL" in run.identity["note"]
    assert run.identity["not_golden"] == (
        "TINY RANDOM MODEL: seeded random weights (512-piece vocabulary, two blocks of width "
        "64); its AL values describe those weights only and are NOT a golden curve")
    # make.sh writes the same mark when it re-makes the run
    assert '--not-golden "$NOT_GOLDEN"' in (RUN / "make.sh").read_text()
    # the committed prompt set is the one measured (make.sh and the run agree)
    ids = [p.id for p in load_prompts(RUN / "prompts.jsonl")]
    assert run.identity["measure"]["workload"]["requests"] == len(ids) == 12
    assert all([r["prompt"] for r in records(k)] == ids for k in CELLS)
    files = [p for p in RUN.iterdir()]
    assert not [p for p in files if p.suffix == ".gguf"]
    assert sum(p.stat().st_size for p in files) < 200_000
