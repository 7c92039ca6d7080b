"""Plots and the exact per-position arithmetic behind them.

Figures are checked by content (axis labels, lines, ceiling, bar heights),
both on the returned artists and in the SVG files ``goldenal plot`` writes.
"""

import math
import re
import xml.etree.ElementTree as ET
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from goldenal import plot  # noqa: E402
from goldenal.golden.registry import Curve, load_registry  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def registry():
    return load_registry()


# Committed values of minimaxm3_eagle3.yaml and minimaxm3_eagle3_gqa.yaml
# (InferenceX golden_al_distribution, runs 28061204145 and 29784780049).
MHA = Curve("minimaxm3_eagle3", "minimax-m3", {
    "on": {1: "1.78", 2: "2.38", 3: "2.83", 4: "3.11"},
    "off": {1: "1.84", 2: "2.52", 3: "2.93", 4: "3.41"},
}, method="eagle3", draft=("Inferact/MiniMax-M3-EAGLE3",))
GQA = Curve("minimaxm3_eagle3_gqa", "minimax-m3", {
    "on": {1: "1.79", 2: "2.39", 3: "2.78", 4: "3.02"},
    "off": {1: "1.83", 2: "2.46", 3: "2.97", 4: "3.29"},
}, method="eagle3", draft=("Inferact/MiniMax-M3-EAGLE3-GQA",))


# ---------------------------------------------------------------- arithmetic

def test_schedule_matches_vllm_worked_example():
    # docs/engines.md §1.10: K=3, AL 2.83 resolves to rates [1.0, 0.83, 0.0]
    # and logs "Avg Draft acceptance rate: 61.0%" (= 1.83 / 3).
    rates = plot.min_variance_schedule("2.83", 3)
    assert rates == (F(1), F(83, 100), F(0))
    assert sum(rates) / 3 == F(61, 100)
    assert plot.conditional_rates(rates) == (F(1), F(83, 100), F(0))


@pytest.mark.parametrize("al, k, expected", [
    ("1", 3, (0, 0, 0)),
    ("1.00", 1, (0,)),
    ("4", 3, (1, 1, 1)),
    ("2", 2, (1, 0)),
    ("3.78", 7, (1, 1, F(78, 100), 0, 0, 0, 0)),
    ("9", 8, (1,) * 8),
    (2.5, 4, (1, F(1, 2), 0, 0)),
    (F(7, 3), 2, (1, F(1, 3))),
])
def test_schedule_values(al, k, expected):
    assert plot.min_variance_schedule(al, k) == tuple(F(x) for x in expected)


@pytest.mark.parametrize("al, k, message", [
    ("0.99", 3, r"`al` must be in \[1, 4\] for K=3, got 0.99"),
    ("4.01", 3, r"`al` must be in \[1, 4\] for K=3, got 4.01"),
    ("2", 0, r"`k` must be a positive integer, got 0"),
    ("2", True, r"`k` must be a positive integer, got True"),
    ("x", 3, r"expected a number, got 'x'"),
])
def test_schedule_refuses(al, k, message):
    with pytest.raises(ValueError, match=message):
        plot.min_variance_schedule(al, k)


def test_schedule_variance_atom_1948():
    # ROCm/ATOM#1948 commit message: variance 0.17 for the minimum-variance
    # schedule at AL 3.78, K=7 (docs/engines.md §4.3): 0.78 * 0.22.
    var = plot.accepted_drafts_variance(plot.min_variance_schedule("3.78", 7))
    assert var == F(1716, 10000)
    assert round(float(var), 2) == 0.17


def test_implied_survival_minimax_on():
    s = plot.implied_survival(MHA.cells["on"], 3)
    assert s == (F(78, 100), F(60, 100), F(45, 100))
    assert plot.conditional_rates(s) == (F(78, 100), F(10, 13), F(3, 4))
    # hand-worked: P(X=j) = .22, .18, .15, .45; E X = 1.83; E X^2 = 4.83
    assert plot.accepted_drafts_distribution(s) == (F(22, 100), F(18, 100), F(15, 100),
                                                    F(45, 100))
    assert plot.accepted_drafts_variance(s) == F(14811, 10000)
    assert plot.accepted_drafts_variance(plot.min_variance_schedule("2.83", 3)) == F(1411, 10000)


def test_implied_survival_needs_every_k():
    with pytest.raises(KeyError):
        plot.implied_survival({1: "1.8", 3: "2.9"}, 3)
    with pytest.raises(KeyError):
        plot.implied_survival({1: "1.8", 2: "N/A"}, 2)


