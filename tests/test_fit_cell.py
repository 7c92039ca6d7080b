"""One cell: exact point estimate, the three interval methods, per position, errors."""

import ctypes
import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, norm, t

from goldenal.errors import LowSampleWarning, ParseError
from goldenal.fitting import ConfidenceInterval, fit_cell, format_al
from goldenal.observation import Observation
from goldenal.simulate import simulate_cell


def obs(drafts, accepted, per_pos, *, line=None, request=None, k=None, source="cell.log"):
    return Observation(source, line, "vllm", "test", k=k or len(per_pos), drafts=drafts,
                       draft_tokens=drafts * len(per_pos), accepted=accepted,
                       accepted_per_position=tuple(per_pos), request=request)


# Hand-worked cell (K=2): windows (N=100, c=(70, 50)) and (N=50, c=(30, 10)).
# Totals N=150, A=160, c=(100, 60): AL = 1 + 160/150 = 2.0667, S = (2/3, 0.4),
# a = (2/3, 0.6).  Histogram of accepted drafts per step: h0=50, h1=40, h2=60, so
# E[L] = 160/150, E[L^2] = (40 + 4*60)/150 and var = E[L^2] - E[L]^2 = 0.728889.
HAND = [obs(100, 120, (70, 50)), obs(50, 40, (30, 10))]


def test_hand_worked_cell_count_based():
    cell = fit_cell(HAND, k=2, rng=0)
    assert cell.mean_acceptance_length == 1 + 160 / 150
    assert cell.text == "2.07"
    assert cell.n_steps == 150 and cell.accepted == 160 and cell.draft_tokens == 300
    assert cell.interval_method == "count"
    var = (40 + 4 * 60) / 150 - (160 / 150) ** 2
    assert var == pytest.approx(0.7288888889, abs=1e-9)
    se = math.sqrt(var / 150)
    assert cell.standard_error == pytest.approx(se, rel=1e-12)
    q = norm.ppf(0.975)
    assert cell.confidence_interval.low == pytest.approx(1 + 160 / 150 - q * se, rel=1e-12)
    assert cell.confidence_interval.high == pytest.approx(1 + 160 / 150 + q * se, rel=1e-12)
    pp = cell.per_position
    assert pp.positions == (1, 2) and pp.counts == (100, 60)
    np.testing.assert_allclose(pp.survival, [2 / 3, 0.4], rtol=1e-15)
    np.testing.assert_allclose(pp.conditional, [2 / 3, 0.6], rtol=1e-15)
    np.testing.assert_allclose(pp.evaluate([0, 1, 2, 3]), [1, 2 / 3, 0.4, 0])
    assert any("optimistic" in n for n in cell.notes)


def test_count_based_per_position_is_wilson():
    cell = fit_cell(HAND, k=2, rng=0)
    lo, hi = cell.per_position.confidence_interval("survival")
    ref = binomtest(60, 150).proportion_ci(0.95, method="wilson")
    assert lo[1] == pytest.approx(ref.low, rel=1e-9)
    assert hi[1] == pytest.approx(ref.high, rel=1e-9)
    lo, hi = cell.per_position.confidence_interval("conditional")
    ref = binomtest(60, 100).proportion_ci(0.95, method="wilson")
    assert (lo[1], hi[1]) == (pytest.approx(ref.low, rel=1e-9), pytest.approx(ref.high, rel=1e-9))


def test_bootstrap_matches_naive_loop():
    """The vectorised weights matrix equals a per-resample loop on the same stream."""
    sim = simulate_cell([0.8, 0.6, 0.5], n_requests=37, steps_per_request=50, rng=11)
    records = sim.observations("request")
    cell = fit_cell(records, k=3, n_resamples=500, rng=np.random.default_rng(5))
    assert cell.interval_method == "bootstrap" and cell.n_clusters == 37
    n = np.array([o.drafts for o in records], float)
    a = np.array([o.accepted for o in records], float)
    rng = np.random.default_rng(5)
    stats = []
    for _ in range(500):
        idx = rng.integers(0, 37, size=37)
        stats.append(1 + a[idx].sum() / n[idx].sum())
    # expanded percentile interval (Hesterberg 2015): tail 2 Phi(-sqrt(n/(n-1)) t_(n-1))
    tail = norm.sf(t.ppf(0.975, 36) * math.sqrt(37 / 36))
    assert tail == pytest.approx(0.019888, abs=1e-6)
    lo, hi = np.quantile(stats, [tail, 1 - tail])
    assert cell.confidence_interval == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    assert cell.standard_error == pytest.approx(np.std(stats, ddof=1), rel=1e-10)


