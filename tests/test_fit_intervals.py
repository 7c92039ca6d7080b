"""Intervals are valid or absent: support, the 10-unit minimum, no spread, monotonicity,
and coverage on populations of short requests accepting everything and long ones not."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from goldenal.errors import LowSampleWarning
from goldenal.fitting import fit_cell
from goldenal.observation import Observation


def _records(rows, k, shift=0):
    return [Observation("req.jsonl", None, "vllm", "test", k=k, drafts=n,
                        draft_tokens=n * k, accepted=a + shift * n, request=f"r{i}")
            for i, (n, a) in enumerate(rows)]


def _fit(rows, k, shift=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleWarning)
        return fit_cell(_records(rows, k, shift), k=k, rng=7, n_resamples=200)


@st.composite
def populations(draw):
    """K, a shift j, and requests (steps, accepted) that accept at most K - j per step."""
    k = draw(st.integers(1, 5))
    j = draw(st.integers(1, k))
    m = draw(st.integers(1, 40))
    rows = []
    for _ in range(m):
        n = draw(st.integers(1, 400))
        rows.append((n, draw(st.integers(0, (k - j) * n))))
    return k, j, rows


@settings(max_examples=80, deadline=None)
@given(populations())
def test_intervals_stay_in_the_support_and_rise_with_acceptance(data):
    k, j, rows = data
    cell = _fit(rows, k)
    lo, hi = cell.confidence_interval
    if sum(0 < a < k * n for n, a in rows) < 10:  # fewer than 10 units with spread
        assert cell.interval_method == "none"
    if cell.interval_method != "none":
        assert 1.0 <= lo <= cell.mean_acceptance_length <= hi <= k + 1.0
    # every request accepts j more drafts per step: the interval is not lower
    more = _fit(rows, k, shift=j)
    assert more.mean_acceptance_length > cell.mean_acceptance_length
    varying = sum(0 < a + j * n < k * n for n, a in rows)
    if cell.interval_method != "none" and varying >= 10:
        assert more.interval_method == "bootstrap"
        assert more.confidence_interval.low >= lo and more.confidence_interval.high >= hi
    if more.interval_method != "none":
        assert 1.0 <= more.confidence_interval.low and more.confidence_interval.high <= k + 1
