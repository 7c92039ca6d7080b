"""Property tests: exact decimal conversion, curve-file round trip, the fast lookup parser."""

from decimal import Decimal

from hypothesis import example, given, settings
from hypothesis import strategies as st

from goldenal.commands.lookup import fast_args
from goldenal.golden.curvefile import parse_curve_text, render_curve
from goldenal.engines import add_decimal, knob_value
from goldenal.golden.registry import Curve

two_decimals = st.decimals(min_value=Decimal("-50"), max_value=Decimal("50"), places=2,
                           allow_nan=False, allow_infinity=False)


@given(two_decimals, st.integers(-5, 5))
def test_add_decimal_is_exact_decimal_arithmetic(value, delta):
    text = f"{value:.2f}"
    assert Decimal(add_decimal(text, delta)) == Decimal(text) + delta
    assert len(add_decimal(text, delta).partition(".")[2]) == 2


@given(st.integers(101, 900))
def test_trtllm_value_is_al_minus_one_with_two_decimals(hundredths):
    al = f"{hundredths / 100:.2f}"
    assert knob_value("trtllm", al) == f"{(hundredths - 100) / 100:.2f}"
    assert knob_value("vllm", al) == al


def test_trtllm_cannot_express_al_one():
    """Regression: AL 1.00 became 0.00, which TensorRT-LLM reads as 'forcing off'."""
    import pytest

    from goldenal.core.errors import PolicyError

    with pytest.raises(PolicyError, match="reads as 'forcing off'"):
        knob_value("trtllm", "1.00")


@st.composite
def curves(draw):
    cells = {}
    for mode in draw(st.sets(st.sampled_from(["on", "off"]), min_size=1)):
        ks = draw(st.sets(st.integers(1, 12), min_size=1, max_size=8))
        cells[mode] = {k: (f"{draw(st.integers(100, 100 * (k + 1))) / 100:.2f}"
                           if draw(st.integers(0, 9)) else "N/A") for k in ks}
    model = draw(st.from_regex(r"[a-z][a-z0-9.\-]{0,20}", fullmatch=True))
    return Curve("c", model, cells, provenance={"source_run": "https://example.org/r/1"})


@given(curves())
@settings(max_examples=60)
def test_render_then_parse_gives_back_the_exact_cells(curve):
    parsed = parse_curve_text(render_curve(curve), "c.yaml")
    assert parsed.errors == []
    assert parsed.model == curve.model
    assert parsed.cells == curve.cells


def _argparse_args(argv):

    from goldenal.cli import build_parser

    parser = build_parser("lookup")
    try:
        ns = parser.parse_args(["lookup", *argv])
    except SystemExit:
        return None
    # argparse's bookkeeping (the command, its runner and parser) is not a lookup argument
    return {k: v for k, v in vars(ns).items()
            if k not in ("command", "run") and not k.startswith("_")}


TOKENS = st.sampled_from(["qwen3.5", "minimax-m3", "--k", "3", "0", "x", "--thinking", "on",
                          "off", "--draft", "Inferact/MiniMax-M3-EAGLE3", "--curve",
                          "qwen3.5_mtp", "--variant", "a=b", "--engine", "trtllm", "tgi",
                          "--format", "json", "env", "--golden-dir", "/tmp", "--k=4",
                          "--thinking=off", "-h", "--", "--thin", "--k=", "-x"])


@given(st.lists(TOKENS, max_size=10))
@example(["--k=4", "--thinking=off"])  # the fast parser answers: compare every field
@settings(max_examples=400, deadline=None)
def test_fast_parser_agrees_with_argparse_whenever_it_answers(argv):
    fast = fast_args(argv)
    if fast is None:
        return
    values = {k: v for k, v in vars(fast).items() if k != "run"}
    assert values == _argparse_args(argv)


def test_fast_parser_answers_the_common_forms():
    for argv in (["qwen3.5", "--k", "3", "--thinking", "on"],
                 ["--curve", "c", "--k=3", "--thinking=off", "--engine", "trtllm"],
                 ["m", "--k", "3", "--thinking", "on", "--variant", "a=b", "--variant", "c=d"]):
        assert fast_args(argv) is not None