def test_conditional_undefined_after_zero():
    assert plot.conditional_rates((F(1, 2), F(0), F(0))) == (F(1, 2), F(0), None)


def test_non_monotone_survival_has_no_distribution():
    # dsv4-pro-0813-dspark thinking on: AL(7) = 3.73 < AL(6) = 3.77
    cells = {1: "1.84", 2: "2.51", 3: "3.01", 4: "3.36", 5: "3.61", 6: "3.77", 7: "3.73"}
    s = plot.implied_survival(cells, 7)
    assert s[-1] == F(-4, 100)
    assert not plot.is_survival(s)
    with pytest.raises(ValueError, match=r"`survival` must be non-increasing within \[0, 1\]"):
        plot.accepted_drafts_variance(s)


def _naive_variance(survival):
    # reference: enumerate X from its pmf with floats, no closed form
    k = len(survival)
    full = [1.0] + [float(x) for x in survival] + [0.0]
    pmf = [full[j] - full[j + 1] for j in range(k + 1)]
    mean = sum(j * p for j, p in enumerate(pmf))
    return sum((j - mean) ** 2 * p for j, p in enumerate(pmf))


survivals = st.lists(st.fractions(min_value=0, max_value=1, max_denominator=100),
                     min_size=1, max_size=8).map(lambda xs: tuple(sorted(xs, reverse=True)))


@settings(max_examples=200, deadline=None)
@given(survivals)
def test_variance_matches_naive_reference(survival):
    assert math.isclose(float(plot.accepted_drafts_variance(survival)),
                        _naive_variance(survival), abs_tol=1e-12)


@settings(max_examples=200, deadline=None)
@given(survivals)
def test_schedule_is_minimum_variance(survival):
    # any distribution on 0..K with the same mean has at least the variance of
    # the two-point schedule on floor/ceil of the mean
    k = len(survival)
    al = 1 + sum(survival)
    schedule = plot.min_variance_schedule(al, k)
    assert sum(schedule) == sum(survival)
    assert plot.is_survival(schedule)
    assert plot.accepted_drafts_variance(schedule) <= plot.accepted_drafts_variance(survival)


# ---------------------------------------------------------------- AL vs K

def test_al_plot_content():
    art = plot.plot_al_curve([MHA, GQA])
    ax = art.ax
    assert ax.get_xlabel() == "K = num_speculative_tokens (draft tokens per step)"
    assert ax.get_ylabel() == "acceptance length AL (tokens per verification step)"
    assert len(art["lines"]) == 4
    assert [line.get_gid() for line in art["lines"]] == [
        "al:minimaxm3_eagle3:on", "al:minimaxm3_eagle3:off",
        "al:minimaxm3_eagle3_gqa:on", "al:minimaxm3_eagle3_gqa:off"]
    on, off, gqa_on, gqa_off = art["lines"]
    assert list(on.get_ydata()) == [1.78, 2.38, 2.83, 3.11]
    assert list(gqa_off.get_ydata()) == [1.83, 2.46, 2.97, 3.29]
    # one colour per curve, one line style per thinking mode
    assert on.get_color() == off.get_color() != gqa_on.get_color() == gqa_off.get_color()
    assert on.get_linestyle() == gqa_on.get_linestyle() == "-"
    assert off.get_linestyle() == gqa_off.get_linestyle() == "--"
    (ceiling,) = art["ceiling"]
    assert list(ceiling.get_xdata()) == [1, 2, 3, 4]
    assert list(ceiling.get_ydata()) == [2, 3, 4, 5]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "MiniMax-M3-EAGLE3, thinking on",
        "MiniMax-M3-EAGLE3, thinking off",
        "MiniMax-M3-EAGLE3-GQA, thinking on",
        "MiniMax-M3-EAGLE3-GQA, thinking off",
        "ceiling AL = K + 1",
    ]
    assert len(art["committed"]) == 4 and not art["predicted"] and not art["bands"]


def test_al_plot_one_mode_on_given_axes():
    fig, ax = plt.subplots()
    art = plot.plot_al_curve(MHA, thinking="off", ax=ax)
    assert art.ax is ax and art.figure is fig
    assert [line.get_gid() for line in art["lines"]] == ["al:minimaxm3_eagle3:off"]
    assert ax.get_title() == "Acceptance length vs K (thinking off)"


