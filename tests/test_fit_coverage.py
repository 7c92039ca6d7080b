"""Coverage of fit's default intervals on seeded simulated serving (the fast version).

The slow study with every scenario, the previous methods and the cross-K
check is ``benchmarks/coverage_study.py`` (its table: docs/statistics.md).
"""

import numpy as np
import pytest

from goldenal.testing.simulate import Workload, coverage_study, make_workload, simulate_workload
from goldenal.testing.simulate import true_acceptance_length

RATES = [0.8, 0.7, 0.6, 0.5]


def test_true_acceptance_length():
    # 1 + 0.8 + 0.8*0.7 + 0.8*0.7*0.6 + 0.8*0.7*0.6*0.5 = 2.864
    assert true_acceptance_length(RATES) == pytest.approx(2.864, abs=1e-12)


def test_workload_truth_by_hand():
    """Two profiles, K=1, every request exactly 3 tokens.

    Profile a(1)=0.5: a step yields 1 or 2 tokens; steps to reach >= t tokens
    m(1) = 1, m(2) = 1 + m(1)/2 = 1.5, m(3) = 1 + (m(2) + m(1))/2 = 2.25, and by
    Wald's identity tokens = 1.5 m(3) = 3.375.  Profile a(1)=1: 2 steps, 4 tokens.
    AL = (3.375 + 4) / (2.25 + 2) = 1.735294...
    """
    w = Workload(profiles=np.array([[[0.5]], [[1.0]]]), medians=(3.0,), sigmas=(1e-9,),
                 caps=(10,))
    assert w.length_pmf(0)[3] == pytest.approx(1.0)
    assert w.true_acceptance_length(1) == pytest.approx(7.375 / 4.25, rel=1e-12)


def test_workload_truth_matches_a_large_simulation():
    w = make_workload(RATES, answer_rates=[0.9, 0.85, 0.8, 0.75], medians=(800.0, 300.0),
                      caps=(2048, 1024), rng=1)
    cell = simulate_workload(w, 3, n_requests=6000, rng=2)
    n, a, _ = cell.totals
    # 6000 heterogeneous requests: the pooled AL is within ~0.005 of the population AL
    assert 1 + a / n == pytest.approx(cell.true_al, abs=0.01)
    assert cell.true_al == pytest.approx(w.true_acceptance_length(3))


def test_per_step_acceptance_drifts_with_k_though_no_request_changes():
    """docs/formats.md §0.2: hard requests take relatively more steps at larger K."""
    w = make_workload(RATES, heterogeneity=4.0, rng=3)
    c1 = simulate_workload(w, 1, n_requests=3000, rng=4)
    c4 = simulate_workload(w, 4, n_requests=3000, rng=5)
    a1_k1 = c1.totals[2][0] / c1.totals[0]
    a1_k4 = c4.totals[2][0] / c4.totals[0]
    assert a1_k1 - a1_k4 > 0.01


def test_bca_over_48_heavy_tailed_requests_covers_95_percent():
    """300 runs of 48 requests (lognormal token lengths, 24 profiles, 16 slots)."""
    w = make_workload(RATES, rng=7)
    result = coverage_study(w, 3, n_runs=300, rng=20261201, n_requests=48, concurrency=16)
    cov = result.coverage
    assert result.reported["bootstrap"] == 300
    assert 0.92 <= cov["bootstrap"] <= 0.98
    # 48 requests in a few 10 s windows never make 10 batches of a request's span
    assert result.reported["batch-means"] == 0 and np.isnan(cov["batch-means"])
    frame = result.to_frame()
    assert list(frame.index) == ["bootstrap", "batch-means"]


def test_request_totals_of_a_draw_give_fits_interval():
    """The study's --request-only path: a draw's request totals, studentized as fit_cell does."""
    from goldenal.stats import fit_cell
    from goldenal.stats.cell import studentized_ratio_interval

    w = make_workload(RATES, rng=7)
    sim = simulate_workload(w, 3, n_requests=48, concurrency=16, rng=1)
    cell = fit_cell(sim.observations("request"), k=3, n_resamples=999, rng=2)
    _, steps, req, lengths = w.draw(48, 3, np.random.default_rng(1))
    units = np.column_stack([steps, np.bincount(req, weights=lengths, minlength=48)])
    lo, hi, se, _ = studentized_ratio_interval(units.astype(float), 0.95, 999,
                                               np.random.default_rng(2))
    assert 1 + units[:, 1].sum() / units[:, 0].sum() == cell.mean_acceptance_length
    assert (lo, hi, se) == pytest.approx((*cell.confidence_interval, cell.standard_error),
                                         rel=1e-12)
