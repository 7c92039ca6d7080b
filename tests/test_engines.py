"""Engine adapters: conversions for every published cell, read-back, span editing."""

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from goldenal.engines import ENGINES, KNOB_NAMES, adapter, add_decimal, read_settings
from goldenal.recipes import spans
from goldenal.engines.atom import read_command_settings
from goldenal.engines.knobs import acceptance_rate
from goldenal.engines.setting import SpecSetting
from goldenal.engines.vllm import parse_speculative_config
from goldenal.core.errors import ParseError, PolicyError
from goldenal.golden.registry import load_registry

DATA = Path(__file__).parent / "data" / "inject"


def _cells():
    reg = load_registry()
    return [(c.id, mode, k, text) for c in reg for mode, cells in c.cells.items()
            for k, text in sorted(cells.items())]


CELLS = _cells()


def test_the_registry_has_112_published_cells():
    assert len(CELLS) == 112


@pytest.mark.parametrize("engine", ENGINES)
def test_every_published_cell_converts_exactly(engine):
    eng = adapter(engine)
    for curve, mode, k, text in CELLS:
        value = eng.convert(text, k=k)
        if engine == "trtllm":
            # AL - 1 with the committed two decimals, never 1.8299999999999998.
            assert value == f"{Decimal(text) - 1:.2f}", (curve, mode, k)
            assert len(value.split(".")[1]) == 2
        else:
            assert value == text, (curve, mode, k)
        if engine == "atom":
            rate = eng.convert(text, k=k, form="rate")
            assert abs(1 + k * Decimal(rate) - Decimal(text)) < Decimal("1e-11")
            assert 0 <= Decimal(rate) <= 1


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", ["shell", "env", "json", "yaml", "args"])
def test_every_published_cell_renders_the_value_in_every_format(engine, fmt):
    eng = adapter(engine)
    for curve, mode, k, text in CELLS:
        value = eng.convert(text, k=k)
        fragment = eng.fragment(text, k=k, fmt=fmt)
        assert value in fragment, (curve, mode, k, fragment)
        if engine == "vllm" and fmt == "json":
            spec = json.loads(fragment)
            assert spec == {"rejection_sample_method": "synthetic",
                            "synthetic_acceptance_length": float(text)}


def test_worked_examples_from_the_engine_notes():
    # docs/engines.md §1.10/§2.8/§3.7/§4.7: golden AL 2.83 at K=3.
    assert adapter("vllm").convert("2.83") == "2.83"
    assert adapter("sglang").fragment("2.83", k=3, fmt="shell") == (
        "export SGLANG_SIMULATE_ACC_LEN=2.83\n"
        "export SGLANG_SIMULATE_ACC_METHOD=match-expected\n"
        "export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token")
    assert adapter("trtllm").fragment("2.83", k=3, fmt="yaml") == \
        'TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "1.83"'
    assert adapter("atom").fragment("2.83", k=3, fmt="args") == \
        "--spec-decode-acceptance-length 2.83"
    assert adapter("atom").fragment("2.83", k=3, fmt="args", form="rate") == \
        "--spec-decode-acceptance-rate 0.61"
    # 4.06 - 1 in binary floating point is 3.0599999999999996.
    assert adapter("trtllm").convert("4.06") == "3.06"
    assert adapter("trtllm").convert("4.80") == "3.80"


def test_atom_rate_is_exact_when_it_terminates_and_12_decimals_otherwise():
    assert acceptance_rate("2.83", 3) == "0.61"
    assert acceptance_rate("2.99", 3) == "0.663333333333"
    assert acceptance_rate("1.00", 4) == "0"


def test_trtllm_refuses_al_one_which_would_turn_forcing_off():
    with pytest.raises(PolicyError, match="AL 1.00 cannot be expressed"):
        adapter("trtllm").convert("1.00")


