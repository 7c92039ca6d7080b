"""Evidence extraction for the audit: bash scripts, recipe YAMLs, master configs, signals."""

import shlex
import textwrap

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.auditing import evidence as ev
from goldenal.auditing import master as ms
from goldenal.auditing import recipe, shell
from goldenal.recipes import shell as shell_text
from goldenal.core.errors import DuplicateKeyError
from goldenal.auditing.check import implied_al


def configs(text, path="benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh"):
    text = textwrap.dedent(text)
    return shell.script_configs(path, text, text.split("\n"))


# ------------------------------------------------------------------ bash

def test_escaped_json_in_if_else_with_eval_only():
    cfgs = configs('''\
        NUM_SPEC_TOKENS=3
        if [ "${EVAL_ONLY:-false}" = "true" ]; then
            SPEC_CONFIG="{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": $NUM_SPEC_TOKENS}"
        else
            SPEC_CONFIG="{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": $NUM_SPEC_TOKENS, \\"rejection_sample_method\\": \\"synthetic\\", \\"synthetic_acceptance_length\\": 2.49}"
        fi
        vllm serve "$MODEL" --speculative-config "$SPEC_CONFIG"
        ''', path="benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh")
    assert [(c.eval_only, c.knob, c.value, c.k, c.line, c.rejection_sample_method)
            for c in cfgs] == [
        (False, "synthetic_acceptance_length", "2.49", 3, 5, "synthetic"),
        (True, None, None, 3, 7, None),
    ]
    assert cfgs[0].engine == "vllm" and cfgs[0].model == ("dsv4",)


def test_printf_format_and_parameter_trimming():
    cfgs = configs('''\
        DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3-GQA"
        DRAFT_MODEL_PATH="/data/models/${DRAFT_MODEL##*/}"
        AL=2.775
        SPEC=$(printf '{"model":"%s","num_speculative_tokens":%d,"rejection_sample_method":"synthetic","synthetic_acceptance_length":%.2f}' "$DRAFT_MODEL_PATH" 3 "$AL")
        vllm serve x --speculative-config "$SPEC"
        ''', path="benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh")
    c, = cfgs
    # bash printf rounds 2.775 with the C library: 2.77 or 2.78 as binary rounding has it
    assert c.value == "%.2f" % 2.775
    assert (c.draft, c.k) == ("/data/models/MiniMax-M3-EAGLE3-GQA", 3)