def test_batch_means_matches_hand_computation():
    rng = np.random.default_rng(3)
    windows = []
    for line in range(1, 17):
        n = int(rng.integers(50, 150))
        c1 = int(rng.integers(20, n))
        c2 = int(rng.integers(0, c1))
        windows.append(obs(n, c1 + c2, (c1, c2), line=2 * line))
    with pytest.warns(LowSampleWarning, match="batch means over only 4 batches"):
        cell = fit_cell(windows, k=2, rng=0)
    assert cell.interval_method == "batch-means"
    # 16 windows -> batches of isqrt(16) = 4 consecutive windows
    assert cell.n_clusters == 4
    bn = [sum(w.drafts for w in windows[i:i + 4]) for i in range(0, 16, 4)]
    ba = [sum(w.accepted for w in windows[i:i + 4]) for i in range(0, 16, 4)]
    r = sum(ba) / sum(bn)
    var = 4 / 3 * sum((x - r * y) ** 2 for x, y in zip(ba, bn)) / sum(bn) ** 2
    half = t.ppf(0.975, 3) * math.sqrt(var)
    assert cell.mean_acceptance_length == 1 + sum(w.accepted for w in windows) / sum(bn)
    assert cell.confidence_interval.low == pytest.approx(1 + r - half, rel=1e-12)
    assert cell.confidence_interval.high == pytest.approx(1 + r + half, rel=1e-12)


@pytest.mark.filterwarnings("ignore::goldenal.errors.LowSampleWarning")
@pytest.mark.parametrize("granularity", ["request", "window", "total"])
def test_point_estimate_is_the_pooled_count_formula(granularity):
    sim = simulate_cell([0.82, 0.71, 0.64, 0.58], n_requests=50, steps_per_request=300,
                        rng=2026)
    n, a, c = sim.totals
    cell = fit_cell(sim.observations(granularity), k=4, rng=1, n_resamples=999)
    assert cell.mean_acceptance_length == 1.0 + a / n  # to the last digit
    assert cell.text == "%.2f" % (1.0 + a / n)
    assert cell.n_steps == n and cell.accepted == a
    assert cell.per_position.counts == tuple(c)
    assert cell.interval_method == {"request": "bootstrap", "window": "batch-means",
                                    "total": "count"}[granularity]


def _c_printf(x):
    buf = ctypes.create_string_buffer(64)
    ctypes.CDLL(None).snprintf(buf, 64, b"%.2f", ctypes.c_double(x))
    return buf.value.decode()


@pytest.mark.parametrize("x,text", [(2.675, "2.67"), (1.005, "1.00"), (0.125, "0.12"),
                                    (0.375, "0.38"), (2.0666666, "2.07"), (3.0, "3.00")])
def test_rounding_is_printf(x, text):
    assert format_al(x) == text == _c_printf(x)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1.0, max_value=17.0, allow_nan=False))
def test_rounding_matches_c_printf(x):
    assert format_al(x) == _c_printf(x)


def test_mean_only_cell_has_no_interval():
    cell = fit_cell([Observation("bench.txt", 3, "sglang", "sglang-log", k=3, mean_al=2.5)],
                    k=3)
    assert cell.interval_method == "none" and cell.text == "2.50"
    assert math.isnan(cell.confidence_interval.low) and cell.n_steps is None
    assert cell.mean_only


def test_empty_cell_is_failed():
    cell = fit_cell([], k=4, thinking="on")
    assert cell.failed and cell.text == "N/A"
    assert repr(cell) == "<CellFit thinking=on K=4: failed (N/A)>"


def test_zero_steps_names_the_file():
    with pytest.raises(ParseError, match="zero verification steps") as err:
        fit_cell([obs(0, 0, (0, 0), line=7, source="server_on_mtp2.log")], k=2,
                 thinking="on")
    assert str(err.value).startswith("server_on_mtp2.log:7: cell thinking on, K=2 has zero")