def test_al_plot_bands_and_predictions_are_distinct():
    series = [
        plot.ALSeries(curve="fit", label="EAGLE3, fit", thinking="on", k=(1, 2, 3),
                      al=(1.8, 2.4, 2.8), committed=(True, True, True),
                      low=(1.7, 2.3, float("nan")), high=(1.9, 2.5, float("nan")),
                      confidence_level=0.95, flagged=(2,)),
        plot.ALSeries(curve="fit", label="EAGLE3, fit model", thinking="on", k=(1, 2, 3, 4),
                      al=(1.8, 2.35, 2.8, 3.1), committed=(False,) * 4),
    ]
    art = plot.plot_al_curve(series)
    assert len(art["lines"]) == 1
    assert len(art["bands"]) == 1
    (filled,) = art["committed"]
    assert filled.get_markerfacecolor() == filled.get_markeredgecolor()
    marker = [a for a in art["predicted"] if a.get_gid() == "predicted:fit:on"][0]
    assert marker.get_markerfacecolor() == "white"
    assert list(marker.get_ydata()) == [1.8, 2.35, 2.8, 3.1]
    (ring,) = art["flags"]
    assert list(ring.get_xdata()) == [2.0] and list(ring.get_ydata()) == [2.4]
    legend = [t.get_text() for t in art.ax.get_legend().get_texts()]
    assert legend[-4:] == ["measured / committed value", "fitted prediction (cross-K model)",
                           "flagged: disagrees with the model",
                           "95% interval: EAGLE3, fit, thinking on"]


def test_al_plot_refuses_nothing():
    from goldenal.core.errors import UnknownCurve

    only_on = Curve("x", "m", {"on": {1: "1.5"}}, method="mtp")
    with pytest.raises(UnknownCurve, match="nothing to plot: x has no committed or fitted AL "
                       "for thinking off"):
        plot.plot_al_curve(only_on, thinking="off")
    with pytest.raises(TypeError, match="cannot plot dict as an AL curve"):
        plot.plot_al_curve({"on": {}})


def test_head_labels(registry):
    assert plot.head_label(registry["qwen3.5_mtp"]) == "qwen3.5-397b-a17b-nvfp4 native MTP"
    assert plot.head_label(registry["dsv4-pro-0813-dspark"]) == (
        "deepseek-v4-pro-0813 DSPARK [draft_sample_method=probabilistic]")
    assert plot.head_label(MHA) == "MiniMax-M3-EAGLE3"
    variant = Curve("v", "kimi-k3", {"on": {1: "1.85"}}, method="dspark",
                    draft=("Inferact/Kimi-K3-DSpark",),
                    variant={"rejection_sample_method": "block",
                             "draft_sample_method": "probabilistic"})
    assert plot.head_label(variant) == ("Kimi-K3-DSpark [draft_sample_method=probabilistic, "
                                        "rejection_sample_method=block]")
    art = plot.plot_al_curve(variant)
    assert [t.get_text() for t in art.ax.get_legend().get_texts()][0] == (
        "Kimi-K3-DSpark, thinking on\n"
        "[draft_sample_method=probabilistic, rejection_sample_method=block]")


def test_block_parallel_positions_are_marked(registry):
    art = plot.plot_positions(registry["kimik3_dspark"], k=3, thinking="on")
    assert [n.get_text() for n in art["notes"]] == [
        "block-parallel drafting: each K is drafted afresh,\n"
        "so AL(i) - AL(i-1) is no survival; orientation only"]


# ---------------------------------------------------------------- positions

def test_positions_plot_content():
    art = plot.plot_positions(MHA, k=3, thinking="on")
    ax = art.ax
    assert ax.get_xlabel() == "draft position i (1 = first drafted token)"
    assert ax.get_ylabel() == "probability (per verification step)"
    heights = {role: [round(p.get_height(), 10) for p in art[role][0]]
               for role in ("survival", "conditional", "schedule")}
    assert heights == {"survival": [0.78, 0.6, 0.45],
                       "conditional": [0.78, round(10 / 13, 10), 0.75],
                       "schedule": [1.0, 0.83, 0.0]}
    assert ax.get_title() == "minimaxm3_eagle3 (MiniMax-M3-EAGLE3)\nthinking on, K=3, AL=2.83"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "survival S(i), implied by AL(i) - AL(i-1)",
        "conditional acceptance a_i = S(i)/S(i-1)",
        "vLLM min-variance schedule for AL 2.83"]
    assert not art["errorbars"] and not art["notes"]