def test_export_under_negated_eval_guard_and_unset():
    cfgs = configs('''\
        if [ "$EVAL_ONLY" = "true" ]; then
            unset TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS
        else
            export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78
        fi
        cat > c.yaml <<EOF
        speculative_config:
            decoding_type: Eagle3
            max_draft_len: 3
        EOF
        trtllm-serve "$MODEL_PATH" --config c.yaml
        ''', path="benchmarks/single_node/agentic/minimaxm3_fp4_b300_trt_mtp.sh")
    assert [(c.eval_only, c.knob, c.value, c.k, c.engine, c.method) for c in cfgs] == [
        (False, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.78", 3, "trtllm", "Eagle3"),
        (True, None, None, 3, "trtllm", "Eagle3"),
    ]


def test_case_on_concurrency_and_awk_rate():
    cfgs = configs('''\
        case "$CONC" in
            1|2) NUM_SPEC_TOKENS=3 ; AL=2.99 ;;
            *) NUM_SPEC_TOKENS=2 ; AL=2.50 ;;
        esac
        RATE=$(awk "BEGIN{print ($AL-1)/$NUM_SPEC_TOKENS}")
        python3 -m atom.entrypoints.openai.api_server --method mtp \\
            --num-speculative-tokens "$NUM_SPEC_TOKENS" --spec-decode-acceptance-rate "$RATE"
        ''', path="benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh")
    assert [(c.k, c.value, c.branch, c.line) for c in cfgs] == [
        (2, "0.75", 'case "$CONC" *)', 7),
        (3, "0.663333", 'case "$CONC" 1|2)', 7),
    ]
    assert implied_al(cfgs[0]) == 2.5


def test_infeasible_branch_combinations_are_pruned():
    cfgs = configs('''\
        if [ "$CONC" -le 8 ]; then
            K=7; AL=3.84
        else
            K=0
        fi
        if [ "$K" -gt 0 ]; then
            vllm serve x --speculative-config "{\\"num_speculative_tokens\\": $K, \\"rejection_sample_method\\": \\"synthetic\\", \\"synthetic_acceptance_length\\": $AL}"
        fi
        ''', path="benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh")
    # the K=0 arm cannot reach the launch, so $AL never appears unresolved
    assert [(c.k, c.value) for c in cfgs] == [(7, "3.84")]


def test_evaluate_test_and_expand():
    env = {"CONC": "4", "EVAL_ONLY": "true", "P": "/a/b/c"}
    assert shell_text.evaluate_test('[ "$CONC" -le 8 ]', env) is True
    assert shell_text.evaluate_test('[[ "${EVAL_ONLY:-false}" != "true" ]]', env) is False
    assert shell_text.evaluate_test('! [ "$CONC" = 4 ]', env) is False
    assert shell_text.evaluate_test('[ "$UNKNOWN" = 1 ]', env) is None
    assert shell_text.evaluate_test(("case", '"$CONC" in', "1|4"), env) is True
    assert shell_text.expand("${P##*/}:${P%/*}:${MISSING:-d}:${P:+set}", env) == "c:/a/b:d:set"
    assert shell_text.expand("$((2 * CONC + 1))", env) == "9"


# lines of the launchers the audit reads: knobs, K, drafts and methods under branches, values
# computed by awk, printf and $(( )), environment settings, unset
_LAUNCHER_LINES = st.sampled_from([
    "K=3", 'K="${K:-2}"', "AL=$(awk 'BEGIN{print 1+1.5}')", "N=$(( K + 1 ))",
    'printf -v R "%.2f" "$AL"', 'MODEL="${MODEL:-org/model}"', "unset K", 'echo "$K"',
    'if [ "$K" -eq 3 ]; then', 'if [[ "$EVAL_ONLY" == "true" ]]; then', 'elif [ "$N" -gt 2 ]; then',
    "else", "fi", 'case "$MODE" in', "a) K=4 ;;", "*) K=2 ;;", "esac",
    'vllm serve $MODEL --speculative-config "{\\"method\\":\\"mtp\\",'
    '\\"num_speculative_tokens\\":$K,\\"synthetic_acceptance_length\\":$AL}"',
    "python3 -m sglang.launch_server --model-path $MODEL --speculative-algorithm EAGLE \\",
    "  --speculative-num-steps $K --speculative-draft-model-path org/draft",
    "export SGLANG_SIMULATE_ACC_LEN=$AL", "SGLANG_SIMULATE_ACC_METHOD=match python3 x.py",
    "llama-server -m m.gguf --spec-type ngram --spec-draft-n-max $K", "LLAMA_ARG_SPEC_TYPE=ngram",
    "cat <<EOF > c.yaml", "speculative_config:", "  decoding_type: MTP", "  max_draft_len: $K",
    "EOF", "# --speculative-num-steps 9"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_LAUNCHER_LINES, max_size=14))
def test_a_script_reads_the_same_with_or_without_remembering(lines):
    """The replay remembers what each line says; forgetting it changes no config."""
    import contextlib

    text = "\n".join(lines) + "\n"
    remembered = shell.script_configs("x_sglang_mtp.sh", text, text.split("\n"))
    remembering = shell.remembering
    shell.remembering = contextlib.nullcontext
    try:
        fresh = shell.script_configs("x_sglang_mtp.sh", text, text.split("\n"))
    finally:
        shell.remembering = remembering
    assert remembered == fresh


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcXYZ019_./-", min_size=1, max_size=8), min_size=1,
                max_size=5))
def test_shell_words_agree_with_shlex(words):
    line = " ".join(shlex.quote(w) for w in words)
    assert shell_text.shell_words(line) == shlex.split(line)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=0, max_value=100, allow_nan=False), st.integers(0, 6))
def test_printf_matches_c_formatting(x, digits):
    fmt = f"%.{digits}f"
    assert shell_text.printf(fmt, [repr(x)]) == fmt % x


# ------------------------------------------------------------------ signals

def test_thinking_signals_each_kind():
    lines = [
        "--default-chat-template-kwargs '{\"enable_thinking\": false}'",
        "  chat_template_kwargs: {\"thinking\": true}",
        "    SGLANG_ENABLE_THINKING: \"0\"",
        '      dyn-default-thinking-mode: "enabled"',
        '    AIPERF_EXTRA_INPUTS: "thinking:true"',
        '--chat-template "$MODEL_PATH/chat_template_thinking.jinja"',
        "# enable_thinking: true (a comment is not a signal)",
        "THINKING_MODE=thinking_off",
        "    DYN_DEFAULT_THINKING_MODE: disabled",
        "    SGLANG_DEFAULT_THINKING: '1'",
    ]
    assert [(n, mode) for n, mode, _ in ev.thinking_signals(lines)] == [
        (1, "off"), (2, "on"), (3, "off"), (4, "on"), (5, "on"), (6, "on"), (8, "off"),
        (9, "off"), (10, "on")]