def test_k_disagreeing_with_the_cell_is_refused():
    with pytest.raises(ParseError, match=r"observation has K=3 but the cell \(K=2\) is K=2"):
        fit_cell([obs(10, 5, (3, 1, 1), k=3)], k=2)
    with pytest.raises(ParseError, match="per-position counts have 3 entries"):
        fit_cell([Observation("x.log", 1, "vllm", "t", k=None, drafts=10, accepted=5,
                              accepted_per_position=(3, 1, 1))], k=2)


@pytest.mark.parametrize("kwargs,message", [
    ({"k": 0}, "`k` must be a positive integer"),
    ({"k": 2, "confidence_level": 1.5}, "`confidence_level` must be between 0 and 1"),
    ({"k": 2, "method": "jackknife"}, "`method` must be one of auto, bootstrap"),
    ({"k": 2, "n_resamples": 10}, "`n_resamples` must be an integer >= 100"),
])
def test_argument_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fit_cell(HAND, **kwargs)


def test_few_requests_warn_at_the_caller():
    records = [obs(100, 80 + r, (50, 30 + r), request=f"r{r}") for r in range(5)]
    with pytest.warns(LowSampleWarning, match="bootstrap over only 5 requests") as rec:
        fit_cell(records, k=2, n_resamples=200, rng=0)
    assert rec[0].filename == __file__


def test_few_windows_fall_back_to_count_with_a_warning():
    windows = [obs(100, 80, (50, 30), line=i) for i in (1, 2, 3)]
    with pytest.warns(LowSampleWarning, match="only 3 logging windows"):
        cell = fit_cell(windows, k=2, rng=0)
    assert cell.interval_method == "count"


def test_result_objects():
    sim = simulate_cell([0.8, 0.7], n_requests=20, steps_per_request=100, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cell = fit_cell(sim.observations("request"), k=2, thinking="off", n_resamples=999,
                        rng=0)
    assert isinstance(cell.confidence_interval, ConfidenceInterval)
    lo, hi = cell.confidence_interval
    assert repr(cell) == (f"<CellFit thinking=off K=2: AL {cell.text} [{lo:.3f}, {hi:.3f}] "
                          f"95% bootstrap, {cell.n_steps} steps in 20 requests>")
    assert list(cell.summary.columns) == ["AL", "value", "AL lower 95%", "AL upper 95%", "se",
                                          "method", "steps", "clusters"]
    assert "<table" in cell._repr_html_()
    frame = cell.per_position.to_frame()
    assert "survival lower 95%" in frame.columns and list(frame.index) == [1, 2]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.k = 3
    d = cell.to_dict()
    assert d["interval"]["method"] == "bootstrap" and d["value"] == cell.text


@pytest.mark.filterwarnings("ignore::goldenal.errors.LowSampleWarning")
def test_every_interval_contains_the_estimate():
    sim = simulate_cell([0.9, 0.8, 0.7, 0.6, 0.5], n_requests=40, steps_per_request=200, rng=9)
    for g in ("request", "window", "total"):
        cell = fit_cell(sim.observations(g), k=5, rng=0, n_resamples=999)
        lo, hi = cell.confidence_interval
        assert lo < cell.mean_acceptance_length < hi
        s_lo, s_hi = cell.per_position.confidence_interval()
        assert np.all(s_lo <= cell.per_position.survival + 1e-12)
        assert np.all(cell.per_position.survival <= s_hi + 1e-12)


@st.composite
def windows(draw):
    k = draw(st.integers(1, 5))
    out = []
    for line in range(draw(st.integers(1, 12))):
        n = draw(st.integers(1, 300))
        c, prev = [], n
        for _ in range(k):
            prev = draw(st.integers(0, prev))  # c_i <= c_(i-1): a survival count
            c.append(prev)
        out.append(obs(n, sum(c), tuple(c), line=line + 1))
    return k, out


@settings(max_examples=150, deadline=None)
@given(windows())
def test_pooled_counts_property(data):
    k, records = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowSampleWarning)
        cell = fit_cell(records, k=k, n_resamples=200, rng=0)
    n = sum(o.drafts for o in records)
    a = sum(o.accepted for o in records)
    assert cell.mean_acceptance_length == 1 + a / n
    assert cell.n_steps == n
    s = cell.per_position.survival
    assert np.all(np.diff(s) <= 1e-15) and 0 <= s[-1] and s[0] <= 1
    assert sum(s) == pytest.approx(cell.mean_acceptance_length - 1, rel=1e-12, abs=1e-12)
    lo, hi = cell.confidence_interval
    assert lo <= cell.mean_acceptance_length <= hi