def test_positions_flag_noisy_means():
    # minimaxm3_eagle3 thinking off: AL(4) - AL(3) = 0.48 > AL(3) - AL(2) = 0.41
    art = plot.plot_positions(MHA, k=4, thinking="off")
    assert [n.get_text() for n in art["notes"]] == [
        "impossible profile, not drawn (×):\na_4 = 1.17 > 1\n"
        "(neighbouring AL means differ\nby less than their noise)"]
    assert [round(p.get_height(), 10) for p in art["conditional"][0]][3] == 0.0
    assert [(round(t.get_position()[0], 2), t.get_text()) for t in art["impossible"]] == [
        (4.0, "×")]


def test_positions_never_draw_impossible_values():
    cells = {1: "1.80", 2: "1.90", 3: "2.20", 4: "2.15"}  # S = .8, .1, .3, -.05
    art = plot.plot_positions(Curve("c", "m", {"on": cells}, method="mtp"), k=4, thinking="on")
    survival = [round(p.get_height(), 10) for p in art["survival"][0]]
    conditional = [round(p.get_height(), 10) for p in art["conditional"][0]]
    assert survival == [0.8, 0.1, 0.3, 0.0]           # S(4) = -0.05 is not drawn
    assert conditional == [0.8, 0.125, 0.0, 0.0]      # a_3 = 3.0 and a_4 < 0 are not drawn
    assert all(0 <= h <= 1 for h in survival + conditional)
    assert art.ax.get_ylim() == (-0.05, 1.5)
    assert len(art["impossible"]) == 3
    assert art["notes"][0].get_text().startswith(
        "impossible profile, not drawn (×):\na_3 = 3.00 > 1\nS(4) = -0.05 < 0\n")
    assert plot.impossible_positions(plot.implied_survival(cells, 4)) == [
        "a_3 = 3.00 > 1", "S(4) = -0.05 < 0"]


def test_positions_default_to_the_largest_k_with_a_possible_profile(registry):
    assert plot.meaningful_k(MHA.cells["off"]) == 3      # a_4 = 1.17
    assert plot.meaningful_k(registry["minimaxm3_eagle3"].cells["off"]) == 3
    assert plot.meaningful_k(registry["minimaxm3_eagle3"].cells["on"]) == 7
    assert plot.meaningful_k(registry["qwen3.5_mtp"].cells["on"]) == 8
    assert plot.meaningful_k({1: "1.80"}) == 1
    fig = plot.figure([registry["minimaxm3_eagle3"]], kind="positions")
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == [
        "minimaxm3_eagle3 (MiniMax-M3-EAGLE3)\nthinking on, K=7, AL=3.53\n(committed up to "
        "K=8; beyond K=7 the means imply an impossible profile)",
        "minimaxm3_eagle3 (MiniMax-M3-EAGLE3)\nthinking off, K=3, AL=2.93\n(committed up to "
        "K=8; beyond K=3 the means imply an impossible profile)"]
    fig = plot.figure([registry["minimaxm3_eagle3"]], kind="positions", k=8, thinking="off")
    assert fig.axes[0].get_title().endswith("thinking off, K=8, AL=4.06")


def test_positions_profile_frame_and_intervals():
    prof = plot.position_profile(GQA, k=2, thinking="off")
    frame = prof.to_frame()
    assert list(frame["survival"].round(10)) == [0.83, 0.63]
    assert list(frame["schedule_survival"]) == [1.0, 0.46]
    assert prof.variance == F(83, 100) * 1 + F(63, 100) * 3 - F(146, 100) ** 2
    assert prof.schedule_variance == F(46, 100) * F(54, 100)
    with_ci = plot.PositionProfile(
        curve="run", label="fit", thinking="on", k=2, al="2.40", survival=(0.8, 0.6),
        conditional=(0.8, 0.75), schedule=plot.min_variance_schedule("2.40", 2),
        survival_low=(0.75, 0.52), survival_high=(0.85, 0.66), source="measured",
        confidence_level=0.95)
    art = plot.plot_positions(with_ci)
    (eb,) = art["errorbars"]
    segments = eb.lines[2][0].get_segments()
    assert [tuple(round(y, 10) for y in (seg[0][1], seg[1][1])) for seg in segments] == [
        (0.75, 0.85), (0.52, 0.66)]
    assert art.ax.get_legend().get_texts()[1].get_text() == "95% interval of S(i)"


def test_positions_refuse_missing_cells():
    from goldenal.core.errors import UnknownCurve

    with pytest.raises(UnknownCurve, match=r"minimaxm3_eagle3, thinking on: no committed AL "
                       r"for K=5.*committed K: 1, 2, 3, 4"):
        plot.plot_positions(MHA, k=5, thinking="on")
    with pytest.raises(ValueError, match="`k` and `thinking` are required"):
        plot.plot_positions(MHA)


