"""``inject`` and ``audit`` read a file one way: thinking mode, K, variant, every role.

Recipe shapes after srt-slurm TensorRT-LLM and vLLM disaggregated recipes as
InferenceX commits them (``benchmarks/multi_node/srt-slurm-recipes/trtllm/...``:
the knob in both ``prefill_environment`` and ``decode_environment``, Dynamo's
``DYN_DEFAULT_THINKING_MODE`` beside it; vLLM ``speculative-config`` JSON per
role).  Golden values from the packaged curves: minimaxm3_eagle3_gqa K=3 is
2.78 thinking on, 2.97 thinking off.
"""

import os
import tempfile
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenal.cli import main
from goldenal.auditing import audit
from goldenal.golden.registry import load_registry
from goldenal.apply.inject import inject

TRTLLM = """\
name: disagg-gb300-1p1d-tep8-mtp
model:
  path: nvidia/MiniMax-M3-NVFP4
  container: nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24
backend:
  type: trtllm
  prefill_environment:
    TRTLLM_ENABLE_PDL: "1"
{prefill_thinking}    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "{prefill}"
  decode_environment:
    TRTLLM_ENABLE_PDL: "1"
{decode_thinking}    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "{decode}"
  trtllm_config:
    prefill:
      speculative_config:
        decoding_type: Eagle3
        max_draft_len: {prefill_k}
        speculative_model: Inferact/MiniMax-M3-EAGLE3-GQA
    decode:
      speculative_config:
        decoding_type: Eagle3
        max_draft_len: {decode_k}
        speculative_model: Inferact/MiniMax-M3-EAGLE3-GQA
"""
DISABLED = "    DYN_DEFAULT_THINKING_MODE: disabled\n"
REL = "benchmarks/multi_node/srt-slurm-recipes/trtllm/minimax-m3/agentic/disagg.yaml"


def write(root, text, rel=REL):
    (root / ".git").mkdir(parents=True, exist_ok=True)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# the thinking-on value (AL 2.78 - 1) pinned in a recipe that declares thinking off
PINNED_ON = TRTLLM.format(prefill_thinking=DISABLED, decode_thinking=DISABLED, prefill="1.78",
                          decode="1.78", prefill_k=3, decode_k=3)


def test_thinking_flag_against_the_files_declaration_is_refused_naming_both(tmp_path, capsys):
    path = write(tmp_path / "repo", PINNED_ON)
    rc, out, err = cli(capsys, "inject", str(path), "--thinking", "on", "--check")
    assert (rc, out) == (1, "")
    assert err == (f"error: {path}: --thinking on contradicts the file, which declares "
                   "thinking off: DYN_DEFAULT_THINKING_MODE=disabled (line 13)\n")
    assert path.read_text() == PINNED_ON


def test_inject_reads_the_thinking_mode_from_the_file_as_audit_does(tmp_path, capsys):
    root = tmp_path / "repo"
    path = write(root, PINNED_ON)
    rc, out, _ = cli(capsys, "audit", str(root), "--no-cache", "--isolated")
    assert rc == 1
    assert out.splitlines()[:2] == [
        f"{REL}:10:50: GAL201 [*] TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78 (AL 2.78) "
        "differs from the golden cell minimaxm3_eagle3_gqa thinking_off K=3: expected 1.97 (AL 2.97); "
        "2.78 is minimaxm3_eagle3_gqa thinking_on K=3, but this config serves "
        "Inferact/MiniMax-M3-EAGLE3-GQA thinking_off K=3 [role prefill]",
        f"{REL}:14:50: GAL201 [*] TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78 (AL 2.78) "
        "differs from the golden cell minimaxm3_eagle3_gqa thinking_off K=3: expected 1.97 (AL 2.97); "
        "2.78 is minimaxm3_eagle3_gqa thinking_on K=3, but this config serves "
        "Inferact/MiniMax-M3-EAGLE3-GQA thinking_off K=3 [role decode]"]
    for thinking in ((), ("--thinking", "off")):
        rc, out, err = cli(capsys, "inject", str(path), *thinking, "--check")
        assert (rc, out) == (1, "")
        assert err == (f"{path}: would change 2 of 2 entries (decode K=3: 1.97, "
                       "prefill K=3: 1.97)\n")


def test_audit_fix_fixes_every_role_that_carries_the_knob(tmp_path, capsys):
    root = tmp_path / "repo"
    path = write(root, PINNED_ON)
    rc, _, err = cli(capsys, "audit", str(root), "--no-cache", "--isolated", "--fix")
    assert (rc, err) == (0, "Fixed 2 finding(s) in 1 file(s); 0 not fixed.\n")
    assert path.read_text() == PINNED_ON.replace('"1.78"', '"1.97"')
    rc, _, err = cli(capsys, "inject", str(path), "--check")
    assert (rc, err) == (0, f"{path}: already carries the golden AL in 2 entries; nothing to "
                            "change\n")


# ------------------------------------------------------------------ property

REGISTRY = load_registry()
GQA = REGISTRY["minimaxm3_eagle3_gqa"]
ERRORS = ("GAL201", "GAL202", "GAL203")


def _value(draw, k, mode):
    """A pinned TensorRT-LLM value (AL - 1): the golden cell, another cell, or any AL."""
    kind = draw(st.sampled_from(["golden", "other mode", "other K", "any", "trailing zero"]))
    if kind == "golden":
        al = GQA.cells[mode][k]
    elif kind == "other mode":
        al = GQA.cells["off" if mode == "on" else "on"][k]
    elif kind == "other K":
        al = GQA.cells[mode][draw(st.integers(1, 8).filter(lambda j: j != k))]
        al = al if Decimal(al) <= k + 1 else GQA.cells[mode][k]
    elif kind == "any":
        al = f"{draw(st.integers(101, (k + 1) * 100)) / 100:.2f}"
    else:
        return str(Decimal(GQA.cells[mode][k]) - 1) + "0"
    return str(Decimal(al) - 1)


