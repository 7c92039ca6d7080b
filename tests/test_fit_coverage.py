"""Coverage of the interval methods on seeded simulated runs (the fast version).

The slow study with more scenarios is ``benchmarks/coverage_study.py``.
"""

import pytest

from goldenal.simulate import coverage_study, true_acceptance_length

RATES = [0.8, 0.7, 0.6, 0.5]


def test_true_acceptance_length():
    # 1 + 0.8 + 0.8*0.7 + 0.8*0.7*0.6 + 0.8*0.7*0.6*0.5 = 2.864
    assert true_acceptance_length(RATES) == pytest.approx(2.864, abs=1e-12)


def test_nominal_95_percent_intervals_cover_the_true_al():
    """400 runs, 48 heterogeneous requests each (Beta concentration 20)."""
    result = coverage_study(RATES, n_runs=400, rng=20261130, n_requests=48,
                            steps_per_request=250, heterogeneity=20, concurrency=8,
                            window_seconds=2.0)
    cov = result.coverage
    assert 0.92 <= cov["bootstrap"] <= 0.98
    assert 0.92 <= cov["batch-means"] <= 0.98
    # the count-based interval ignores correlation within requests: far too narrow,
    # which is why it is reported as optimistic
    assert cov["count"] < 0.7
    assert result.widths["count"] < result.widths["bootstrap"]
    frame = result.to_frame()
    assert list(frame.index) == ["bootstrap", "batch-means", "count"]