# ---------------------------------------------------------------- diff

class _Diff:
    """A diff result reduced to what plot_diff reads: ``to_frame()``, sides, level."""

    confidence_level = 0.95

    def __init__(self, frame):
        self._frame = frame
        self.a, self.b = MHA, GQA

    def to_frame(self):
        return self._frame


def test_diff_plot_given_bounds():
    import pandas as pd

    frame = pd.DataFrame({
        "thinking": ["on", "on", "off", "off"], "k": [1, 2, 1, 2],
        "delta": [0.01, 0.01, -0.01, -0.06],
        "delta_low": [-0.02, -0.03, -0.04, -0.1], "delta_high": [0.04, 0.05, 0.02, -0.02],
    })
    art = plot.plot_diff(_Diff(frame))
    ax = art.ax
    assert ax.get_xlabel() == "K = num_speculative_tokens (draft tokens per step)"
    assert ax.get_ylabel() == "AL difference (tokens per verification step)"
    assert [line.get_gid() for line in art["lines"]] == ["diff:on", "diff:off"]
    assert list(art["lines"][0].get_xdata()) == [0.92, 1.92]  # modes side by side
    assert list(art["lines"][1].get_ydata()) == [-0.01, -0.06]
    assert len(art["errorbars"]) == 2
    assert ax.get_title() == "minimaxm3_eagle3_gqa minus minimaxm3_eagle3, per cell"
    only_off = plot.plot_diff(_Diff(frame), thinking="off")
    assert [line.get_gid() for line in only_off["lines"]] == ["diff:off"]


def test_diff_frame_from_standard_errors():
    import pandas as pd

    # the shape of CurveDiff.to_frame(): indexed by (thinking, k), se where known
    frame = pd.DataFrame({
        "thinking": ["on", "on", "on"], "k": [1, 2, 3], "a": ["1.78", "2.38", "2.83"],
        "b": ["1.80", "2.50", None], "delta": [0.02, 0.12, None], "se": [0.01, None, None],
        "z": [2.0, None, None], "status": ["outside", "no interval", "only in A"],
    }).set_index(["thinking", "k"])
    out = plot.diff_frame(_Diff(frame))
    q = 1.959963984540054  # two-sided 95% normal quantile
    assert out["interval"].tolist() == ["se", "rounding", None]
    assert out["low"].round(12).tolist()[:2] == [round(0.02 - q * 0.01, 12), 0.11]
    assert out["high"].round(12).tolist()[:2] == [round(0.02 + q * 0.01, 12), 0.13]
    art = plot.plot_diff(_Diff(frame))
    assert len(art["outside"]) == 1 and list(art["outside"][0].get_ydata()) == [0.02]
    assert [t.get_text() for t in art.ax.get_legend().get_texts()] == [
        "thinking on", "95% interval of the difference",
        "±0.01: two-decimal rounding only (no interval known)", "outside the interval"]


def test_diff_plot_of_committed_heads():
    from goldenal.stats.diff import diff_curves

    result = diff_curves(MHA, GQA)
    art = plot.plot_diff(result)
    on, off = art["lines"]
    assert [round(y, 10) for y in on.get_ydata()] == [0.01, 0.01, -0.05, -0.09]
    assert [round(y, 10) for y in off.get_ydata()] == [-0.01, -0.06, 0.04, -0.12]
    # committed values only: the error bars are the +-0.01 rounding bound
    segments = art["errorbars"][0].lines[2][0].get_segments()
    assert [round(seg[1][1] - seg[0][1], 10) for seg in segments] == [0.02] * 4
    assert not art["outside"]


# ---------------------------------------------------------------- CLI

def _svg(path):
    """(gids, texts) of an SVG written with text kept as text."""
    root = ET.parse(path).getroot()
    gids = [el.get("id") for el in root.iter() if el.get("id")]
    texts = ["".join(el.itertext()) for el in root.iter() if el.tag.endswith("text")]
    return gids, texts


def _published_ids(registry):
    return sorted(registry.curves)


