"""speculation_profile.json: export committed and fitted cells, read profiles back."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.core.errors import LowSampleWarning, ParseError, UnknownCurve
from goldenal.stats import fit, fit_cell
from goldenal.apply.export import export_profile, read_profile, write_profile
from goldenal.testing.simulate import simulate_run

REQUIRED = {"schema_version", "measured", "method", "draft_checkpoint", "target_model",
            "num_speculative_tokens", "block_size", "max_supported_k", "verification_method",
            "conditional_accept_rates", "marginal_accept_rates", "mean_accept_length",
            "mean_accept_length_per_request", "accept_length_model", "accept_length_by_k",
            "acceptance_length_histogram", "per_category", "measurement_conditions",
            "validation"}


def test_committed_chain_cell_exports_the_implied_survival():
    # minimaxm3_eagle3 thinking_on: 1.78, 2.38, 2.83 -> S = 0.78, 0.60, 0.45
    p = export_profile("minimaxm3_eagle3", k=3, thinking="on")
    assert set(p) == REQUIRED
    assert p["schema_version"] == "1.0" and p["measured"] is True
    assert p["marginal_accept_rates"] == [0.78, 0.6, 0.45]
    assert p["conditional_accept_rates"] == [0.78, 0.769231, 0.75]
    assert p["mean_accept_length"] == 2.83
    assert p["accept_length_model"] == "chain_analytic"
    assert p["draft_checkpoint"] == {"id": "Inferact/MiniMax-M3-EAGLE3"}
    assert p["accept_length_by_k"]["8"] == 3.74
    v = p["validation"]
    assert v["mean_consistency"]["passed"] and v["mean_consistency"]["abs_delta"] == 0.0
    assert v["marginal_monotonicity"] == {"passed": True, "violations": []}
    assert p["measurement_conditions"]["thinking"] == "on"


def test_impossible_published_cell_is_refused_and_monotone_exports_it():
    # thinking_off: S(4) = 3.41 - 2.93 = 0.48 > S(3) = 0.41, S(6) = 3.57 - 3.59 < 0
    from goldenal.core.errors import PolicyError

    with pytest.raises(PolicyError) as exc:
        export_profile("minimaxm3_eagle3", k=7, thinking="off")
    assert str(exc.value) == (
        "curve minimaxm3_eagle3 thinking off K=7: the committed values imply impossible rates "
        "(S(4) = 0.48 > S(3) = 0.41, a conditional rate above 1); pass --monotone "
        "(monotone=True) to export the isotonic survival profile")
    fixed = export_profile("minimaxm3_eagle3", k=7, thinking="off", monotone=True)
    assert fixed["validation"]["marginal_monotonicity"]["passed"]
    # rescaled: 1 + sum of the marginals is the committed AL(7)
    assert 1 + sum(fixed["marginal_accept_rates"]) == pytest.approx(3.85, abs=1e-5)
    assert fixed["mean_accept_length"] == 3.85
    assert fixed["validation"]["mean_consistency"]["passed"]
    assert all(0 <= a <= 1 for a in fixed["conditional_accept_rates"])


def test_block_parallel_cell_is_measured_per_k():
    p = export_profile("kimik3_dspark", k=3, thinking="on")
    assert p["accept_length_model"] == "measured_per_k" and p["max_supported_k"] == 3
    # one constant rate p reproduces AL: 1 + p + p^2 + p^3 = 2.87
    rate = p["conditional_accept_rates"][0]
    assert p["conditional_accept_rates"] == [rate] * 3
    assert 1 + rate + rate ** 2 + rate ** 3 == pytest.approx(2.87, abs=1e-5)
    assert p["validation"]["mean_consistency"]["passed"]


def test_unknown_cell_is_refused():
    with pytest.raises(UnknownCurve, match="no committed value for thinking off, K=3"):
        export_profile("kimik3_dspark", k=3, thinking="off")


@pytest.fixture(scope="module")
def fitted():
    run = simulate_run([0.8, 0.7, 0.6], [1, 2, 3], rng=12, n_requests=30,
                       steps_per_request=200,
                       identity={"curve": "sim", "model": "org/sim-model", "draft": ["o/d"]})
    return fit(run.observations("request"), n_resamples=500, rng=0, **run.identity)


def test_fitted_cell_round_trips_through_a_profile(fitted, tmp_path):
    cell = fitted.cells[("on", 3)]
    p = export_profile(fitted, k=3, thinking="on")
    np.testing.assert_allclose(p["marginal_accept_rates"], cell.per_position.survival,
                               atol=5e-7)
    hist = p["acceptance_length_histogram"]
    assert sum(hist.values()) == cell.n_steps
    assert p["measurement_conditions"]["interval"]["method"] == "bootstrap"
    path = write_profile(p, tmp_path / "speculation_profile.json")
    obs = read_profile(path)
    assert [o.k for o in obs] == [3, 1, 2]
    counted = obs[0]
    assert counted.drafts == cell.n_steps and counted.accepted == cell.accepted
    assert counted.accepted_per_position == cell.per_position.counts
    assert counted.thinking == "on" and counted.format == "speculation-profile"
    assert obs[1].mean_only and obs[1].mean_al == pytest.approx(
        fitted.cells[("on", 1)].mean_acceptance_length, abs=1e-6)
    with pytest.warns(LowSampleWarning, match="no interval: 1 aggregate count"):
        again = fit_cell(obs[:1], k=3, rng=0)
    assert again.mean_acceptance_length == cell.mean_acceptance_length


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=2, max_size=9).filter(lambda h: sum(h) > 0))
def test_histogram_round_trip(tmp_path_factory, hist):
    """h[j] steps accepted exactly j drafts -> profile -> the same counts back."""
    k = len(hist) - 1
    n = sum(hist)
    c = tuple(sum(hist[i:]) for i in range(1, k + 1))
    from goldenal.core.observation import Observation

    with pytest.warns(LowSampleWarning, match="no interval: 1 aggregate count"):
        cell = fit_cell([Observation("x", None, "vllm", "t", k=k, drafts=n, accepted=sum(c),
                                     accepted_per_position=c)], k=k, thinking="off",
                        n_resamples=100, rng=0)
    from goldenal.apply.export import profile_from_cell

    p = profile_from_cell(cell, method="eagle3")
    assert p["validation"]["mean_consistency"]["passed"]
    assert p["validation"]["marginal_monotonicity"]["passed"]
    path = tmp_path_factory.mktemp("p") / "p.json"
    write_profile(p, path)
    (back,) = read_profile(path)
    assert (back.drafts, back.accepted, back.accepted_per_position) == (n, sum(c), c)


@pytest.mark.parametrize("doc,message", [
    ({"schema_version": "2.0"}, "schema_version '2.0' is not supported"),
    ({"schema_version": "1.0", "measured": False, "num_speculative_tokens": 3},
     "placeholder profile"),
    ({"schema_version": "1.0", "num_speculative_tokens": 3, "mean_accept_length": 2.0,
      "marginal_accept_rates": [0.5, 0.3]}, "marginal_accept_rates has 2 entries but"),
    ({"schema_version": "1.0", "num_speculative_tokens": 2,
      "acceptance_length_histogram": {"1": 3, "5": 1}},
     r"histogram lengths must lie in 1\.\.K\+1 = 1\.\.3"),
])
def test_bad_profiles(tmp_path, doc, message):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ParseError, match=message) as err:
        read_profile(path)
    assert err.value.path == str(path)


def test_export_cli_stdout_and_file(run_cli, tmp_path):
    code, out, err = run_cli("export", "minimaxm3_eagle3", "--k", "2", "--thinking", "on")
    assert code == 0 and err == ""
    assert json.loads(out)["marginal_accept_rates"] == [0.78, 0.6]
    target = tmp_path / "profile.json"
    code, out, err = run_cli("export", "minimaxm3_eagle3", "--k", "2", "--thinking", "on",
                             "--format", "speculation-profile", "--out", target)
    assert (code, out, err) == (0, "", f"wrote {target}\n")
    assert json.loads(target.read_text())["num_speculative_tokens"] == 2
    code, out, err = run_cli("export", "no_such_curve", "--k", "2", "--thinking", "on")
    assert code == 1 and err.startswith("error: 'no_such_curve' is neither a file")


RESULTS = __import__("pathlib").Path(__file__).resolve().parent / "data" / "fit" / \
    "inferencex_results"
IDENTITY = ["--model", "minimax-m3", "--draft", "Inferact/MiniMax-M3-EAGLE3",
            "--method", "eagle3", "--curve-id", "mm3_fixture"]


def test_export_a_run_directory_and_a_fitted_curve(run_cli, tmp_path):
    code, out, _ = run_cli("export", RESULTS, "--k", "3", "--thinking", "on", *IDENTITY,
                           "--n-resamples", "200")
    assert code == 0
    from_run = json.loads(out)
    assert from_run["acceptance_length_histogram"] is not None
    # log windows alone (no output cap or concurrency known): no interval
    assert from_run["measurement_conditions"]["interval"]["method"] == "none"
    assert from_run["validation"]["marginal_monotonicity"]["passed"]
    golden = tmp_path / "g"
    code, _, _ = run_cli("fit", RESULTS, *IDENTITY, "--golden-dir", golden, "--n-resamples", "200")
    assert code == 0
    code, out, _ = run_cli("export", "mm3_fixture", "--golden-dir", golden, "--k", "3",
                           "--thinking", "on")
    committed = json.loads(out)
    # the distribution file beside the curve supplies the measured vectors
    assert committed["marginal_accept_rates"] == from_run["marginal_accept_rates"]
    assert committed["acceptance_length_histogram"] == from_run["acceptance_length_histogram"]
    assert committed["measurement_conditions"]["committed_value"] == "2.67"


def test_exported_target_is_an_hf_id_not_the_yaml_key():
    from goldenal.apply.export import export_profile
    from goldenal.golden.registry import load_registry

    profile = export_profile(load_registry()["minimaxm3_eagle3"], k=3, thinking="on")
    assert profile["target_model"]["id"] == "MiniMaxAI/MiniMax-M3"
    assert profile["draft_checkpoint"]["id"] == "Inferact/MiniMax-M3-EAGLE3"
