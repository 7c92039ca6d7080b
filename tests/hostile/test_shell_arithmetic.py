"""``$(( ))`` in a launcher is evaluated as bash evaluates it: integers only.

``/`` truncates toward zero, ``%`` takes the sign of the dividend, division by
zero is refused (bash manual, "Shell Arithmetic"); the evaluator used to
divide in floating point, so ``7 / 2 * 2`` was 7 and a launcher's K came out
one too high.  awk's ``BEGIN{print ...}`` keeps floating point.
"""

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.auditing import audit
from goldenal.recipes.shell import arith, command_value

LAUNCHER = """\
#!/usr/bin/env bash
# GLM-5.2 NVFP4 B200 SGLang MTP agentic launcher: steps from the draft-token budget.
HF_MODEL_ID="${HF_MODEL_ID:-nvidia/GLM-5.2-NVFP4}"
DRAFT_BUDGET=7
# an even number of draft tokens, one of them the root: 7 / 2 * 2 - 3 = 3 steps
NUM_STEPS=$(( DRAFT_BUDGET / 2 * 2 - 3 ))
SPEC_ARGS=(
    --speculative-algorithm EAGLE
    --speculative-num-steps "$NUM_STEPS"
    --speculative-eagle-topk 1
    --speculative-num-draft-tokens $(( NUM_STEPS + 1 ))
)
# 2.99 is glm5.2_mtp thinking_on K=3 (golden_al_distribution/glm5.2_mtp.yaml).
if [ "${EVAL_ONLY:-false}" != "true" ]; then
    export SGLANG_SIMULATE_ACC_LEN=2.99
    export SGLANG_SIMULATE_ACC_METHOD=match-expected
    export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token
fi
python3 -m sglang.launch_server --model-path "$HF_MODEL_ID" "${SPEC_ARGS[@]}" \\
    --chat-template "$MODEL_PATH/chat_template_thinking.jinja"
"""


@pytest.mark.parametrize("expr,value", [
    ("7 / 2", 3), ("-7 / 2", -3), ("7 / -2", -3), ("-7 / -2", 3),
    ("7 % 3", 1), ("-7 % 3", -1), ("7 % -3", 1), ("-7 % -3", -1),
    ("7 / 2 * 2", 6), ("9007199254740993 / 1", 9007199254740993),
    ("7 / 0", None), ("7 % 0", None), ("2 ** -1", None), ("2.5 + 1", None), ("1e3", None),
    ("-2 ** 2", 4), ("-(2 ** 2)", -4), ("2 ** 63", None), ("-2 ** 63", -2 ** 63),
])
def test_integer_arithmetic_as_bash_computes_it(expr, value):
    assert arith(expr, integer=True) == value


def test_dollar_double_paren_uses_integer_division_and_awk_keeps_floats():
    env = {"DRAFT_BUDGET": "7"}
    assert command_value("(DRAFT_BUDGET / 2 * 2 - 3)", env) == "3"
    assert command_value("(DRAFT_BUDGET % 4)", env) == "3"
    assert command_value("(DRAFT_BUDGET / 0)", env) is None
    assert command_value("awk 'BEGIN{print 7/2*2}'", env) == "7"
    assert command_value("awk 'BEGIN{print -7%3}'", env) == "-1"


def test_printf_of_an_infinite_integer_is_unknown(tmp_path):
    # regression: ``$(printf '%d' inf)`` raised OverflowError out of the audit
    assert command_value("printf '%d' inf", {}) is None
    assert command_value("printf '%.1f' inf", {}) == "inf"
    script = tmp_path / "run.sh"
    script.write_text('N=$(printf "%d" -inf)\nvllm serve m --speculative-config '
                      '"{\\"num_speculative_tokens\\": $N}"\n')
    audit([str(script)])


def test_the_launcher_serves_k3_so_its_golden_value_is_not_flagged(tmp_path):
    path = tmp_path / "benchmarks" / "single_node" / "agentic"
    path.mkdir(parents=True)
    script = path / "glm5.2_fp4_b200_sglang_mtp.sh"
    script.write_text(LAUNCHER)
    # with floating-point division K came out 4, and 2.99 was a GAL201 against 3.33
    assert audit([str(tmp_path)]) == []
    script.write_text(LAUNCHER.replace("SGLANG_SIMULATE_ACC_LEN=2.99", "SGLANG_SIMULATE_ACC_LEN=3.33"))
    finding, = audit([str(tmp_path)])
    assert (finding.code, finding.found, finding.expected) == ("GAL201", "3.33", "2.99")


def _exprs():
    # |value| stays below 2**62 (20**2 per leaf, six leaves), where bash does not wrap
    number = st.integers(min_value=-20, max_value=20).map(str)
    power = st.tuples(number, st.integers(-1, 2)).map(lambda t: f"{t[0]} ** {t[1]}")

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%"]), inner).map(
                lambda t: f"{t[0]} {t[1]} {t[2]}"),
            inner.map(lambda e: f"({e})"),
            inner.map(lambda e: f"-{e}"))
    return st.recursive(st.one_of(number, power), extend, max_leaves=6)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(_exprs(), min_size=20, max_size=20))
def test_agrees_with_bash(exprs):
    """Whatever bash prints for ``$(( e ))``, or refuses, the evaluator gives (or None)."""
    script = "".join(f"( echo $(( {e} )) ) 2>/dev/null || echo refused\n" for e in exprs)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    for e, bash in zip(exprs, out):
        assert arith(e, integer=True) == (None if bash == "refused" else int(bash)), e