@pytest.mark.parametrize("kind", ["al", "positions"])
def test_cli_every_published_curve(registry, run_cli, tmp_path, kind):
    for cid in _published_ids(registry):
        curve = registry[cid]
        out = tmp_path / f"{cid}_{kind}.svg"
        code, stdout, stderr = run_cli("plot", cid, "--kind", kind, "--out", out)
        assert (code, stdout, stderr) == (0, f"{out}\n", f"wrote {kind} plot of {cid}\n")
        gids, texts = _svg(out)
        modes = [m for m in ("on", "off") if curve.cells.get(m)]
        if kind == "al":
            assert "K = num_speculative_tokens (draft tokens per step)" in texts
            assert "acceptance length AL (tokens per verification step)" in texts
            assert [g for g in gids if g.startswith("al:")] == [f"al:{cid}:{m}" for m in modes]
            assert gids.count("ceiling") == 1
            assert "ceiling AL = K + 1" in texts
        else:
            assert texts.count("draft position i (1 = first drafted token)") == len(modes)
            ks = [plot.meaningful_k(curve.cells[m]) for m in modes]
            for m, k in zip(modes, ks):
                assert f"thinking {m}, K={k}, AL={curve.cells[m][k]}" in texts
                if k < 8:
                    assert (f"(committed up to K=8; beyond K={k} the means imply an "
                            "impossible profile)") in texts
            assert len([g for g in gids if g.startswith("schedule:")]) == sum(ks)
            # the default cell never needs a value left undrawn
            assert "impossible" not in gids


def test_cli_diff_every_published_curve(registry, run_cli, tmp_path):
    ids = _published_ids(registry)
    for a, b in zip(ids, ids[1:] + ids[:1]):
        out = tmp_path / f"{a}_diff.svg"
        code, stdout, stderr = run_cli("plot", a, b, "--kind", "diff", "--out", out)
        assert (code, stdout, stderr) == (0, f"{out}\n", f"wrote diff plot of {a}, {b}\n")
        gids, texts = _svg(out)
        assert "AL difference (tokens per verification step)" in texts
        shared = [m for m in ("on", "off")
                  if registry[a].cells.get(m) and registry[b].cells.get(m)]
        assert [g for g in gids if g.startswith("diff:")] == [f"diff:{m}" for m in shared]
        assert [g for g in gids if g.startswith("interval:")] == [
            f"interval:rounding:{m}" for m in shared]
        assert "zero" in gids


def test_cli_model_name_means_all_its_curves(run_cli, tmp_path):
    out = tmp_path / "heads.svg"
    code, _, err = run_cli("plot", "minimax-m3", "--thinking", "on", "--out", out)
    assert code == 0
    assert err == "wrote al plot of minimaxm3_eagle3, minimaxm3_eagle3_gqa\n"
    gids, _ = _svg(out)
    assert [g for g in gids if g.startswith("al:")] == [
        "al:minimaxm3_eagle3:on", "al:minimaxm3_eagle3_gqa:on"]


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_cli_formats(run_cli, tmp_path, ext, magic):
    out = tmp_path / f"glm.{ext}"
    code, _, _ = run_cli("plot", "glm5.2_mtp", "--kind", "positions", "--k", "3",
                         "--out", out)
    assert code == 0
    assert out.read_bytes().startswith(magic)
    assert [p.name for p in tmp_path.iterdir()] == [f"glm.{ext}"]  # no temp file left