@st.composite
def recipes(draw):
    declared = draw(st.sampled_from([None, "enabled", "disabled"]))
    # the mode the value is drawn for: the declared one, or the one audit assumes (on)
    mode = "off" if declared == "disabled" else "on"
    ks = [draw(st.integers(1, 8)) for _ in range(2)]
    line = f"    DYN_DEFAULT_THINKING_MODE: {declared}\n" if declared else ""
    text = TRTLLM.format(prefill_thinking=line, decode_thinking=line,
                         prefill=_value(draw, ks[0], mode), decode=_value(draw, ks[1], mode),
                         prefill_k=ks[0], decode_k=ks[1])
    return text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=recipes())
def test_inject_check_and_audit_agree_on_generated_recipes(text):
    """``inject --check`` needs a change exactly where audit finds a wrong value, role by role."""
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        path = write(root, text)
        findings = audit([str(root)], root=str(root), registry=REGISTRY, settings=False)
        wrong = {f.message.rsplit("[role ", 1)[1].rstrip("]") for f in findings
                 if f.code in ERRORS}
        result = inject(path, check=True)
        assert {role for _, role, *_ in result.changes} == wrong, (findings, result)
        assert result.needs_change == bool(wrong)
        assert os.path.exists(path) and path.read_text() == text


def test_disagreeing_thinking_signals_are_refused_naming_them(tmp_path, capsys):
    path = write(tmp_path / "repo", TRTLLM.format(
        prefill_thinking=DISABLED, decode_thinking="    DYN_DEFAULT_THINKING_MODE: enabled\n",
        prefill="1.97", decode="1.78", prefill_k=3, decode_k=3))
    rc, out, err = cli(capsys, "inject", str(path), "--check")
    assert (rc, out) == (1, "")
    assert err == (f"error: {path}:10: cannot tell which thinking mode the file serves: "
                   "conflicting thinking-mode signals (line 9: DYN_DEFAULT_THINKING_MODE="
                   "disabled, line 13: DYN_DEFAULT_THINKING_MODE=enabled); make it declare "
                   "one\n")


# an InferenceX-style ATOM launcher (benchmarks/single_node/*_mi355x_atom_*.sh): dsv4_mtp,
# thinking stated by the benchmark client, K and the knob on one command line
ATOM = ("#!/usr/bin/env bash\n"
        "export THINKING_MODE={mode}\n"
        "python3 -m atom.entrypoints.openai.api_server --model deepseek-ai/DeepSeek-V4-Pro "
        "--method mtp --num-speculative-tokens {k} {flag} {value}\n")
DSV4 = REGISTRY["dsv4_mtp"]


@st.composite
def atom_launchers(draw):
    mode = draw(st.sampled_from(["on", "off"]))
    k = draw(st.integers(1, 8))
    rate = draw(st.booleans())
    al = Decimal(DSV4.cells[mode][k])
    exact = (al - 1) / k if rate else al
    kind = draw(st.sampled_from(["rounded", "off by one place", "other mode", "other K"]))
    places = draw(st.integers(2, 8))
    step = Decimal(1).scaleb(-places)
    if kind == "rounded":
        value = exact.quantize(step)
    elif kind == "off by one place":
        value = exact.quantize(step) + draw(st.sampled_from([-1, 1])) * step
    else:
        other = Decimal(DSV4.cells["off" if mode == "on" else "on"][k]) if kind == "other mode" \
            else Decimal(DSV4.cells[mode][draw(st.integers(1, 8).filter(lambda j: j != k))])
        other = min(other, Decimal(k + 1))
        value = (other - 1) / k if rate else other
        value = value.quantize(step)
    value = min(max(value, Decimal(0) if rate else Decimal(1)), Decimal(1) if rate else k + 1)
    flag = "--spec-decode-acceptance-rate" if rate else "--spec-decode-acceptance-length"
    return ATOM.format(mode=f"thinking_{mode}", k=k, flag=flag, value=format(value, "f"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=atom_launchers())
def test_inject_check_and_audit_agree_at_the_precision_written(text):
    """An ATOM length or rate: ``inject --check`` needs a change exactly where audit finds one."""
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        path = write(root, text, "benchmarks/single_node/agentic/dsv4_fp4_mi355x_atom_mtp.sh")
        findings = audit([str(root)], root=str(root), registry=REGISTRY, settings=False)
        wrong = [f for f in findings if f.code in ERRORS]
        result = inject(path, check=True)
        assert result.needs_change == bool(wrong), (findings, result)
        assert path.read_text() == text


def test_runner_mode_takes_the_recipes_declaration_and_refuses_a_contradiction(tmp_path):
    import pytest

    from goldenal.core.errors import PolicyError
    from goldenal.apply.inject import inject_runner

    path = write(tmp_path / "repo", PINNED_ON)
    env = {"SYNTHETIC_ACCEPTANCE": "true", "FRAMEWORK": "dynamo-trtllm"}
    outcome = inject_runner(path, environ=env, check=True)
    assert [(v.role, v.knob_value) for v in outcome.result.values] == [("prefill", "1.97"),
                                                                       ("decode", "1.97")]
    with pytest.raises(PolicyError, match="--thinking on contradicts the file, which declares "
                                          "thinking off: DYN_DEFAULT_THINKING_MODE=disabled"):
        inject_runner(path, environ={**env, "THINKING_MODE": "thinking_on"}, check=True)