def test_atom_refuses_the_dspark_confidence_scheduler():
    with pytest.raises(PolicyError, match="DSpark confidence scheduler"):
        adapter("atom").fragment("2.51", k=2, fmt="args",
                                 dspark_config='{"confidence_schedule": true}')
    assert adapter("atom").fragment("2.51", k=2, fmt="args",
                                    dspark_config='{"confidence_schedule": false}') == \
        "--spec-decode-acceptance-length 2.51"


def test_vllm_fragment_merges_into_the_rest_of_the_spec_config():
    text = adapter("vllm").fragment(
        "2.78", k=3, fmt="args",
        spec_config='{"method": "eagle3", "num_speculative_tokens": 3}')
    assert text == ("--speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 3, "
                    "\"rejection_sample_method\": \"synthetic\", "
                    "\"synthetic_acceptance_length\": 2.78}'")


def test_parse_speculative_config_errors_are_parse_errors():
    assert parse_speculative_config('{"method":"mtp"}') == {"method": "mtp"}
    with pytest.raises(ParseError, match="does not parse"):
        parse_speculative_config('{"method":')
    with pytest.raises(ParseError, match="not an object"):
        parse_speculative_config("[1, 2]")


def test_knob_names_cover_every_engine():
    assert set(KNOB_NAMES) == set(ENGINES)
    assert KNOB_NAMES["sglang"][0] == "SGLANG_SIMULATE_ACC_LEN"


# -- read-back ---------------------------------------------------------------

def test_read_settings_of_a_disaggregated_sglang_recipe_with_variants():
    path = str(DATA / "sglang_variants.expected.yaml")
    found = read_settings(path)
    assert [(s.role, s.k, s.knob, s.value, s.line) for s in found] == [
        # the prefill worker (K=1) carries the decode worker's K=2 cell (docs/engines.md §2.4)
        ("prefill", 1, "SGLANG_SIMULATE_ACC_LEN", "2.50", 12),
        ("decode", 2, "SGLANG_SIMULATE_ACC_LEN", "2.50", 18),
        # the zip section's two variants (two names) share its block
        ("decode", 2, "SGLANG_SIMULATE_ACC_LEN", "2.50", 44),
        ("decode", 2, "SGLANG_SIMULATE_ACC_LEN", "2.50", 44),
    ]
    assert found[0] == SpecSetting(
        path=path, line=12, col=34, engine="sglang", role="prefill",
        knob="SGLANG_SIMULATE_ACC_LEN", value="2.50", k=1, draft=None, method="EAGLE",
        variant={}, rejection_sample_method=None, model="glm5.2",
        extra={"SGLANG_SIMULATE_ACC_METHOD": "match-expected",
               "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
               "speculative-eagle-topk": "1", "section": "base"})
    assert [s.extra["section"] for s in found[2:]] == [
        "zip_override_mtp_8k1k_hightpt[0]", "zip_override_mtp_8k1k_hightpt[1]"]


def test_read_settings_follows_merge_keys_and_reads_the_vllm_variant():
    found = read_settings(DATA / "vllm_anchor.expected.yaml")
    assert [(s.role, s.line) for s in found] == [("prefill", 19), ("decode", 19)]
    s = found[1]
    assert (s.engine, s.knob, s.value, s.k, s.draft, s.method) == (
        "vllm", "synthetic_acceptance_length", "3.75", 6, "/tmp/Kimi-K3-DSpark", "dspark")
    assert s.variant == {"draft_sample_method": "probabilistic"}
    assert s.rejection_sample_method == "synthetic"
    assert s.model == "moonshotai/Kimi-K3"


def test_read_settings_of_unpinned_and_config_files():
    found = read_settings(DATA / "vllm_disagg.yaml")
    assert [(s.role, s.knob, s.value, s.k, s.method) for s in found] == [
        ("prefill", None, None, 3, "mtp"), ("decode", None, None, 3, "mtp")]
    (cfg,) = read_settings(DATA / "vllm_config.distribution.expected.yaml")
    assert (cfg.role, cfg.knob, cfg.value, cfg.k) == (
        None, "synthetic_acceptance_rates", "[0.79, 0.6, 0.39]", 3)
    assert cfg.extra["synthetic_acceptance_rates"] == ["0.79", "0.6", "0.39"]
    (trt,) = read_settings(DATA / "trtllm_agg.yaml")
    assert (trt.engine, trt.knob, trt.value, trt.k, trt.line) == (
        "trtllm", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "4.04", 6, 8)
    assert trt.extra == {"num_nextn_predict_layers": "6", "mtp_eagle_one_model": "false"}
    assert read_settings(DATA / "bad_no_spec.yaml") == []