def test_client_signal_wins_over_server_default():
    sig = [(3, "off", "SGLANG_ENABLE_THINKING=0"),
           (9, "on", "benchmark client extra input thinking:true")]
    assert ev.decide_thinking(sig) == ("on", "benchmark client extra input thinking:true (line 9)")
    mode, why = ev.decide_thinking([(1, "on", "a"), (2, "off", "b")])
    assert mode is None and why.startswith("conflicting thinking-mode signals")


def test_agentic_and_eval_paths():
    assert ev.agentic_from_path("benchmarks/single_node/agentic/x.sh") is True
    assert ev.agentic_from_path("recipes/trtllm/deepseek-v4/agentx-gb300/x.yaml") is True
    assert ev.agentic_from_path("recipes/vllm/deepseek-v4/8k1k/x.yaml") is False
    assert ev.agentic_from_path("benchmarks/single_node/dsv4_fp4_b200_mtp.sh") is False
    assert ev.agentic_from_path("serve/x.yaml") is None
    assert ev.eval_from_path("a/1p1d-tp2-c20-eval-agentic.yaml") is True
    assert ev.eval_from_path("a/evaluation/1p1d-agentic.yaml") is False


def test_image_versions():
    assert ev.image_version("vllm/vllm-openai:v0.19.1") == (0, 19, 1)
    assert ev.image_version("vllm/vllm-openai:v0.20.1-ubuntu2404") == (0, 20, 1)
    assert ev.image_version("lmsysorg/sglang:v0.5.16-cu130") == (0, 5, 16)
    assert ev.image_version("vllm/vllm-openai:nightly-5e35a6f") is None


# ------------------------------------------------------------------ recipes

RECIPE = """\
name: r
model:
  path: m
  container: vllm/vllm-openai:v0.21.0
backend:
  type: vllm
  vllm_config:
    prefill: &w
      served-model-name: MiniMaxAI/MiniMax-M3
      speculative-config: '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.83}'
    decode:
      <<: *w
      max-num-seqs: 8
benchmark:
  type: custom
  huge: [1, 2, 3]
"""


def test_recipe_anchor_merge_and_roles():
    cfgs = recipe.recipe_configs("vllm/minimax-m3/agentic/r.yaml", RECIPE, RECIPE.split("\n"))
    assert [(c.role, c.line, c.k, c.drafts, c.value, c.image) for c in cfgs] == [
        ("prefill", 10, 3, False, "2.83", "vllm/vllm-openai:v0.21.0"),
        ("decode", 10, 3, True, "2.83", "vllm/vllm-openai:v0.21.0"),
    ]


def test_recipe_sections_keep_line_numbers():
    from goldenal.engines.locate import RECIPE_SECTIONS
    from goldenal.recipes.spans import keep_sections

    # benchmark: is read (its type and lengths say fixed-length or agentic); others are not
    recipe = RECIPE.replace("benchmark:", "profiling:")
    sliced = keep_sections(recipe, RECIPE_SECTIONS)
    assert sliced.count("\n") == recipe.count("\n")
    assert "huge" not in sliced and "speculative-config" in sliced
    assert sliced == recipe[:recipe.index("profiling:")] + "\n" * 3
    assert keep_sections(RECIPE, RECIPE_SECTIONS) is None
    assert keep_sections("base:\n  backend: {}\nother: 1\n", RECIPE_SECTIONS) is None


# ------------------------------------------------------------------ master

MASTER = """\
e1:
  model: deepseek-ai/DeepSeek-V4-Pro
  framework: dynamo-sglang
  scenarios:
    agentic-coding:
    - search-space:
      - conc-list: [1]
        prefill:
          additional-settings:
          # throughput only
          - "SYNTHETIC_ACCEPTANCE=true"
          - "SYNTHETIC_ACCEPTANCE_LENGTH=2.27"
          - "CONFIG_FILE=recipes/sglang/deepseek-v4/agentic/a.yaml"
"""


def test_master_injections_and_reference_resolution():
    inj, = ms.injections("configs/x-master.yaml", MASTER.split("\n"))
    assert (inj.line, inj.col, inj.value, inj.enabled, inj.scenario, inj.role, inj.entry) == (
        12, 14, "2.27", True, "agentic-coding", "prefill", "e1")
    assert inj.header == {"model": "deepseek-ai/DeepSeek-V4-Pro", "framework": "dynamo-sglang"}
    paths = ["benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/a.yaml",
             "benchmarks/multi_node/srt-slurm-recipes/sglang/qwen3.5/agentic/a.yaml"]
    assert ms.resolve_recipe(inj.recipe, paths) == paths[0]
    assert ms.resolve_recipe("recipes/sglang/kimi/agentic/zzz.yaml", paths) is None
    assert ms.engine_of("dynamo-trt") == "trtllm"


