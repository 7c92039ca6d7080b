"""Across K: pooled chain model, monotone profile of means, parametric forms."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from goldenal.core.errors import ConvergenceError, LowSampleWarning, ParseError
from goldenal.core.acceptance import pava_nonincreasing
from goldenal.stats import fit, fit_cell, fit_chain, fit_curve_means, is_chain_method
from goldenal.core.observation import Observation
from goldenal.testing.simulate import simulate_cell, simulate_run

from conftest import PACKAGED

# The chain fits rest on one aggregate count per K, which gets no per-cell interval by
# design: the warning saying so is tested in test_fit_cell.py, not repeated here.
pytestmark = pytest.mark.filterwarnings("ignore::goldenal.core.errors.LowSampleWarning")



def total(n, per_pos, thinking="on"):
    return Observation("metrics.prom", None, "vllm", "test", k=len(per_pos), drafts=n,
                       accepted=sum(per_pos), accepted_per_position=tuple(per_pos),
                       thinking=thinking)


# Hand-worked pooling (docs/formats.md §0.2): cells K=1 (N=100, c=60),
# K=2 (N=200, c=130, 80), K=3 (N=100, c=70, 40, 20).
#   a(1) = (60 + 130 + 70) / (100 + 200 + 100) = 0.65
#   a(2) = (80 + 40) / (130 + 70)               = 0.6
#   a(3) = 20 / 40                               = 0.5
#   AL(1) = 1.65, AL(2) = 1.65 + 0.65*0.6 = 2.04, AL(3) = 2.04 + 0.39*0.5 = 2.235
HAND = {("on", 1): [total(100, (60,))], ("on", 2): [total(200, (130, 80))],
        ("on", 3): [total(100, (70, 40, 20))]}


def test_hand_worked_pooled_mle():
    curve = fit(HAND, method="eagle3", rng=0, n_resamples=2000)
    model = curve.models["on"]
    assert curve.chain and model.kind == "chain" and model.success
    np.testing.assert_allclose(model.params, [0.65, 0.6, 0.5], rtol=1e-15)
    assert model.predicted == {1: pytest.approx(1.65), 2: pytest.approx(2.04),
                               3: pytest.approx(2.235)}
    # aggregate counts have no independent units: no intervals and no cross-K check
    for k, (lo, hi) in model.predicted_interval.items():
        assert math.isnan(lo) and math.isnan(hi)
    assert model.z_scores == {} and model.flags == () and model.detectable == {}
    assert model.message == ("pooled MLE over cells with K >= i; no cross-K check: it needs "
                             "per-request records (log windows and aggregate counts cannot "
                             "separate the step re-weighting across K)")
    assert repr(model) == ("<ChainFit thinking=on: a(1..3) pooled over 3 cells, 400 steps; "
                           f"{len(model.flags)} flagged>")
    frame = model.to_frame()
    assert list(frame.columns) == ["conditional", "conditional lower 95%",
                                   "conditional upper 95%", "predicted AL",
                                   "predicted lower 95%", "predicted upper 95%", "z",
                                   "detectable shift"]


def test_committed_value_is_always_the_measured_cell():
    curve = fit(HAND, method="eagle3", rng=0, n_resamples=500)
    assert curve.values() == {"on": {1: "1.60", 2: "2.05", 3: "2.30"}}


def test_recovery_of_conditional_rates_with_100k_steps_per_cell():
    truth = [0.86, 0.78, 0.72, 0.66, 0.61, 0.57, 0.52, 0.49]
    run = simulate_run(truth, range(1, 9), rng=77, n_requests=200, steps_per_request=500,
                       heterogeneity=20)
    assert all(95_000 < c.n_steps < 105_000 for c in run.cells.values())
    curve = fit(run.observations("request"), method="eagle3", rng=1, n_resamples=999)
    model = curve.models["on"]
    assert np.max(np.abs(model.params - truth)) < 0.01
    lo, hi = model.params_interval
    assert np.all(lo <= model.params) and np.all(model.params <= hi)


def test_disagreeing_cell_is_flagged_with_its_size_in_standard_errors():
    rates = [0.8, 0.7, 0.6, 0.55, 0.5]
    run = simulate_run(rates, range(1, 6), rng=123, n_requests=80, steps_per_request=400)
    cells = run.observations("request")
    clean = fit(cells, method="eagle3", rng=2, n_resamples=1999)
    assert clean.flags == ()
    bumped = simulate_cell([0.8, 0.8, 0.75, 0.55], k=4, rng=5, n_requests=80,
                           steps_per_request=400)
    cells[("on", 4)] = bumped.observations("request")
    curve = fit(cells, method="eagle3", rng=2, n_resamples=1999)
    flags = curve.flags
    assert [f.k for f in flags] == [4]
    f = flags[0]
    assert f.z > curve.models["on"].threshold > 2
    assert f.difference == pytest.approx(f.measured - f.predicted)
    assert f.message.startswith("thinking on K=4: measured ")
    model = curve.models["on"]
    assert f.message == (f"thinking on K=4: measured {f.measured:.3f} vs {f.predicted:.3f} "
                         "from the requests of K=5 re-weighted to K=4 "
                         f"({f.z:+.1f} SE; detectable {model.detectable[4]:.3f}, margin 0.02)")
    assert abs(f.difference) > model.detectable[4]


def test_block_parallel_cells_stand_alone():
    curve = fit(HAND, method="dspark", rng=0, n_resamples=500)
    assert not curve.chain and curve.models == {"on": None} and curve.flags == ()
    assert is_chain_method("EAGLE3") and is_chain_method("mtp")
    assert not is_chain_method("dflash") and not is_chain_method(None)


def test_geometric_form_describes_geometric_data():
    p, r = 0.85, 0.93
    truth = [p * r ** i for i in range(8)]
    run = simulate_run(truth, range(1, 9), rng=31, n_requests=120, steps_per_request=300)
    model = fit(run.observations("request"), method="eagle3", rng=3,
                n_resamples=1999).models["on"]
    constant, geometric = model.parametric
    assert geometric.form == "geometric" and geometric.adequate
    assert geometric.params["p"] == pytest.approx(p, abs=0.01)
    assert geometric.params["r"] == pytest.approx(r, abs=0.01)
    assert geometric.df == 6 and geometric.pvalue > 0.05
    assert constant.form == "constant" and not constant.adequate and constant.pvalue < 1e-6


def test_fit_chain_without_counts_raises_with_a_checklist():
    cells = [fit_cell([Observation("b.txt", 1, "sglang", "t", k=k, mean_al=1 + 0.7 * k)], k=k,
                      thinking="on") for k in (1, 2, 3)]
    with pytest.raises(ConvergenceError, match="no cell has per-position counts; check that"):
        fit_chain(cells)


def test_mean_only_run_falls_back_to_the_monotone_profile():
    data = {("off", k): [Observation("b.txt", k, "sglang", "t", k=k, mean_al=v)]
            for k, v in {1: 1.84, 2: 2.52, 3: 2.93, 4: 3.41, 5: 3.59, 6: 3.57, 7: 3.85,
                         8: 4.06}.items()}
    curve = fit(data, method="eagle3")
    assert curve.models["off"].kind == "monotone"
    assert [f.k for f in curve.flags] == [3, 6, 7]


# MiniMax-M3 EAGLE3, thinking_off, as published (minimaxm3_eagle3.yaml): the implied
# survival 0.84, 0.68, 0.41, 0.48, 0.18, -0.02, 0.28, 0.21 is not monotone.
MINIMAX_OFF = {1: "1.84", 2: "2.52", 3: "2.93", 4: "3.41", 5: "3.59", 6: "3.57", 7: "3.85",
               8: "4.06"}


def test_monotone_profile_of_published_minimax_curve():
    fitted = fit_curve_means(MINIMAX_OFF, thinking="off")
    np.testing.assert_allclose(fitted.implied_survival,
                               [0.84, 0.68, 0.41, 0.48, 0.18, -0.02, 0.28, 0.21], atol=1e-12)
    # PAVA by hand: (0.41, 0.48) -> 0.445; (-0.02, 0.28, 0.21) -> 0.156667 (below 0.18)
    np.testing.assert_allclose(fitted.fitted_survival,
                               [0.84, 0.68, 0.445, 0.445, 0.18, 0.47 / 3, 0.47 / 3, 0.47 / 3],
                               atol=1e-12)
    assert fitted.fitted[8] == pytest.approx(4.06)
    assert [(f.k, round(f.difference, 3)) for f in fitted.flags] == [
        (3, -0.035), (6, -0.177), (7, -0.053)]
    assert fitted.flags[1].message == ("thinking off K=6: 3.57 is -0.177 from the monotone "
                                       "profile (3.747)")
    assert not any(p.adequate for p in fitted.parametric)


def test_published_chain_curves_flags():
    """Which published cells the monotone profile flags (tolerance 0.03)."""
    from goldenal.golden.registry import load_registry

    registry = load_registry(PACKAGED)
    flagged = {}
    for curve in registry:
        if not is_chain_method(curve.method):
            continue
        for thinking, cells in sorted(curve.cells.items()):
            ks = [f.k for f in fit_curve_means(cells, thinking=thinking).flags]
            if ks:
                flagged[(curve.id, thinking)] = ks
    assert flagged == {("dsv4_mtp", "on"): [7], ("dsv4_mtp", "off"): [4, 7, 8],
                       ("minimaxm3_eagle3", "on"): [7], ("minimaxm3_eagle3", "off"): [3, 6, 7],
                       ("minimaxm3_eagle3_gqa", "on"): [6],
                       ("minimaxm3_eagle3_gqa", "off"): [4, 6, 7]}


def test_monotone_fit_with_a_gap_spreads_the_increment():
    fitted = fit_curve_means({1: 1.8, 3: 2.9})
    np.testing.assert_allclose(fitted.implied_survival, [0.8, 0.55, 0.55])
    assert fitted.fitted[2] == pytest.approx(2.35) and fitted.flags == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-2, 2), st.floats(0.1, 5)), min_size=1, max_size=30))
def test_own_pava_equals_scipy_isotonic_regression(pairs):
    y = np.array([p[0] for p in pairs])
    w = np.array([p[1] for p in pairs])
    ref = isotonic_regression(y, weights=w, increasing=False).x
    np.testing.assert_allclose(pava_nonincreasing(y, w), ref, atol=1e-9)


def test_missing_cells_are_refused_with_the_run_name():
    data = {("on", 1): HAND[("on", 1)], ("on", 3): HAND[("on", 3)]}
    with pytest.raises(ParseError, match=r"thinking on has K=1..3 but no K=2"):
        fit(data, method="eagle3")
    data = {("on", 1): HAND[("on", 1)], ("off", 1): HAND[("on", 1)],
            ("on", 2): HAND[("on", 2)]}
    with pytest.raises(ParseError, match="run is missing cells: thinking off lacks K=2"):
        fit(data, method="eagle3")


def test_identity_conflict_is_refused():
    class Run:
        path = "runs/a"
        identity = {"model": "minimax-m3", "method": "eagle3"}
        cells = HAND
        warnings = ()

    with pytest.raises(ParseError, match="identity conflict: the run says model='minimax-m3'"):
        fit(Run(), model="kimi-k3")


def test_failed_cell_is_na_and_excluded_from_the_model():
    data = dict(HAND)
    data[("on", 4)] = []
    curve = fit(data, method="eagle3", rng=0, n_resamples=500)
    assert curve.values()["on"][4] == "N/A"
    assert curve.models["on"].n_cells == 3 and 4 not in curve.models["on"].z_scores
    assert repr(curve).startswith("<CurveFit ?: 4 cells (1 failed), 400 steps, chain")


def test_curve_fit_objects():
    curve = fit(HAND, method="eagle3", rng=0, n_resamples=500, curve="hand", model="m")
    assert curve.curve_id == "hand"
    frame = curve.to_frame()
    assert list(frame.index) == [("on", 1), ("on", 2), ("on", 3)]
    d = curve.to_dict()
    assert d["pooled_across_k"] and d["cells"][0]["value"] == "1.60"
    assert set(d["interval_methods"]) == {"none"}
    assert d["estimand"].startswith("AL of the prompt population") and \
        curve.estimand == d["estimand"]
    assert "<table" in curve._repr_html_()
    assert math.isclose(d["models"]["on"]["conditional"][1], 0.6)


def test_fit_is_reproducible_for_a_seed():
    run = simulate_run([0.8, 0.7], [1, 2], rng=8, n_requests=30, steps_per_request=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleWarning)
        a = fit(run.observations("request"), method="eagle3", rng=42, n_resamples=500)
        b = fit(run.observations("request"), method="eagle3", rng=42, n_resamples=500)
    assert [c.confidence_interval for c in a.cells.values()] == \
        [c.confidence_interval for c in b.cells.values()]


def test_plot_hooks_delegate_to_goldenal_plot():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = fit(HAND, method="eagle3", rng=0, n_resamples=500, curve="hand", model="m")
    try:
        for obj in (curve, curve.cells[("on", 3)], curve.models["on"],
                    fit_curve_means(MINIMAX_OFF, thinking="off")):
            fig, ax = plt.subplots()
            assert obj.plot(ax=ax) is not None
    finally:
        plt.close("all")


def req(n, per_pos, r, thinking="on"):
    return Observation("requests.jsonl", r + 1, "vllm", "test", k=len(per_pos), drafts=n,
                       accepted=sum(per_pos), accepted_per_position=tuple(per_pos),
                       request=f"req{r}", thinking=thinking)


def test_cross_k_check_re_weights_requests_by_tokens():
    """Hand-worked: K=2 requests predict AL(1) by tokens over re-weighted steps.

    A K=2 request with n steps, c = (c1, c2) made T = n + c1 + c2 tokens; at K=1
    it would take W = T n / (n + c1) steps.  Request types (10, (8, 6)) and
    (20, (10, 4)): T = 24 and 34, W = 13.333 and 22.667, so the K=2 cell predicts
    AL(1) = 290 / 180 = 1.6111 (its per-step a(1) = 90 / 150 = 0.6 would say 1.6).
    """
    from scipy.stats import t

    k1 = [req(30, (18,), r) for r in range(5)] + [req(42, (26,), r) for r in range(5, 9)] + \
        [req(42, (25,), 9)]
    k2 = [req(10, (8, 6), r) for r in range(5)] + [req(20, (10, 4), r) for r in range(5, 10)]
    curve = fit({("on", 1): k1, ("on", 2): k2}, method="eagle3", rng=0, n_resamples=200)
    model = curve.models["on"]

    def parts(rows, j):
        n = np.array([o.drafts for o in rows], float)
        c = np.array([o.accepted_per_position for o in rows], float)
        tokens = n + c.sum(axis=1)
        return tokens, tokens * n / (n + c[:, :j].sum(axis=1))

    def ratio(tokens, w):
        r = tokens.sum() / w.sum()
        m = len(tokens)
        return r, m / (m - 1) * ((tokens - r * w) ** 2).sum() / w.sum() ** 2

    est, v1 = ratio(*parts(k1, 1))
    ref, v2 = ratio(*parts(k2, 1))
    assert est == pytest.approx(1 + 219 / 360) and ref == pytest.approx(290 / 180)
    se = math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 / 9 + v2 ** 2 / 9)  # Welch-Satterthwaite
    assert model.z_scores[1] == pytest.approx((est - ref) / se, rel=1e-12)
    assert model.z_scores[2] == pytest.approx(-(est - ref) / se, rel=1e-12)
    crit = t.ppf(1 - 0.05 / 4, df)  # Bonferroni over 2 compared cells
    assert model.detectable[1] == pytest.approx(0.02 + (crit + t.ppf(0.9, df)) * se,
                                                rel=1e-12)
    assert (abs(est - ref) - 0.02) / se < crit and model.flags == ()
    assert model.margin == 0.02 and model.power == 0.9
    assert model.detectable_text.startswith(
        f"this run can detect shifts of \u00b1{model.detectable[1]:.3f} at K=1")
    # the model AL of K=1 pools both cells' requests re-weighted to K=1
    assert model.predicted[1] == pytest.approx(
        (parts(k1, 1)[0].sum() + 290) / (parts(k1, 1)[1].sum() + 180), rel=1e-12)
    assert model.to_dict()["detectable_shift"]["1"] == pytest.approx(model.detectable[1],
                                                                     abs=1e-6)


def test_clean_heterogeneous_run_is_not_flagged():
    """Identical request profiles across K (per-step rates drift: see test_fit_coverage)."""
    from goldenal.testing.simulate import make_workload, simulate_workload

    w = make_workload([0.85, 0.78, 0.72, 0.66, 0.6], heterogeneity=4.0, rng=3)
    rng = np.random.default_rng(12)
    cells = {("on", k): simulate_workload(w, k, n_requests=256, rng=rng).observations("request")
             for k in range(1, 6)}
    curve = fit(cells, method="eagle3", rng=1, n_resamples=500)
    model = curve.models["on"]
    assert model.flags == ()
    assert set(model.z_scores) == {1, 2, 3, 4, 5}
    assert all(abs(z) < 3 for z in model.z_scores.values())


def test_log_only_cells_get_no_cross_k_check():
    run = simulate_run([0.8, 0.7, 0.6], [1, 2, 3], rng=3, n_requests=40,
                       steps_per_request=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleWarning)
        curve = fit(run.observations("window"), method="eagle3", rng=0, n_resamples=200)
    model = curve.models["on"]
    assert model.flags == () and model.z_scores == {} and model.detectable_text == ""
    assert "no cross-K check: it needs per-request records" in model.message


@pytest.mark.parametrize("kwargs,message", [({"margin": -0.1}, "`margin` must be >= 0"),
                                            ({"power": 1.0}, "`power` must be between 0")])
def test_fit_chain_argument_validation(kwargs, message):
    cells = [fit_cell(HAND[("on", 1)], k=1, thinking="on")]
    with pytest.raises(ValueError, match=message):
        fit_chain(cells, **kwargs)


def test_a_wider_margin_hides_a_small_shift():
    rates = [0.8, 0.7, 0.6, 0.55, 0.5]
    run = simulate_run(rates, range(1, 6), rng=123, n_requests=80, steps_per_request=400)
    cells = run.observations("request")
    cells[("on", 4)] = simulate_cell([0.8, 0.8, 0.75, 0.55], k=4, rng=5, n_requests=80,
                                     steps_per_request=400).observations("request")
    flagged = fit(cells, method="eagle3", rng=2, n_resamples=200)
    assert [f.k for f in flagged.flags] == [4]
    diff = abs(flagged.flags[0].difference)
    wide = fit(cells, method="eagle3", rng=2, n_resamples=200, margin=diff + 0.01)
    assert wide.flags == () and wide.models["on"].margin == pytest.approx(diff + 0.01)