def test_cli_svg_is_reproducible(run_cli, tmp_path):
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    assert run_cli("plot", "qwen3.5_mtp", "--out", a)[0] == 0
    assert run_cli("plot", "qwen3.5_mtp", "--out", b)[0] == 0
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("argv, code, message", [
    (["qwen3.5_mtp", "--out", "{tmp}/x.jpg"], 2,
     "error: --out must end in .png, .svg or .pdf, got '{tmp}/x.jpg'\n"),
    (["no-such-curve", "--out", "{tmp}/x.png"], 1,
     "error: no curve or model 'no-such-curve' (curves: "),
    (["qwen3.5_mtp", "--kind", "diff", "--out", "{tmp}/x.png"], 2,
     "error: --kind diff needs exactly two curves, got 1 (qwen3.5_mtp)\n"),
    (["qwen3.5_mtp", "--k", "3", "--out", "{tmp}/x.png"], 2,
     "error: --k applies to --kind positions only\n"),
    (["qwen3.5_mtp", "--kind", "positions", "--k", "9", "--out", "{tmp}/x.png"], 1,
     "error: curve qwen3.5_mtp, thinking on: no committed AL for K=9, needed to imply "
     "per-position survival up to K=9 (committed K: 1, 2, 3, 4, 5, 6, 7, 8)\n"),
    (["glm5.2_mtp", "--thinking", "off", "--out", "{tmp}/x.png"], 1,
     "error: nothing to plot: glm5.2_mtp has no committed or fitted AL for thinking off\n"),
    (["glm5.2_mtp", "--kind", "positions", "--k", "0", "--out", "{tmp}/x.png"], 2,
     "error: --k must be a positive integer, got 0\n"),
    (["glm5.2_mtp", "--kind", "positions", "--thinking", "off", "--out", "{tmp}/x.png"], 1,
     "error: no committed cells to plot for thinking off\n"),
    (["{tmp}", "--out", "{tmp}/x.png"], 2,
     "error: {tmp}: no run.yaml and no collector files (server_{on,off}_mtp{K}.log, "
     "speedbench_{on,off}_mtp{K}*.json)\n"),
])
def test_cli_errors_write_nothing(run_cli, tmp_path, argv, code, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    got, out, err = run_cli("plot", *argv)
    assert got == code
    assert out == ""
    assert err.startswith(message.replace("{tmp}", str(tmp_path)))
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_cli_missing_output_directory(run_cli, tmp_path):
    code, out, err = run_cli("plot", "qwen3.5_mtp", "--out", tmp_path / "no" / "x.png")
    assert (code, out, err) == (2, "", f"error: {tmp_path / 'no'}: no such directory\n")


def test_cli_requires_out(run_cli):
    code, out, err = run_cli("plot", "qwen3.5_mtp")
    assert code == 2
    assert re.search(r"error: the following arguments are required: --out", err)


# ---------------------------------------------------------------- fits

@pytest.fixture(scope="module")
def example_fit():
    import warnings

    from goldenal.stats import fit
    from goldenal.readers import load_run

    from conftest import ROOT

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(load_run(ROOT / "measurements" / "minimaxm3-eagle3-sim-2026-11"), rng=7,
                   n_resamples=999)


def test_fit_plot_bands_predictions_and_flag(example_fit):
    art = example_fit.plot()  # CurveFit.plot delegates to plot_al_curve
    assert isinstance(art, plot.PlotArtists)
    assert [line.get_gid() for line in art["lines"]] == [
        "al:minimaxm3-eagle3-sim-2026-11:on", "al:minimaxm3-eagle3-sim-2026-11:off"]
    on = art["lines"][0]
    assert list(on.get_ydata()) == [example_fit.cells[("on", k)].mean_acceptance_length
                                    for k in range(1, 7)]
    assert len(art["bands"]) == 4  # cells and model, per mode
    model_lines = [a for a in art["predicted"] if a.get_gid().startswith("model:")]
    assert len(model_lines) == 2
    (ring,) = art["flags"]
    assert ring.get_gid() == "flagged:minimaxm3-eagle3-sim-2026-11:off"
    assert list(ring.get_xdata()) == [4.0]
    legend = [t.get_text() for t in art.ax.get_legend().get_texts()]
    assert legend[:2] == ["MiniMax-M3-EAGLE3 (fit, simulated), thinking on",
                          "MiniMax-M3-EAGLE3 (fit, simulated), thinking off"]
    # one legend entry per band, in the band's own colour and shade
    entries = dict(zip(legend, art.ax.get_legend().legend_handles))
    band_entries = [text for text in legend if text.startswith("95% ")]
    assert len(band_entries) == len(art["bands"]) == 4
    assert band_entries[0] == "95% interval: MiniMax-M3-EAGLE3 (fit, simulated), thinking on"
    assert sum("band of the cross-K model" in text for text in band_entries) == 2
    for band, text in zip(art["bands"], band_entries):
        patch = entries[text]
        assert tuple(patch.get_facecolor()) == tuple(band.get_facecolor()[0])


def test_fit_cell_positions_have_intervals(example_fit):
    cell = example_fit.cells[("on", 3)]
    art = cell.plot()  # CellFit.plot delegates to plot_positions
    pp = cell.per_position
    assert [p.get_height() for p in art["survival"][0]] == list(pp.survival)
    (eb,) = art["errorbars"]
    segments = eb.lines[2][0].get_segments()
    assert [(seg[0][1], seg[1][1]) for seg in segments] == list(zip(pp.survival_low,
                                                                    pp.survival_high))
    assert [p.get_height() for p in art["schedule"][0]] == [
        float(r) for r in plot.min_variance_schedule(cell.text, 3)]
    prof = plot.position_profile(example_fit, k=3, thinking="on")
    assert prof.source == "measured" and prof.al == cell.text
    assert prof.variance > prof.schedule_variance


def test_chain_model_plot(example_fit):
    art = example_fit.models["off"].plot()
    assert [a.get_gid() for a in art["flags"]] == ["flagged:chain model:off"]
    assert len(art["ceiling"]) == 1


def test_plot_of_fit_against_committed_curve(example_fit, registry):
    art = plot.plot_al_curve([registry["minimaxm3_eagle3"], example_fit], thinking="on")
    assert [line.get_gid() for line in art["lines"]] == [
        "al:minimaxm3_eagle3:on", "al:minimaxm3-eagle3-sim-2026-11:on"]
    assert art["lines"][0].get_color() != art["lines"][1].get_color()
    assert list(art["ceiling"][0].get_xdata()) == list(range(1, 9))


def test_cli_run_directory_is_fitted_and_drawn(run_cli, tmp_path):
    from conftest import ROOT

    run = ROOT / "measurements" / "minimaxm3-eagle3-sim-2026-11"
    out = tmp_path / "run.svg"
    code, stdout, stderr = run_cli("plot", "minimaxm3_eagle3", run, "--out", out)
    assert code == 1 and "the run is simulated" in stderr and not out.exists()
    code, stdout, stderr = run_cli("plot", "minimaxm3_eagle3", run, "--allow-simulated",
                                   "--out", out)
    assert (code, stdout) == (0, f"{out}\n")
    assert stderr.endswith("wrote al plot of minimaxm3_eagle3, minimaxm3-eagle3-sim-2026-11\n")
    gids, texts = _svg(out)
    assert [g for g in gids if g.startswith("al:")] == [
        "al:minimaxm3_eagle3:on", "al:minimaxm3_eagle3:off",
        "al:minimaxm3-eagle3-sim-2026-11:on", "al:minimaxm3-eagle3-sim-2026-11:off"]
    assert "flagged:minimaxm3-eagle3-sim-2026-11:off" in gids
    assert "MiniMax-M3-EAGLE3 (fit, simulated), thinking off" in texts
    out = tmp_path / "pos.svg"
    code, _, _ = run_cli("plot", run, "--kind", "positions", "--k", "2", "--thinking", "on",
                         "--allow-simulated", "--out", out)
    assert code == 0
    _, texts = _svg(out)
    assert "minimaxm3-eagle3-sim-2026-11 (MiniMax-M3-EAGLE3)" in texts
    assert any(t.startswith("thinking on, K=2, AL=") for t in texts)
    assert "survival S(i), measured" in texts


def test_cli_curve_file(run_cli, tmp_path):
    from conftest import PACKAGED

    out = tmp_path / "q.svg"
    code, _, err = run_cli("plot", PACKAGED / "qwen3.5_mtp.yaml", "--out", out)
    assert (code, err) == (0, "wrote al plot of qwen3.5_mtp\n")


def test_colours_are_stable_across_figures():
    known = ["a", "b", "c"]
    first = plot.stable_colors(known, ["c", "run-1"])
    second = plot.stable_colors(known, ["b", "c"])
    assert first["c"] == second["c"] == plot.curve_colors(known)["c"]
    assert first["run-1"] not in (first["c"],)
    assert len(set(plot.curve_colors(range(9)).values())) == 9
    assert (0.4980392156862745, 0.4980392156862745, 0.4980392156862745) not in \
        plot.curve_colors(range(9)).values()  # tab10's grey is kept for the ceiling


def test_cli_colour_of_a_curve_does_not_depend_on_its_company(run_cli, tmp_path):
    def colour(svg, gid):
        root = ET.parse(svg).getroot()
        group = [el for el in root.iter() if el.get("id") == gid][0]
        path = [el for el in group.iter() if el.tag.endswith("path")][0]
        return re.search(r"stroke: (#[0-9a-f]{6})", path.get("style")).group(1)

    alone, pair = tmp_path / "alone.svg", tmp_path / "pair.svg"
    assert run_cli("plot", "minimaxm3_eagle3_gqa", "--out", alone)[0] == 0
    assert run_cli("plot", "minimaxm3_eagle3", "minimaxm3_eagle3_gqa", "--out", pair)[0] == 0
    gid = "al:minimaxm3_eagle3_gqa:on"
    assert colour(alone, gid) == colour(pair, gid)
    assert colour(pair, gid) != colour(pair, "al:minimaxm3_eagle3:on")


def test_docstring_examples():
    import doctest

    result = doctest.testmod(plot)
    assert (result.failed, result.attempted >= 4) == (0, True)
