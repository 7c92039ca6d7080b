"""goldenal plan: requests (or runs) per cell for an interval of a stated half-width."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t

from goldenal.stats import fit_cell
from goldenal.stats.plan import plan_cell, plan_measurement, units_needed
from goldenal.core.observation import Observation

from conftest import DATA, ROOT

PILOT = ROOT / "measurements" / "minimaxm3-eagle3-sim-2026-11"  # 40 requests per cell
LOGS = DATA / "fit" / "inferencex_results"  # log windows only


def test_units_needed_is_the_smallest_count_reaching_the_half_width():
    # s / mean steps = 0.5: m = 387 gives t(386) 0.5 / sqrt(387) <= 0.05 < the same at 386
    m, width = units_needed(50.0, 100.0, 0.05)
    assert m == 387
    assert width == pytest.approx(t.ppf(0.975, 386) * 0.5 / math.sqrt(387), rel=1e-12)
    assert width <= 0.05 < t.ppf(0.975, 385) * 0.5 / math.sqrt(386)
    # split into 10 runs: t with 9 degrees of freedom, (2.262 / 1.966)^2 = 1.32 times as many
    m, width = units_needed(50.0, 100.0, 0.05, runs=10)
    assert m == 512 and width <= 0.05 < t.ppf(0.975, 9) * 0.5 / math.sqrt(511)
    # never fewer than 10 units, however narrow the spread
    assert units_needed(1.0, 100.0, 0.05)[0] == 10


def _requests(rows, k):
    return [Observation("req.jsonl", None, "vllm", "test", k=k, drafts=n, draft_tokens=n * k,
                        accepted=a, request=f"r{i}") for i, (n, a) in enumerate(rows)]


def test_plan_cell_from_hand_worked_units():
    rows = [(100, 50), (100, 150), (100, 100), (100, 100)] * 3  # residuals +-50, 0, 0
    cell = fit_cell(_requests(rows, 2), k=2, rng=0, n_resamples=200)
    plan = plan_cell(cell, 0.05)
    # s^2 = 6 * 50^2 / 11, mean steps 100
    spread = math.sqrt(6 * 2500 / 11)
    assert (plan.units_needed, plan.planned_half_width) == units_needed(spread, 100.0, 0.05)
    assert plan.unit_kind == "requests" and plan.pilot_units == 12 and plan.reason is None


def test_a_pilot_without_spread_is_not_planned_from():
    rows = [(40 + r, 2 * (40 + r)) for r in range(12)]  # every draft accepted
    with pytest.warns(Warning):
        cell = fit_cell(_requests(rows, 2), k=2, rng=0, n_resamples=200)
    plan = plan_cell(cell, 0.05)
    assert plan.units_needed is None
    assert plan.reason == ("the pilot's units do not vary (e.g. every draft accepted): no "
                           "spread to plan from; measure requests that do")


def test_plan_validates_its_arguments():
    with pytest.raises(ValueError, match="`half_width` must be a positive number"):
        plan_measurement({}, half_width=0)
    with pytest.raises(ValueError, match="`runs` must be an integer >= 10"):
        plan_measurement({}, half_width=0.05, runs=9)


def test_plan_cli_text(run_cli):
    code, stdout, stderr = run_cli("plan", PILOT, "--half-width", "0.05")
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[0] == "plan: 95% interval of half-width 0.05 AL"
    assert lines[1] == ("thinking  K         pilot  half-width now            needed    gives")
    assert lines[2].split()[:3] == ["off", "1", "40"]
    assert len(lines) == 2 + 12 + 1
    assert lines[-1] == "needed: 265 requests per cell"


def test_plan_cli_json_with_runs(run_cli):
    code, stdout, _ = run_cli("plan", PILOT, "--half-width", "0.05", "--runs", "10",
                              "--format", "json")
    assert code == 0
    doc = json.loads(stdout)
    assert (doc["needed"], doc["units"], doc["runs"], doc["per_run"]) == (350, "requests", 10,
                                                                          35)
    on6 = doc["cells"][-1]
    assert (on6["thinking"], on6["k"], on6["units_needed"], on6["requests_per_run"]) == (
        "on", 6, 350, 35)
    assert on6["planned_half_width"] <= 0.05


def test_a_log_only_pilot_is_refused_with_the_way_forward(run_cli):
    code, stdout, stderr = run_cli("plan", LOGS, "--half-width", "0.05", "--model", "m",
                                   "--method", "eagle3")
    assert code == 1
    assert ("not planned: no independent units in the pilot (log windows or aggregate counts "
            "show no single request); measure a pilot with per-request records (goldenal "
            "measure), or 10 or more independent runs") in stdout
    assert stderr == ("error: no cell of the pilot can be planned from; measure a pilot with "
                      "per-request records (goldenal measure), see docs/statistics.md, "
                      "\"Planning a measurement\"\n")


def test_plan_cli_refuses_too_few_runs(run_cli):
    code, _, stderr = run_cli("plan", PILOT, "--half-width", "0.05", "--runs", "9")
    assert code == 2
    assert "argument --runs: must be 10 or more (fewer independent runs give no interval)" \
        in stderr


PLANNED = 78  # seeded pilot (workload rng 3, pilot rng 4): 78 requests for +-0.08 at K=3


def test_the_planned_requests_reach_the_half_width_on_simulated_serving():
    """Seeded: a 48-request pilot plans n; fits of n-request cells have about that width."""
    import warnings

    from goldenal.core.errors import LowSampleWarning
    from goldenal.testing.simulate import make_workload, simulate_workload

    workload = make_workload((0.85, 0.78, 0.72), rng=3)
    pilot = simulate_workload(workload, 3, n_requests=48, rng=4)
    plan = plan_measurement({("on", 3): pilot.observations("request")}, half_width=0.08)
    (cell,) = plan.cells
    assert cell.units_needed == PLANNED
    widths = []
    rng = np.random.default_rng(5)
    for _ in range(6):
        run = simulate_workload(workload, 3, n_requests=cell.units_needed, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LowSampleWarning)
            fitted = fit_cell(run.observations("request"), k=3, rng=rng, n_resamples=500)
        lo, hi = fitted.confidence_interval
        widths.append((hi - lo) / 2)
    assert np.median(widths) == pytest.approx(0.08, abs=0.02)



def test_a_mixed_pilot_plans_enough_requests_short_of_k():
    """9 of 60 pilot requests short of K, 51 accepting every draft: ten short of K, likely.

    With fewer than 10 short of K the interval rests on those few, so
    a loose target still asks for the least M with P(Binomial(M, 0.15) >= 10) >= 0.9: 93.
    """
    from scipy.stats import binom

    from test_fit_cell import FULL, SHORT, _per_position, obs

    records = [obs(n, a, _per_position(n, a), request=f"r{i}")
               for i, (n, a) in enumerate(FULL + SHORT)]
    cell = fit_cell(records, k=3, rng=0, n_resamples=999)
    assert binom.sf(9, 93, 0.15) >= 0.9 > binom.sf(9, 92, 0.15)
    loose = plan_cell(cell, 0.5)
    assert loose.units_needed == 93 and loose.planned_half_width < 0.5
    assert loose.note == ("at least 93 requests, so that 10 or more fall short of K with 90% "
                          "probability (9 of the pilot's 60 did, 51 accepted every draft); with "
                          "fewer, the interval rests on those few (docs/statistics.md)")
    # a tight target needs more than that anyway: no note
    tight = plan_cell(cell, 0.3)
    assert (tight.units_needed, tight.note) == (115, None)
    # split into runs, every run's requests are pooled: no decomposition, no floor
    assert plan_cell(cell, 0.5, runs=10).note is None


def test_plan_cli_states_the_short_of_k_floor(run_cli, tmp_path):
    from conftest import write_request_run
    from test_fit_cell import FULL, SHORT

    pilot = write_request_run(tmp_path / "pilot", FULL + SHORT, 3)
    code, stdout, stderr = run_cli("plan", pilot, "--half-width", "0.5")
    assert (code, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[2].split()[:5] == ["on", "3", "60", "requests", "1.055"]
    assert lines[2].split()[5:7] == ["93", "requests"]
    assert lines[3].startswith("on K=3: at least 93 requests, so that 10 or more fall short")
    assert lines[-1] == "needed: 93 requests per cell"
    code, stdout, _ = run_cli("plan", pilot, "--half-width", "0.5", "--format", "json")
    (cell,) = json.loads(stdout)["cells"]
    assert cell["units_needed"] == 93 and cell["note"].startswith("at least 93 requests")


@given(short=st.integers(1, 60), full=st.integers(2, 400), k=st.integers(1, 7))
@settings(max_examples=60, deadline=None)
def test_the_short_of_k_floor_is_the_least_count_that_suffices(short, full, k):
    from scipy.stats import binom

    from goldenal.stats.plan import SHORT_OF_K_ASSURANCE, _short_of_k_floor

    units = np.array([(50, 50 * k - 1)] * short + [(20, 20 * k)] * full, float)
    floor, note = _short_of_k_floor(units, k)
    share = short / (short + full)
    assert binom.sf(9, floor, share) >= SHORT_OF_K_ASSURANCE > binom.sf(9, floor - 1, share)
    assert note.startswith(f"at least {floor} requests") and f"({short} of the pilot's" in note
    # no floor without two requests that accept every draft
    assert _short_of_k_floor(units[:short + 1], k) == (0, None)
