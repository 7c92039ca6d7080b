"""Values compared at the precision written, and values checked when the cell cannot be decided.

Launcher shapes after InferenceX's ATOM launchers (``benchmarks/single_node/
*_mi355x_atom_*.sh``: ``--spec-decode-acceptance-length`` or a rate printed
by ``awk``) and SGLang launchers with chat-template kwargs; golden values from
the packaged curves (kimik3_dspark K=2 2.45, its probabilistic variant 2.51;
glm5.2_mtp thinking_on K=3 2.99; dsv4_mtp K=3 2.49 on, 2.97 off).
"""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goldenal.cli import main
from goldenal.engines.knobs import carries_golden

KIMI = ("#!/usr/bin/env bash\n"
        "SPEC_ARGS=(--method dspark --draft-model Inferact/Kimi-K3-DSpark "
        "--num-speculative-tokens 2 --spec-decode-acceptance-length VALUE)\n"
        "python3 -m atom.entrypoints.openai.api_server --model amd/Kimi-K3-MXFP4 "
        "\"${SPEC_ARGS[@]}\"\n")
GLM_RATE = ("#!/usr/bin/env bash\n"
            "python3 -m atom.entrypoints.openai.api_server --model amd/GLM-5.2-MXFP4 "
            "--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-rate VALUE\n")
# two chat-template kwargs that disagree: the thinking mode cannot be decided
DSV4_SGLANG = ("#!/usr/bin/env bash\n"
               "export SGLANG_SIMULATE_ACC_LEN=VALUE\n"
               "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro "
               "--speculative-algorithm EAGLE --speculative-num-steps 3 "
               "--speculative-eagle-topk 1 "
               "--chat-template-kwargs '{\"thinking\": true}' \\\n"
               "    --default-chat-template-kwargs '{\"thinking\": false}'\n")


def audit_cli(capsys, tmp_path, name, text, *extra):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    path = root / "benchmarks" / "agentic" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    rc = main(["audit", str(root / "benchmarks"), "--no-cache", "--isolated", *extra])
    out, err = capsys.readouterr()
    return rc, out, err


KIMI_CELLS = ("kimik3_dspark thinking_on K=2 (2.45), "
              "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method "
              "thinking_on K=2 (2.51)")
VARIANT = ("sampling variant: atom has no setting that selects one and no comment next to the "
           "knob cites a curve")


def test_a_value_no_variant_carries_is_an_error_naming_the_candidates(capsys, tmp_path):
    rc, out, err = audit_cli(capsys, tmp_path, "kimik3_fp4_mi355x_atom_mtp.sh",
                             KIMI.replace("VALUE", "2.54"), "--select", "GAL2,GAL304")
    assert (rc, err) == (1, "")
    assert out.splitlines()[0] == (
        "benchmarks/agentic/kimik3_fp4_mi355x_atom_mtp.sh:2:93: GAL201 "
        "--spec-decode-acceptance-length 2.54 matches no candidate cell: " + KIMI_CELLS
        + f"; which applies cannot be decided ({VARIANT}), but the value is wrong whichever "
          "does")


@pytest.mark.parametrize("value, curve", [
    ("2.45", "kimik3_dspark"),
    ("2.510", "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method")])
def test_a_value_some_variant_carries_is_info_naming_it(capsys, tmp_path, value, curve):
    rc, out, err = audit_cli(capsys, tmp_path, "kimik3_fp4_mi355x_atom_mtp.sh",
                             KIMI.replace("VALUE", value), "--select", "GAL2,GAL304")
    assert (rc, err) == (0, "")
    assert out.splitlines()[0] == (
        f"benchmarks/agentic/kimik3_fp4_mi355x_atom_mtp.sh:2:93: GAL304 cannot determine the "
        f"golden cell for --spec-decode-acceptance-length {value}: {VARIANT}; candidates "
        "kimik3_dspark, kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method; "
        f"{value} is the golden value of {curve} thinking_on K=2")


