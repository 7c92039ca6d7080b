"""`goldenal.apply.distribution`: per-position rates that vLLM accepts, pinned to the golden AL."""

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from goldenal.core.acceptance import pava_nonincreasing
from goldenal.apply.distribution import acceptance_rates, curve_survival, project_rates
from goldenal.engines.vllm import RATES
from goldenal.core.errors import PolicyError
from goldenal.golden.registry import Curve, load_registry

REGISTRY = load_registry()


def validate_rates(rates, k):
    """vLLM's checks on its rates knob (docs/engines.md §1.2): messages, empty when valid."""
    problems = []
    if len(rates) != k:
        problems.append(f"{RATES} must have length {k}, got {rates}.")
    if any(not 0 <= r <= 1 for r in rates):
        problems.append(f"{RATES} entries must be in [0, 1], got {rates}.")
    if any(b > a for a, b in zip(rates, rates[1:])):
        problems.append(f"{RATES} must be non-increasing, got {rates}.")
    return problems


ALL = [(c.id, mode, k) for c in REGISTRY for mode, cells in c.cells.items() for k in cells]


def test_every_published_curve_and_k_gives_rates_vllm_accepts():
    assert len(ALL) == 112
    for curve_id, mode, k in ALL:
        curve = REGISTRY.curves[curve_id]
        rates = acceptance_rates(curve, k=k, thinking=mode)
        assert validate_rates(rates, k) == [], (curve_id, mode, k, rates)
        assert abs(1 + sum(rates) - float(curve.cells[mode][k])) < 1e-9
        # The decimal sum is exact: AL(K) - 1 to the unit.
        assert sum(Decimal(repr(r)) for r in rates) == Decimal(curve.cells[mode][k]) - 1


def test_a_monotone_curve_keeps_its_raw_survival():
    # minimax-m3 EAGLE3, thinking on: AL 1.78, 2.38, 2.83 -> S = 0.78, 0.60, 0.45.
    rates = acceptance_rates(REGISTRY.curves["minimaxm3_eagle3"], k=3, thinking="on")
    assert rates == [0.78, 0.6, 0.45]


def test_a_dip_in_the_curve_is_pooled_and_clipped():
    # deepseek-v4-pro MTP, thinking on, K=7: S = .79 .48 .22 .05 .01 .00 -.01.
    survival, al = curve_survival(REGISTRY.curves["dsv4_mtp"], k=7, thinking="on")
    assert al == "2.54"
    assert [round(s, 10) for s in survival] == [0.79, 0.48, 0.22, 0.05, 0.01, 0.0, -0.01]
    # Clipping the -0.01 to 0 adds 0.01, taken back evenly (lambda = -0.002) from the
    # five positive entries: the least-squares projection.
    assert acceptance_rates(REGISTRY.curves["dsv4_mtp"], k=7, thinking="on") == [
        0.788, 0.478, 0.218, 0.048, 0.008, 0.0, 0.0]


def test_pava_against_a_naive_reference():
    # Reference: the same least-squares problem handed to scipy's SLSQP solver.
    from scipy.optimize import minimize

    rng = np.random.default_rng(20261130)
    for _ in range(20):
        y = rng.normal(size=6)
        cons = [{"type": "ineq", "fun": (lambda x, i=i: x[i] - x[i + 1])} for i in range(5)]
        ref = minimize(lambda x: ((x - y) ** 2).sum(), y, constraints=cons, method="SLSQP",
                       options={"ftol": 1e-12, "maxiter": 500}).x
        np.testing.assert_allclose(pava_nonincreasing(y), ref, atol=1e-5)


def test_projection_against_constrained_least_squares():
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    for _ in range(20):
        k = int(rng.integers(2, 7))
        s = rng.uniform(-0.2, 1.2, size=k)
        total = round(float(rng.uniform(0, k)), 2)
        cons = [{"type": "ineq", "fun": (lambda x, i=i: x[i] - x[i + 1])} for i in range(k - 1)]
        cons.append({"type": "eq", "fun": lambda x: x.sum() - total})
        ref = minimize(lambda x: ((x - s) ** 2).sum(), np.full(k, total / k),
                       constraints=cons, bounds=[(0, 1)] * k, method="SLSQP",
                       options={"ftol": 1e-14, "maxiter": 1000}).x
        np.testing.assert_allclose(project_rates(s, f"{total:.2f}"), ref, atol=2e-5)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-0.5, 1.5, allow_nan=False), min_size=1, max_size=8),
       st.data())
def test_projection_is_always_valid_and_pinned(survival, data):
    k = len(survival)
    units = data.draw(st.integers(0, 100 * k))
    total = Decimal(units) / 100
    rates = project_rates(survival, total)
    assert validate_rates(rates, k) == []
    assert abs(sum(rates) - float(total)) < 1e-9
    assert sum(Decimal(repr(r)) for r in rates) == total


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(100, 999), min_size=1, max_size=8).map(sorted), st.booleans())
def test_hypothesis_curves_built_like_golden_files(als, thinking_on):
    cells = {i + 1: f"{1 + v / 1000 * (i + 1) / len(als):.2f}" for i, v in enumerate(als)}
    curve = Curve("x", "m", {"on": cells})
    for k in cells:
        rates = acceptance_rates(curve, k=k, thinking="on")
        assert validate_rates(rates, k) == []
        assert abs(1 + sum(rates) - float(cells[k])) < 1e-9


def test_a_missing_cell_is_refused():
    curve = Curve("x", "m", {"on": {1: "1.80", 2: "N/A", 3: "2.90"}})
    with pytest.raises(PolicyError, match="thinking on, K=2 is N/A"):
        acceptance_rates(curve, k=3, thinking="on")


def test_validate_rates_uses_vllms_messages():
    assert validate_rates([1.0, 0.9], 3) == [
        "synthetic_acceptance_rates must have length 3, got [1.0, 0.9]."]
    assert validate_rates([0.5, 0.9], 2) == [
        "synthetic_acceptance_rates must be non-increasing, got [0.5, 0.9]."]
    assert validate_rates([1.2], 1) == [
        "synthetic_acceptance_rates entries must be in [0, 1], got [1.2]."]