def test_read_settings_of_an_atom_command_line():
    (s,) = read_settings(DATA / "atom_launch.expected.sh")
    assert (s.engine, s.knob, s.value, s.k, s.method, s.model, s.line) == (
        "atom", "--spec-decode-acceptance-length", "2.49", 3, "mtp",
        "deepseek-ai/DeepSeek-V4-Pro", 7)
    assert read_command_settings("x.sh", "echo hello\n") == []


# srt-slurm turns each key into ``--key``; SGLang's argument parser takes the
# unambiguous prefix ``--speculative-algo`` for ``--speculative-algorithm``.
ALGO_RECIPE = """\
name: dsv4-disagg-mtp
model:
  path: deepseek-v4-pro
backend:
  type: sglang
  decode_environment:
    SGLANG_DEFAULT_THINKING: "1"
    SGLANG_SIMULATE_ACC_LEN: "2.71"
  sglang_config:
    prefill:
      served-model-name: "deepseek-ai/DeepSeek-V4-Pro"
      disaggregation-mode: "prefill"
    decode:
      served-model-name: "deepseek-ai/DeepSeek-V4-Pro"
      disaggregation-mode: "decode"
      speculative-algo: "EAGLE"
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
benchmark:
  type: sa-bench
"""


def test_read_settings_takes_sglangs_speculative_algo_spelling_as_the_method():
    (found,) = read_settings("r.yaml", ALGO_RECIPE)
    assert found == SpecSetting(
        path="r.yaml", line=8, col=30, engine="sglang", role="decode",
        knob="SGLANG_SIMULATE_ACC_LEN", value="2.71", k=3, draft=None, method="EAGLE",
        variant={}, rejection_sample_method=None, model="deepseek-v4-pro",
        extra={"speculative-eagle-topk": "1"})
    underscored = ALGO_RECIPE.replace("speculative-algo:", "speculative_algo:")
    assert read_settings("r.yaml", underscored)[0].method == "EAGLE"
    # the audit reads the same site, through the same parser
    from goldenal.auditing.recipe import recipe_configs

    (cfg,) = recipe_configs("sglang/dsv4/agentic/r.yaml", ALGO_RECIPE, ALGO_RECIPE.split("\n"))
    assert (cfg.role, cfg.method, cfg.k, cfg.k_line, cfg.knob, cfg.value, cfg.line, cfg.col) == (
        "decode", "EAGLE", 3, 17, "SGLANG_SIMULATE_ACC_LEN", "2.71", 8, 30)


# -- span editing --------------------------------------------------------------

def test_layers_read_an_override_over_its_base():
    root = spans.compose("base:\n  a: {x: 1, y: 2}\nover:\n  a: {y: 3}\n")
    view = spans.Layers(spans.get(root, "over"), spans.get(root, "base"))
    assert spans.to_python(spans.get(view, "a")) == {"y": 3, "x": 1}



@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.sampled_from(["", "~", "null", "Null", "NULL", "true", "False", "yes", "on", "off",
                     "<<", "0o17", "017", "0x1F", "0b101", "1_000", "+3", "-0", "1e3", "1.5",
                     ".inf", "3.", "12:30", "2026-01-01"]),
    st.from_regex(r"[-+]?[0-9_]{1,6}(\.[0-9]{0,3})?([eE][-+]?[0-9]{1,2})?", fullmatch=True),
    st.from_regex(r"[-+]?0[box][0-9a-fA-F_]{1,5}", fullmatch=True)))