def test_conflicting_thinking_modes_check_the_value_against_both(capsys, tmp_path):
    rc, out, _ = audit_cli(capsys, tmp_path, "dsv4_fp4_b200_sglang_mtp.sh",
                           DSV4_SGLANG.replace("VALUE", "2.60"), "--select", "GAL2,GAL304")
    assert rc == 1
    line = out.splitlines()[0]
    assert line.startswith("benchmarks/agentic/dsv4_fp4_b200_sglang_mtp.sh:2:8: GAL201 "
                           "SGLANG_SIMULATE_ACC_LEN=2.60 matches no candidate cell: dsv4_mtp "
                           "thinking_on K=3 (2.49), dsv4_mtp thinking_off K=3 (2.97); which "
                           "applies cannot be decided (thinking mode (conflicting "
                           "thinking-mode signals (line 3: ")
    rc, out, _ = audit_cli(capsys, tmp_path, "dsv4_fp4_b200_sglang_mtp.sh",
                           DSV4_SGLANG.replace("VALUE", "2.97"), "--select", "GAL2,GAL304")
    assert rc == 0
    assert out.splitlines()[0].endswith("; 2.97 is the golden value of dsv4_mtp thinking_off "
                                        "K=3")


# ---------------------------------------------------------------- precision written

@pytest.mark.parametrize("rate", ["0.6633", "0.663333", "0.66333333333", "0.663", "0.66"])
def test_a_rate_rounded_from_the_golden_value_is_correct(capsys, tmp_path, rate):
    # golden AL 2.99 at K=3 is the rate 0.66333...; each is it rounded to the decimals written
    rc, out, _ = audit_cli(capsys, tmp_path, "glm5.2_fp4_mi355x_atom_mtp.sh",
                           GLM_RATE.replace("VALUE", rate), "--select", "GAL2")
    assert (rc, out.splitlines()[0]) == (0, "Found 0 findings (0 errors, 0 warnings, 0 info).")


@pytest.mark.parametrize("rate, al", [("0.6634", "2.9902"), ("0.6632", "2.9896"),
                                      ("0.67", "3.01"), ("0.664", "2.992")])
def test_a_different_rate_at_that_precision_is_wrong(capsys, tmp_path, rate, al):
    rc, out, _ = audit_cli(capsys, tmp_path, "glm5.2_fp4_mi355x_atom_mtp.sh",
                           GLM_RATE.replace("VALUE", rate), "--select", "GAL2")
    assert rc == 1
    assert out.splitlines()[0].startswith(
        "benchmarks/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:2:143: GAL201 [*] "
        f"--spec-decode-acceptance-rate {rate} (AL {al}) differs from the golden cell "
        "glm5.2_mtp thinking_on K=3: expected 0.663333333333")


@pytest.mark.parametrize("written, al_text, unit, k, carries", [
    ("0.6633", "2.99", "rate", 3, True),
    ("'0.663333'", "2.99", "rate", 3, True),
    ("0.6634", "2.99", "rate", 3, False),
    ("2.5", "2.50", "length", None, True),
    ("2.990", "2.99", "length", None, True),
    ("3.0", "2.99", "length", None, False),      # coarser than the committed cell
    ("3", "2.99", "length", None, False),
    ("1.99", "2.99", "accepted", None, True),
    ("2.99", "2.99", "accepted", None, False),
    ("0.125", "1.25", "rate", 2, True),
    ("0.12", "1.25", "rate", 2, True),           # a tie: half to even
    ("0.13", "1.25", "rate", 2, True),           # a tie: half up
    ("0.14", "1.25", "rate", 2, False),
    ("1e-99999", "2.99", "length", None, False),
    ("NaN", "2.99", "length", None, False),
    ("x", "2.99", "length", None, False),
])
def test_carries_golden(written, al_text, unit, k, carries):
    assert carries_golden(written, al_text, unit=unit, k=k) is carries


@given(al=st.integers(100, 900).map(lambda n: Decimal(n) / 100),
       k=st.integers(1, 16), places=st.integers(2, 14), offset=st.integers(-3, 3))
def test_carries_golden_is_rounding_at_the_places_written(al, k, places, offset):
    """Against the naive rule: within half a unit of the last place written."""
    golden = (al - 1) / k
    step = Decimal(1).scaleb(-places)
    written = golden.quantize(step) + offset * step
    text = format(written, "f")
    gap = abs(written - golden)
    # a tie goes half up (away from zero) or half to even, never half down
    naive = gap < step / 2 or (gap == step / 2 and (written > golden
                                                    or written.as_tuple().digits[-1] % 2 == 0))
    assert carries_golden(text, format(al, "f"), unit="rate", k=k) is naive
