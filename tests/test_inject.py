"""`goldenal inject` and `goldenal.apply.inject.inject`: exact bytes, idempotence, refusals."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from goldenal.core.errors import ConflictError, ParseError, PolicyError, UsageError
from goldenal.apply.inject import inject, inject_runner
from conftest import goldenal_cmd

DATA = Path(__file__).parent / "data" / "inject"

# (input, expected output, CLI flags): fixtures modelled on InferenceX recipes
# and vLLM / TensorRT-LLM / ATOM serve configs.
CASES = [
    ("vllm_disagg.yaml", "vllm_disagg.expected.yaml", ["--thinking", "on"]),
    ("vllm_disagg.yaml", "vllm_disagg.distribution-off.expected.yaml",
     ["--thinking", "off", "--distribution"]),
    ("vllm_anchor.yaml", "vllm_anchor.expected.yaml", ["--thinking", "on"]),
    ("vllm_agg_pinned.yaml", "vllm_agg_pinned.expected.yaml", ["--thinking", "on", "--force"]),
    ("sglang_agg.yaml", "sglang_agg.expected.yaml", ["--thinking", "on"]),
    # an sa-bench 8k1k recipe: written only when allowed (see test_inject_explicit.py)
    ("sglang_variants.yaml", "sglang_variants.expected.yaml",
     ["--thinking", "on", "--allow-non-agentic"]),
    ("sglang_pinned.yaml", "sglang_pinned.expected.yaml", ["--thinking", "on"]),
    ("trtllm_disagg_anchor.yaml", "trtllm_disagg_anchor.expected.yaml", ["--thinking", "on"]),
    ("trtllm_agg_one.yaml", "trtllm_agg_one.expected.yaml",
     ["--thinking", "on", "--model", "qwen3.5", "--force"]),
    ("vllm_config.yaml", "vllm_config.expected.yaml", ["--thinking", "on"]),
    ("vllm_config.yaml", "vllm_config.distribution.expected.yaml",
     ["--thinking", "on", "--distribution"]),
    ("vllm_config.json", "vllm_config.expected.json", ["--thinking", "on"]),
    ("atom_launch.sh", "atom_launch.expected.sh", ["--thinking", "on"]),
    ("sglang_no_env.yaml", "sglang_no_env.expected.yaml", ["--thinking", "on"]),
    ("sglang_override_k.yaml", "sglang_override_k.expected.yaml", ["--thinking", "on"]),
]


def _copy(tmp_path, *names):
    for name in names:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path / names[0]


@pytest.mark.parametrize("src,expected,flags", CASES, ids=[c[1] for c in CASES])
def test_fixture_is_rewritten_to_the_expected_bytes_and_a_second_run_is_a_no_op(
        tmp_path, run_cli, src, expected, flags):
    path = _copy(tmp_path, src)
    code, out, err = run_cli("inject", path, *flags)
    assert code == 0, err
    assert out == ""
    assert path.read_bytes() == (DATA / expected).read_bytes()
    assert "changed" in err
    # Idempotent: the second run changes nothing and says so.
    code, out, err = run_cli("inject", path, *[f for f in flags if f != "--force"])
    assert code == 0, err
    assert err.endswith("; nothing to change\n")
    assert path.read_bytes() == (DATA / expected).read_bytes()


KNOBS = ("synthetic_acceptance", "rejection_sample_method", "SGLANG_SIMULATE_ACC_",
         "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "--spec-decode-acceptance")


def _without_knobs(text):
    """Lines with the knobs taken out (a JSON value may gain a trailing comma)."""
    import re

    out = []
    for line in text.splitlines():
        line = re.sub(r' ?--spec-decode-acceptance-\w+ [0-9.]+', "", line)
        line = re.sub(r',"(rejection_sample_method|synthetic_acceptance_\w+)":'
                      r'("[^"]*"|\[[^\]]*\]|[0-9.]+)', "", line)
        if any(k in line for k in KNOBS) or re.fullmatch(r"\s*(aggregated|prefill|decode)"
                                                        r"_environment:", line):
            continue  # an environment block may be created to carry the knobs
        out.append(line.rstrip(","))
    return out


@pytest.mark.parametrize("src,expected,flags", CASES, ids=[c[1] for c in CASES])
def test_every_byte_outside_the_knobs_is_identical(src, expected, flags):
    before = (DATA / src).read_text()
    after = (DATA / expected).read_text()
    assert _without_knobs(after) == _without_knobs(before)
    assert len(after) > len(before) or "pinned" in src or "agg" in src


def test_check_exits_1_and_writes_nothing(tmp_path, run_cli):
    path = _copy(tmp_path, "vllm_disagg.yaml")
    code, out, err = run_cli("inject", path, "--thinking", "on", "--check")
    assert code == 1
    assert out == ""
    assert err == f"{path}: would change 2 of 2 entries (decode K=3: 2.49, prefill K=3: 2.49)\n"
    assert path.read_bytes() == (DATA / "vllm_disagg.yaml").read_bytes()
    done = _copy(tmp_path, "vllm_disagg.expected.yaml")
    code, out, err = run_cli("inject", done, "--thinking", "on", "--check")
    assert code == 0
    assert err == f"{done}: already carries the golden AL in 2 entries; nothing to change\n"


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path, run_cli, monkeypatch):
    _copy(tmp_path, "trtllm_disagg_anchor.yaml")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("inject", "trtllm_disagg_anchor.yaml", "--thinking", "on", "--diff")
    assert code == 0
    assert out == (
        "--- a/trtllm_disagg_anchor.yaml\n"
        "+++ b/trtllm_disagg_anchor.yaml\n"
        "@@ -12,6 +12,7 @@\n"
        "     TLLM_LOG_LEVEL: INFO\n"
        '     TRTLLM_ENABLE_PDL: "1"\n'
        "     DYN_TOKENIZER: fastokens\n"
        '+    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "2.61"\n'
        "   decode_environment: *server_environment\n"
        "   trtllm_config:\n"
        "     prefill:\n")
    assert (tmp_path / "trtllm_disagg_anchor.yaml").read_bytes() == \
        (DATA / "trtllm_disagg_anchor.yaml").read_bytes()


def test_a_different_pinned_value_is_refused_without_force(tmp_path, run_cli):
    path = _copy(tmp_path, "vllm_agg_pinned.yaml")
    code, out, err = run_cli("inject", path, "--thinking", "on")
    assert code == 3
    assert err == (f"error: {path}:12: synthetic_acceptance_length is already pinned to 2.83, "
                   "golden value is 2.78; use --force to overwrite\n")
    assert path.read_bytes() == (DATA / "vllm_agg_pinned.yaml").read_bytes()


def test_sglang_conflict_is_refused_and_forced(tmp_path):
    path = _copy(tmp_path, "sglang_conflict.yaml")
    with pytest.raises(ConflictError, match="SGLANG_SIMULATE_ACC_LEN is already pinned to 2.91"):
        inject(path, thinking="on")
    assert path.read_bytes() == (DATA / "sglang_conflict.yaml").read_bytes()
    result = inject(path, thinking="on", force=True)
    assert result.changed == 2
    assert path.read_text().count("SGLANG_SIMULATE_ACC_LEN: '2.50'") == 2


def test_a_flag_contradicting_the_file_is_refused(tmp_path, run_cli):
    path = _copy(tmp_path, "vllm_agg_pinned.yaml")
    code, out, err = run_cli("inject", path, "--thinking", "on", "--curve", "minimaxm3_eagle3",
                             "--force")
    assert code == 1
    assert err == (f"error: {path}:12: --curve minimaxm3_eagle3 contradicts the file, which "
                   "serves model nvidia/MiniMax-M3-NVFP4, draft Inferact/MiniMax-M3-EAGLE3-GQA, "
                   "method eagle3 (minimaxm3_eagle3_gqa)\n")
    assert path.read_bytes() == (DATA / "vllm_agg_pinned.yaml").read_bytes()
    with pytest.raises(PolicyError, match=r"--k 2 contradicts the file: aggregated worker drafts K=3"):
        inject(path, thinking="on", k=2, force=True)


def test_a_worker_without_k_is_refused_naming_its_engines_k_settings(tmp_path):
    path = _copy(tmp_path, "vllm_agg_pinned.yaml")
    path.write_text(path.read_text().replace('"num_speculative_tokens":3,', ""))
    # vLLM's own K spellings, not every engine's
    with pytest.raises(ParseError, match=r"do not say how many tokens are drafted "
                                         r"\(num_speculative_tokens / --spec-tokens\); pass --k$"):
        inject(path, thinking="on", k=None, force=True)


def test_an_sglang_prefill_carries_the_decode_workers_cell():
    # docs/engines.md §2.4: in SGLang PD serving the decode worker's K picks the cell
    result = inject(DATA / "sglang_variants.yaml", thinking="on", check=True,
                    allow_non_agentic=True)
    assert sorted({(v.role, v.k, v.al) for v in result.values}) == [
        ("decode", 2, "2.50"), ("prefill", 2, "2.50")]
    assert result.changed == 3


BAD = [
    ("bad_no_spec.yaml", [], 2, "bad_no_spec.yaml: no speculative settings found"),
    ("bad_json.yaml", [], 2, "bad_json.yaml:8: speculative-config JSON does not parse: "
                             "Expecting property name enclosed in double quotes at column 44"),
    ("bad_no_k.yaml", [], 2, "bad_no_k.yaml:7: K is missing"),
    ("bad_k_range.yaml", [], 1, "bad_k_range.yaml:7: no golden value for curve dsv4_mtp, "
                                "thinking on, K=9; committed K: 1-8"),
    ("bad_shared_k.yaml", [], 1, "bad_shared_k.yaml:16: roles prefill (K=1) and decode (K=3) "
                                 "share one environment block"),
    ("trtllm_agg.yaml", [], 1, "trtllm_agg.yaml:13: no committed curve for model qwen3.5-fp4; "
                               "if it is an alias of a curve's model, name that model or the "
                               "curve (model qwen3.5-fp4, method MTP)"),
    ("sglang_agg.yaml", ["--engine", "vllm"], 1, "sglang_agg.yaml:20: the file configures "
                                                 "sglang, not vllm"),
]


@pytest.mark.parametrize("name,flags,code,message", BAD, ids=[b[0] + str(b[1]) for b in BAD])
def test_bad_input_is_one_line_with_file_and_line_and_leaves_the_file_unchanged(
        tmp_path, run_cli, name, flags, code, message):
    path = _copy(tmp_path, name)
    rc, out, err = run_cli("inject", path, "--thinking", "on", *flags)
    assert rc == code
    assert out == ""
    assert err.startswith(f"error: {tmp_path}/{message}")
    assert err.count("\n") == 1
    assert path.read_bytes() == (DATA / name).read_bytes()


def test_k_from_the_flag_when_the_file_has_none_warns(tmp_path):
    path = _copy(tmp_path, "bad_no_k.yaml")
    result = inject(path, thinking="on", k=3)
    assert result.warnings == (f"{path}:7: warning: the file does not state K; the value "
                               "assumes K=3 (--k), which the engine must also use",)
    assert "'{\"method\":\"mtp\",\"rejection_sample_method\":\"synthetic\"," \
           "\"synthetic_acceptance_length\":2.49}'" in path.read_text()


def test_trtllm_two_model_path_refuses_a_fractional_value(tmp_path, run_cli):
    path = _copy(tmp_path, "trtllm_agg.yaml")
    code, out, err = run_cli("inject", path, "--thinking", "on", "--model", "qwen3.5", "--force")
    assert (code, out) == (1, "")
    assert err == (
        f"error: {path}:12: mtp_eagle_one_model: false selects the two-model path, which reads "
        "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS with int(): 3.80 would silently disable "
        "forcing; serve the one-model path or a K whose golden AL - 1 is an integer\n")
    assert path.read_bytes() == (DATA / "trtllm_agg.yaml").read_bytes()


def test_trtllm_extra_llm_api_yaml_writes_the_env_file_it_names(tmp_path):
    yaml_path = _copy(tmp_path, "trtllm_extra.yaml", "trtllm_extra.env")
    result = inject(yaml_path, thinking="on")
    assert result.changed == 1
    assert yaml_path.read_bytes() == (DATA / "trtllm_extra.yaml").read_bytes()
    assert (tmp_path / "trtllm_extra.env").read_bytes() == \
        (DATA / "trtllm_extra.expected.env").read_bytes()
    assert inject(yaml_path, thinking="on").changed == 0


def test_library_result_carries_diff_and_count(tmp_path):
    path = _copy(tmp_path, "vllm_config.json")
    result = inject(path, thinking="on", diff_only=True)
    assert (result.changed, result.entries, result.written) == (1, 1, False)
    added = [ln[1:] for ln in result.diff.splitlines()
             if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ['    "num_speculative_tokens": 2,', '    "rejection_sample_method": "synthetic",',
                     '    "synthetic_acceptance_length": 2.27']
    assert result.values[0].al == "2.27"
    assert path.read_bytes() == (DATA / "vllm_config.json").read_bytes()
    frame = result.to_frame()
    assert list(frame["knob"]) == ["rejection_sample_method", "synthetic_acceptance_length"]


def test_without_thinking_the_mode_audit_assumes_is_used_and_said(tmp_path, run_cli):
    # vllm_disagg.yaml states no thinking mode: dsv4_mtp has both, so thinking_on, as audit
    path = _copy(tmp_path, "vllm_disagg.yaml")
    code, out, err = run_cli("inject", path, "--check")
    assert (code, out) == (1, "")
    assert err == (f"{path}: warning: no thinking-mode signal in the file; assumed thinking_on "
                   "for curve dsv4_mtp, as audit does (GAL305); pass --thinking to state it\n"
                   f"{path}: would change 2 of 2 entries (decode K=3: 2.49, prefill K=3: 2.49)\n")
    assert [v.al for v in inject(path, check=True).values] == ["2.49", "2.49"]


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    path = _copy(tmp_path, "sglang_agg.yaml")
    inject(path, thinking="on")
    assert sorted(os.listdir(tmp_path)) == ["sglang_agg.yaml"]


# -- the InferenceX runner contract -----------------------------------------

RUNNER_ENV = {"SYNTHETIC_ACCEPTANCE": "true", "THINKING_MODE": "thinking_on"}


def test_runner_eval_only_is_a_no_op_that_says_so(tmp_path):
    path = _copy(tmp_path, "vllm_disagg.yaml")
    outcome = inject_runner(path, "dynamo-vllm", environ={**RUNNER_ENV, "EVAL_ONLY": "true"})
    assert outcome.result is None
    assert outcome.message == (f"EVAL_ONLY=true: keeping real verification; {path} left "
                               "untouched")
    assert path.read_bytes() == (DATA / "vllm_disagg.yaml").read_bytes()


def test_runner_disabled_is_a_no_op(tmp_path):
    path = _copy(tmp_path, "vllm_disagg.yaml")
    outcome = inject_runner(path, "dynamo-vllm", environ={"SYNTHETIC_ACCEPTANCE": "false"})
    assert outcome.result is None
    assert path.read_bytes() == (DATA / "vllm_disagg.yaml").read_bytes()


def test_runner_unknown_framework_fails(tmp_path):
    path = _copy(tmp_path, "vllm_disagg.yaml")
    with pytest.raises(UsageError, match="no synthetic-acceptance injector for "
                                         "FRAMEWORK='dynamo-foo'"):
        inject_runner(path, "dynamo-foo", environ=RUNNER_ENV)


def test_runner_explicit_length_wins(tmp_path):
    path = _copy(tmp_path, "vllm_disagg.yaml")
    env = {**RUNNER_ENV, "FRAMEWORK": "dynamo-vllm", "SYNTHETIC_ACCEPTANCE_LENGTH": "2.60"}
    # not the committed cell (dsv4_mtp thinking_on K=3 is 2.49): refused unless forced
    with pytest.raises(PolicyError, match="expected 2.49"):
        inject_runner(path, None, environ=env)
    outcome = inject_runner(path, None, environ=env, force=True)
    assert outcome.result.changed == 2
    assert path.read_text().count('"synthetic_acceptance_length":2.60}') == 2


def test_runner_model_prefix_and_num_spec_tokens(tmp_path):
    path = _copy(tmp_path, "trtllm_agg_one.yaml")
    env = {**RUNNER_ENV, "MODEL_PREFIX": "qwen3.5", "NUM_SPEC_TOKENS": "7"}
    with pytest.raises(PolicyError, match="--k 7 contradicts the file"):
        inject_runner(path, "dynamo-trtllm", environ=env)
    env["NUM_SPEC_TOKENS"] = "6"
    with pytest.raises(ConflictError):
        inject_runner(path, "dynamo-trtllm", environ=env)
    outcome = inject_runner(path, "dynamo-trtllm", environ=env, force=True)
    assert path.read_bytes() == (DATA / "trtllm_agg_one.expected.yaml").read_bytes()
    assert outcome.result.values[0].knob_value == "3.80"


def test_runner_framework_mismatch_fails(tmp_path):
    path = _copy(tmp_path, "sglang_agg.yaml")
    with pytest.raises(PolicyError, match="the file configures sglang, not vllm"):
        inject_runner(path, "dynamo-vllm", environ=RUNNER_ENV)


def test_runner_command_line_as_a_runner_runs_it(tmp_path):
    path = _copy(tmp_path, "sglang_agg.yaml")
    env = {**os.environ, "SYNTHETIC_ACCEPTANCE": "true", "FRAMEWORK": "dynamo-sglang",
           "THINKING_MODE": "thinking_on", "EVAL_ONLY": "false"}
    env.pop("GOLDENAL_DIR", None)
    proc = subprocess.run([*goldenal_cmd(), "inject", str(path), "--framework", "dynamo-sglang"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == f"{path}: changed 1 of 1 entry (aggregated K=3: 2.99)\n"
    assert path.read_bytes() == (DATA / "sglang_agg.expected.yaml").read_bytes()
    env["EVAL_ONLY"] = "true"
    shutil.copy(DATA / "sglang_agg.yaml", path)
    proc = subprocess.run([*goldenal_cmd(), "inject", str(path), "--framework", "dynamo-sglang"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0
    assert proc.stderr == f"EVAL_ONLY=true: keeping real verification; {path} left untouched\n"
    assert path.read_bytes() == (DATA / "sglang_agg.yaml").read_bytes()


def test_unparsable_yaml_is_a_parse_error(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("backend:\n  type: vllm\n  vllm_config: [\n")
    with pytest.raises(ParseError, match="not valid YAML") as info:
        inject(path, thinking="on")
    assert info.value.line == 4


def test_several_files_each_get_a_line_and_the_worst_exit_code_and_none_is_written(
        tmp_path, run_cli):
    good = _copy(tmp_path, "sglang_agg.yaml")
    bad = _copy(tmp_path, "bad_json.yaml")
    code, out, err = run_cli("inject", good, bad, "--thinking", "on")
    assert code == 2
    assert err.splitlines() == [
        f"error: {bad}:8: speculative-config JSON does not parse: Expecting property name "
        "enclosed in double quotes at column 44",
        "error: nothing written: 1 of 2 files refused"]
    assert good.read_bytes() == (DATA / "sglang_agg.yaml").read_bytes()
    assert bad.read_bytes() == (DATA / "bad_json.yaml").read_bytes()


def test_read_back_of_the_trtllm_env_file_layout(tmp_path):
    from goldenal.engines import read_settings

    yaml_path = _copy(tmp_path, "trtllm_extra.yaml", "trtllm_extra.env")
    (before,) = read_settings(yaml_path)
    assert (before.knob, before.k, before.draft, before.method) == (
        None, 3, "/models/Inferact/MiniMax-M3-EAGLE3-GQA", "Eagle3")
    inject(yaml_path, thinking="on")
    (after,) = read_settings(yaml_path)
    assert (after.path, after.line, after.knob, after.value) == (
        str(tmp_path / "trtllm_extra.env"), 3, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.78")


def test_trtllm_k_from_num_nextn_predict_layers_warns(tmp_path):
    path = tmp_path / "mtp.yaml"
    path.write_text("model:\n  path: nvidia/GLM-5.2-NVFP4\nbackend:\n  type: trtllm\n"
                    "  decode_environment:\n    A: \"1\"\n  trtllm_config:\n    decode:\n"
                    "      speculative_config:\n        decoding_type: MTP\n"
                    "        num_nextn_predict_layers: 3\n")
    result = inject(path, thinking="on")
    assert result.values[0].knob_value == "1.99"
    assert "K=3 is read from num_nextn_predict_layers" in result.warnings[0]
    assert path.read_text().endswith('    A: "1"\n    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '
                                     '"1.99"\n  trtllm_config:\n    decode:\n'
                                     '      speculative_config:\n        decoding_type: MTP\n'
                                     '        num_nextn_predict_layers: 3\n')


def test_crlf_and_double_quoted_json_keep_their_bytes(tmp_path):
    text = ('model:\r\n  path: deepseek-v4-pro\r\nbackend:\r\n  type: vllm\r\n'
            '  vllm_config:\r\n    aggregated:\r\n'
            '      speculative-config: "{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": 1}"'
            '\r\n      max-num-seqs: 8\r\n')
    path = tmp_path / "crlf.yaml"
    path.write_bytes(text.encode())
    inject(path, thinking="on")
    assert path.read_bytes().decode() == text.replace(
        '\\"num_speculative_tokens\\": 1}',
        '\\"num_speculative_tokens\\": 1, \\"rejection_sample_method\\": \\"synthetic\\", '
        '\\"synthetic_acceptance_length\\": 1.79}')
    env = ('model:\r\n  path: nvidia/GLM-5.2-NVFP4\r\nbackend:\r\n  type: trtllm\r\n'
           '  decode_environment:\r\n    A: "1"\r\n  trtllm_config:\r\n    decode:\r\n'
           '      speculative_config:\r\n        max_draft_len: 2\r\n')
    path.write_bytes(env.encode())
    inject(path, thinking="on")
    assert path.read_bytes().decode() == env.replace(
        '    A: "1"\r\n', '    A: "1"\r\n    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "1.50"\r\n')


def test_engine_adapters_rewrite_and_read_through_the_same_core(tmp_path):
    from goldenal.api import adapter

    path = _copy(tmp_path, "trtllm_disagg_anchor.yaml")
    result = adapter("trtllm").rewrite(path, thinking="on")
    assert result.changed == 1
    assert [(s.role, s.value) for s in adapter("trtllm").read(path)] == [
        ("prefill", "2.61"), ("decode", "2.61")]
    assert adapter("vllm").read(path) == []
    with pytest.raises(PolicyError, match="configures trtllm, not sglang"):
        adapter("sglang").rewrite(path, thinking="on")


def test_draft_sample_method_selects_the_variant_curve(tmp_path):
    # Without a rejection method the file still names its draft-side variant; the
    # synthetic knob replaces the rejection sampler, so the probabilistic curve applies.
    path = tmp_path / "kimi.yaml"
    path.write_text("model:\n  path: moonshotai/Kimi-K3\nbackend:\n  type: vllm\n"
                    "  vllm_config:\n    aggregated:\n      speculative-config: '"
                    '{"model":"Inferact/Kimi-K3-DSpark","num_speculative_tokens":7,'
                    '"method":"dspark","draft_sample_method":"probabilistic"}' "'\n")
    result = inject(path, thinking="on")
    assert result.values[0].curve == ("kimik3_dspark_probabilistic_sample_method_block_"
                                      "rejection_sample_method")
    assert '"synthetic_acceptance_length":3.84}' in path.read_text()
    plain = tmp_path / "plain.yaml"
    plain.write_text(path.read_text().replace(',"draft_sample_method":"probabilistic"', "")
                     .replace(',"rejection_sample_method":"synthetic","synthetic_acceptance_'
                              'length":3.84', ""))
    assert inject(plain, thinking="on").values[0].curve == "kimik3_dspark"
    assert '"synthetic_acceptance_length":3.78}' in plain.read_text()


# -- a pinned distribution forced to the golden length ------------------------------------

SPEC_HEAD = ("model: nvidia/MiniMax-M3-NVFP4\n"
             "speculative-config:\n  method: eagle3\n  model: Inferact/MiniMax-M3-EAGLE3-GQA\n"
             "  num_speculative_tokens: 3\n")
FLOW_HEAD = ("model: nvidia/MiniMax-M3-NVFP4\nspeculative-config: {method: eagle3, "
             "model: Inferact/MiniMax-M3-EAGLE3-GQA, num_speculative_tokens: 3")
GOLDEN_FLOW = FLOW_HEAD + (", rejection_sample_method: synthetic, "
                           "synthetic_acceptance_length: 2.78}\n")


@pytest.mark.parametrize("before, after", [
    # regression (atheris): the rates line removed and the length appended after it
    # overlapped (ValueError: overlapping edits), in --force and in --check alike
    (SPEC_HEAD + "  synthetic_acceptance_rates: [0.78, 0.6, 0.39]\nmax-num-seqs: 64\n",
     SPEC_HEAD + "  rejection_sample_method: synthetic\n  synthetic_acceptance_length: 2.78\n"
                 "max-num-seqs: 64\n"),
    (SPEC_HEAD.replace("\n", "\r\n") + "  synthetic_acceptance_rates: [0.78, 0.6, 0.39]\r\n",
     SPEC_HEAD.replace("\n", "\r\n") + "  rejection_sample_method: synthetic\r\n"
                                       "  synthetic_acceptance_length: 2.78\r\n"),
    # regression: a flow mapping's last value, a list, was removed up to its last item and
    # left its "]" behind the appended key (invalid YAML written)
    (FLOW_HEAD + ", synthetic_acceptance_rates: [0.78, 0.6, 0.39]}\n", GOLDEN_FLOW),
    (FLOW_HEAD + ", synthetic_acceptance_rates: [0.78, 0.6, 0.39], rejection_sample_method: "
                 "synthetic}\n", GOLDEN_FLOW),
    # regression: a key appended after a nested flow mapping went inside it
    (FLOW_HEAD + ", extra: {a: 1}}\n",
     FLOW_HEAD + ", extra: {a: 1}, rejection_sample_method: synthetic, "
                 "synthetic_acceptance_length: 2.78}\n"),
])
def test_a_forced_vllm_config_is_rewritten_whole(tmp_path, before, after):
    path = tmp_path / "vllm_config.yaml"
    path.write_bytes(before.encode())
    assert inject(path, thinking="on", check=True).changed == 1
    assert inject(path, thinking="on", force=True).changed == 1
    assert path.read_bytes().decode() == after
    assert inject(path, thinking="on").changed == 0


def test_an_edit_that_would_not_parse_is_refused_and_nothing_written(tmp_path, monkeypatch):
    """Defence in depth: with the old flow-mapping removal (up to the last item, the "]"
    left behind) inject wrote invalid YAML; a rewritten config that does not parse now
    refuses and leaves the file as it was."""
    from goldenal.recipes import spans

    monkeypatch.setattr(spans, "text_end", lambda node: spans.last_scalar(node).end_mark.index)
    path = tmp_path / "vllm_config.yaml"
    before = FLOW_HEAD + ", synthetic_acceptance_rates: [0.78, 0.6, 0.39]}\n"
    path.write_text(before)
    with pytest.raises(ParseError, match=r"vllm_config.yaml:2: the rewritten file would not "
                                         r"parse \(not valid YAML: .*\); nothing written"):
        inject(path, thinking="on", force=True)
    assert path.read_text() == before


def test_an_environment_that_is_no_mapping_is_refused_not_repeated(tmp_path):
    """Regression (atheris, caught by the read-back): ``decode_environment`` written as a
    scalar was taken as absent and a second ``decode_environment:`` block appended (a
    repeated key; engines keep the last, dropping the first)."""
    text = (DATA / "sglang_conflict.yaml").read_text()
    start = text.index("  decode_environment:\n")
    end = text.index("  sglang_config:\n")
    path = tmp_path / "recipe.yaml"
    path.write_text(text[:start] + "  decode_environment: PYTHONUNBUFFERED=1\n" + text[end:])
    line = text[:start].count("\n") + 1
    before = path.read_text()
    with pytest.raises(ParseError, match=rf"recipe.yaml:{line}: decode_environment must be a "
                                         "mapping of environment variables"):
        inject(path, thinking="on", force=True)
    assert path.read_text() == before


def test_a_variant_with_its_own_environment_pins_its_own_length(tmp_path):
    """Regression (atheris): a variant drafting K=3 whose own ``decode_environment`` lacks
    the length inherits the base's; inject edited the base's line for it too, the base
    (K=2) wanting another value at the same place (ValueError: overlapping edits).  The
    variant's own block now gets the length; the base keeps its own."""
    text = (DATA / "sglang_override_k.expected.yaml").read_text()
    path = tmp_path / "recipe.yaml"
    path.write_text(text.replace("      SGLANG_SIMULATE_ACC_LEN: '2.50'\n",
                                 "      SGLANG_SIMULATE_ACC_LEN: '1.50'\n")
                    .replace('      SGLANG_SIMULATE_ACC_LEN: "2.99"\n', ""))
    assert inject(path, thinking="on", force=True).changed == 2
    assert path.read_text() == text.replace(
        '      SGLANG_SIMULATE_ACC_LEN: "2.99"\n', "") + '      SGLANG_SIMULATE_ACC_LEN: "2.99"\n'
    assert inject(path, thinking="on").changed == 0


def test_two_values_for_one_place_are_a_policy_refusal():
    from goldenal.apply.inject import _spliced
    from goldenal.recipes.spans import Edit

    text = "a: 1\nenv:\n  LEN: '1.50'\n"
    at = text.index("'1.50'")
    with pytest.raises(PolicyError) as exc:
        _spliced("r.yaml", text, [Edit(at, at + 6, "'2.50'"), Edit(at, at + 6, "'2.99'")])
    assert str(exc.value) == ("r.yaml:3: one setting serves entries that need different "
                              "values: \"'1.50'\" would become \"'2.50'\" for one and "
                              "\"'2.99'\" for another; give each entry its own setting")