def test_plain_scalar_types_follow_the_yaml_1_2_core_schema(text):
    """The lazy resolver agrees with ruamel.yaml's YAML 1.2 resolver on null/bool/int/merge."""
    from ruamel.yaml import YAML

    doc = f"k: {text}\n"
    try:
        theirs = YAML(typ="rt").compose(doc).value[0][1].tag
    except Exception:
        return      # not a plain scalar in YAML (e.g. a bare sign): nothing to compare
    theirs = getattr(theirs, "value", theirs)  # ruamel wraps tags in newer releases
    kinds = ("null", "bool", "int", "merge")
    ours = spans.tag_of(spans.get_pair(spans.compose(doc), "k")[1]).rsplit(":", 1)[-1]
    assert (ours if ours in kinds else "other") == (
        theirs.rsplit(":", 1)[-1] if theirs.rsplit(":", 1)[-1] in kinds else "other")

def test_add_to_mapping_keeps_indentation_and_trailing_comments():
    text = "env:\n    A: '1'  # keep\nnext: 1\n"
    env = spans.get(spans.compose(text), "env")
    edit = spans.add_to_mapping(text, env, [("B", "2")], value_style="'")
    assert spans.apply_edits(text, [edit]) == "env:\n    A: '1'  # keep\n    B: '2'\nnext: 1\n"
    flow = "env: {A: \"1\"}\n"
    edit = spans.add_to_mapping(flow, spans.get(spans.compose(flow), "env"), [("B", "2")],
                                value_style='"')
    assert spans.apply_edits(flow, [edit]) == 'env: {A: "1", B: "2"}\n'


_keys = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
_values = st.one_of(st.integers(-5, 5), st.text(alphabet="xyz", max_size=3), st.booleans())


@settings(max_examples=200, deadline=None)
@given(base=st.dictionaries(_keys, _values, max_size=5),
       updates=st.dictionaries(_keys, st.one_of(st.none(), st.integers(0, 9)), max_size=4),
       compact=st.booleans())
def test_json_set_equals_a_dict_update_and_keeps_untouched_members(base, updates, compact):
    seps = (",", ":") if compact else (", ", ": ")
    text = json.dumps(base, separators=seps)
    out = spans.json_set(text, {k: (None if v is None else str(v)) for k, v in updates.items()})
    expected = dict(base)
    for k, v in updates.items():
        if v is None:
            expected.pop(k, None)
        else:
            expected[k] = v
    assert json.loads(out) == expected
    assert list(json.loads(out)) == list(expected)
    if not updates:
        assert out == text
    if base and not any(k in base for k in updates):
        assert out.startswith(text[:-1])


@settings(max_examples=300, deadline=None)
@given(units=st.integers(0, 10 ** 6), decimals=st.integers(0, 4), delta=st.integers(-3, 3))
def test_add_decimal_is_exact_decimal_arithmetic(units, decimals, delta):
    text = str(Decimal(units).scaleb(-decimals))
    if "E" in text:
        text = format(Decimal(units).scaleb(-decimals), "f")
    assert Decimal(add_decimal(text, delta)) == Decimal(text) + delta


def test_read_settings_of_a_launcher_script_resolves_its_variables():
    found = read_settings(DATA / "launch_mixed.sh")
    assert [(s.engine, s.line, s.knob, s.value, s.k, s.extra) for s in found] == [
        ("sglang", 11, "SGLANG_SIMULATE_ACC_LEN", "2.99", 3, {}),
        ("trtllm", 12, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.78", 3, {}),
        ("vllm", 14, "synthetic_acceptance_length", "$SYNTHETIC_ACCEPT_LEN", 3,
         {"resolved": "2.78"}),
    ]


def test_deleting_adjacent_json_members_is_one_edit():
    """Regression: deleting two neighbouring members used to raise 'overlapping edits'."""
    assert spans.json_set('{"_": 0, "a": 0}', {"_": None, "a": None}) == "{}"
    assert spans.json_set('{"x": 1, "_": 0, "a": 0}', {"_": None, "a": None}) == '{"x": 1}'
    assert spans.json_set('{"_": 0, "a": 0, "x": 1}', {"_": None, "a": None}) == '{"x": 1}'