def test_recipe_reader_agrees_with_engine_adapters():
    """The audit's configs and goldenal.engines.read_settings see the same settings.

    Both come from one parser (goldenal.engines.locate); the audit reads only a
    recipe's serving sections, read_settings the whole file: this pins the two
    views together on every fixture recipe.
    """
    import glob
    import os

    from goldenal.engines import read_settings

    root = os.path.join(os.path.dirname(__file__), "data", "audit", "repo")
    checked = 0
    for path in sorted(glob.glob(os.path.join(root, "benchmarks/multi_node/**/*.yaml"),
                                 recursive=True)):
        if "broken" in path:
            continue
        with open(path) as fh:
            text = fh.read()
        if "-dup-" in path:     # both refuse it, at the same key
            with pytest.raises(DuplicateKeyError) as mine_refusal:
                recipe.recipe_configs(path, text, text.split("\n"))
            with pytest.raises(DuplicateKeyError) as their_refusal:
                read_settings(path, text)
            assert str(mine_refusal.value) == str(their_refusal.value) == (
                f"{path}:23: duplicate key 'speculative-num-steps' (first at line 19)")
            continue
        mine = recipe.recipe_configs(path, text, text.split("\n"))
        theirs = read_settings(path, text)
        # the knob's line must agree; without a knob each reader points at a spec key
        mine_t = sorted({(c.role, c.engine, c.knob, c.value, c.k, c.draft, c.method,
                          c.line if c.knob else None) for c in mine if c.spec})
        # an SGLang PD prefill carries the decode worker's cell (docs/engines.md §2.4)
        decode_k = {s.extra.get("section"): s.k for s in theirs
                    if s.engine == "sglang" and s.role == "decode"}

        def k_of(s):
            if s.engine == "sglang" and s.role == "prefill":
                return decode_k.get(s.extra.get("section"), s.k)
            return s.k

        theirs_t = sorted({(s.role, s.engine, s.knob, s.value, k_of(s), s.draft, s.method,
                            s.line if s.knob else None) for s in theirs})
        assert mine_t == theirs_t, path
        checked += 1
    assert checked == 16


def test_yaml_alias_bomb_multi_document_and_recursive_alias():
    from goldenal.recipes import spans

    levels = ["  a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        levels.append(f"  {cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    doc = spans.compose("backend:\n" + "\n".join(levels) + "\n", first=True)
    backend = spans.get(doc, "backend")
    assert len(spans.pairs(backend)) == 10      # 9**10 leaves if expanded; nodes are shared
    assert spans.get(backend, "j").value[0] is spans.get(backend, "i")
    first = spans.compose("backend: {type: vllm}\n---\nother: 1\n", first=True)
    assert spans.to_python(first) == {"backend": {"type": "vllm"}}
    loop = spans.get(spans.compose("backend: &r [1, *r]\n", first=True), "backend")
    assert loop.value[1] is loop
    # a mapping merging itself ends too, and keeps its own keys
    self_merge = spans.compose("backend: &b\n  type: vllm\n  <<: *b\n")
    assert [k.value for k, _ in spans.pairs(spans.get(self_merge, "backend"))] == ["type"]
    # an audited recipe reads the same way: the bomb costs its size, not its expansion
    assert recipe.recipe_configs("r.yaml", "backend:\n" + "\n".join(levels) + "\n", []) == []


@pytest.mark.parametrize("path, text, draft, method", [
    ("x_vllm_mtp.sh", "vllm serve org/m --speculative-config "
     "'{\"method\":\"eagle3\",\"model\":\"org/head\",\"num_speculative_tokens\":3,"
     "\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":2.5}'",
     "org/head", "eagle3"),
    ("x_vllm_mtp.sh", "vllm serve org/m --spec-method mtp --spec-tokens 3 --speculative-config "
     "'{\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":2.5}'",
     None, "mtp"),
    ("x_sglang_mtp.sh", "export SGLANG_SIMULATE_ACC_LEN=2.5\npython3 -m sglang.launch_server "
     "--speculative-algorithm EAGLE --speculative-num-steps 3 "
     "--speculative-draft-model-path org/head", "org/head", "EAGLE"),
    ("x_trt_mtp.sh", "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.5\n"
     "cat <<EOF > c.yaml\nspeculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 3\n"
     "speculative_model_dir: org/head\nEOF\ntrtllm-serve org/m --config c.yaml",
     "org/head", "Eagle3"),
    ("x_atom_mtp.sh", "python3 -m atom.entrypoints.openai_server --method eagle3 "
     "--draft-model org/head --num-speculative-tokens 3 --spec-decode-acceptance-length 2.5",
     "org/head", "eagle3"),
])
def test_the_draft_and_method_are_read_as_the_records_spell_them(path, text, draft, method):
    (cfg,) = shell.script_configs(path, text, text.split("\n"))
    assert (cfg.draft, cfg.method) == (draft, method)
