"""Knobs written in unusual but legal places are read, or reported as found but not checked.

Fixtures are written here after the real cases: a vLLM launcher passing its
speculative config as escaped JSON in a double-quoted bash string, an ATOM
guide pinning a rate in a fenced Markdown block, and an reStructuredText page.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goldenal.auditing import audit, audit_report
from goldenal.auditing.markdown import fenced_code

ESCAPED = (
    "#!/usr/bin/env bash\n"
    "vllm serve deepseek-ai/DeepSeek-V4-Pro \\\n"
    "  --speculative-config \"{\\\"method\\\":\\\"mtp\\\",\\\"num_speculative_tokens\\\":3,"
    "\\\"rejection_sample_method\\\":\\\"synthetic\\\",\\\"synthetic_acceptance_length\\\":2.54}\" "
    "\\\n  --default-chat-template-kwargs '{\"enable_thinking\": true}'\n")
GUIDE = (
    "# Running DeepSeek-V4 on ATOM\n\n"
    "Start the server:\n\n"
    "```bash\n"
    "python3 -m atom.entrypoints.openai_server --model deepseek-ai/DeepSeek-V4-Pro \\\n"
    "  --method mtp --num-speculative-tokens 2 --spec-decode-acceptance-rate 0.77\n"
    "```\n")


def by_code(findings):
    return [(f.path, f.line, f.code) for f in findings]


def test_escaped_json_in_a_double_quoted_string_is_read_on_every_path(tmp_path):
    """Off the agentic path the file was dropped as 'names a knob but never sets one'."""
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "dsv4_fp4_b200_vllm_mtp.sh").write_text(ESCAPED)
    (tmp_path / "single_node").mkdir()
    (tmp_path / "single_node" / "dsv4_fp4_b200_vllm_mtp.sh").write_text(ESCAPED)
    findings = audit([tmp_path])
    assert by_code(findings) == [("agentic/dsv4_fp4_b200_vllm_mtp.sh", 3, "GAL201"),
                                 ("single_node/dsv4_fp4_b200_vllm_mtp.sh", 3, "GAL302")]
    assert findings[0].found == "2.54" and findings[0].expected == "2.49"


def test_a_fenced_markdown_block_is_read_like_a_script(tmp_path):
    """An ATOM guide pinning rate 0.77 at K=2 (AL 2.54): no longer passes unread."""
    (tmp_path / "docs" / "agentic").mkdir(parents=True)
    (tmp_path / "docs" / "agentic" / "atom-guide.md").write_text(GUIDE)
    report = audit_report([tmp_path])
    f = [f for f in report.findings if f.code == "GAL201"][0]
    assert (f.path, f.line, f.found, f.expected) == ("docs/agentic/atom-guide.md", 7, "0.77",
                                                     "0.635")
    assert f.message.startswith("--spec-decode-acceptance-rate 0.77 (AL 2.54) differs from the "
                                "golden cell dsv4_mtp thinking_on K=2: expected 0.635")
    assert report.configs_checked == 1 and report.skipped == ()



def test_knobs_beside_a_read_block_are_still_found_not_checked(tmp_path):
    """A guide whose shell block is checked may pin other values in prose or in a block
    of another language, as InferenceX's golden README does with a YAML block."""
    (tmp_path / "docs" / "agentic").mkdir(parents=True)
    (tmp_path / "docs" / "agentic" / "atom-guide.md").write_text(
        GUIDE + "\nOn SGLang, export SGLANG_SIMULATE_ACC_LEN=2.27 before launch.\n\n"
                "```yaml\nSGLANG_SIMULATE_ACC_LEN: '3.24'\n```\n")
    found = [(f.line, f.col, f.code) for f in audit([tmp_path]) if f.code != "GAL305"]
    assert found == [(7, 73, "GAL201"), (10, 19, "GAL309"), (13, 1, "GAL309")]

def test_a_knob_seen_but_not_understood_is_found_not_checked(tmp_path):
    (tmp_path / "guide.rst").write_text(
        ".. code-block:: bash\n\n   vllm serve X --spec-decode-acceptance-length 2.54\n")
    (tmp_path / "notes.md").write_text("Set `SGLANG_SIMULATE_ACC_LEN=2.99` on the server.\n")
    (tmp_path / "agentic").mkdir()
    # the command is built at run time: the knob is read, its cell "cannot be determined"
    (tmp_path / "agentic" / "launch.sh").write_text(
        'CMD="$(cat cmd.txt)"\nexport SGLANG_SIMULATE_ACC_LEN=2.99\neval "$CMD"\n')
    everything = audit([tmp_path])
    assert [(f.path, f.code) for f in everything if f.path.startswith("agentic/")] == [
        ("agentic/launch.sh", "GAL304")]
    findings = [f for f in everything if f.code == "GAL309"]
    assert [(f.path, f.line, f.col, f.severity) for f in findings] == [
        ("guide.rst", 3, 17, "warning"), ("notes.md", 1, 6, "warning")]
    assert findings[0].message == (
        "--spec-decode-acceptance-length is set here but not checked: documentation in this "
        "format is not read (only fenced shell blocks in Markdown are)")


def test_fenced_code_keeps_line_numbers_and_only_shell_blocks():
    lines = ["# t", "```python", "x = 'SGLANG_SIMULATE_ACC_LEN=2'", "```", "~~~~ console",
             "$ export A=1", "```", "still code", "~~~~", "after"]
    assert fenced_code(lines) == ["", "", "", "", "", "  export A=1", "```", "still code",
                                  "", ""]


@given(st.lists(st.sampled_from(["```", "```bash", "~~~", "text", "$ run", "    ```", ""]),
                max_size=30))
def test_fenced_code_is_line_for_line(lines):
    out = fenced_code(lines)
    assert len(out) == len(lines)
    assert all(o == "" or o == line or o == line.replace("$ ", "  ", 1)
               for o, line in zip(out, lines))


def test_a_comment_ending_in_a_backslash_does_not_swallow_the_next_command(tmp_path):
    """`# old command \\` used to join the launch command after it: K was reported missing."""
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "glm5.2_fp4_b200_sglang_mtp.sh").write_text(
        "#!/usr/bin/env bash\n"
        "export SGLANG_SIMULATE_ACC_LEN=2.50\n"
        "# python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 --old-flag \\\n"
        "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 \\\n"
        "  --speculative-num-steps 3 --speculative-eagle-topk 1 \\\n"
        "  --default-chat-template-kwargs '{\"enable_thinking\": true}'  # thinking on \\\n"
        "echo started\n")
    f, = audit([tmp_path])
    assert (f.code, f.line, f.found, f.expected) == ("GAL201", 2, "2.50", "2.99")


def test_continues():
    from goldenal.recipes.shell import continues

    assert continues("vllm serve X \\")
    assert not continues("# vllm serve X \\")
    assert not continues("   # indented comment \\")
    assert not continues("vllm serve X  # note \\")
    assert continues("echo '# not a comment' \\")


def test_trtllm_k_from_num_nextn_predict_layers_in_a_heredoc(tmp_path):
    """The AL itself (not AL - 1) used to pass here: K was 'undeterminable'."""
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "dsv4_fp4_b200_trt_mtp.sh").write_text(
        "#!/usr/bin/env bash\n"
        "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.49\n"
        "cat > /tmp/extra.yaml <<EOF\n"
        "speculative_config:\n"
        "  decoding_type: MTP\n"
        "  num_nextn_predict_layers: 3\n"
        "EOF\n"
        "trtllm-serve deepseek-ai/DeepSeek-V4-Pro --extra_llm_api_options /tmp/extra.yaml\n")
    f = [f for f in audit([tmp_path]) if f.code != "GAL305"]
    assert [(x.code, x.found, x.expected) for x in f] == [("GAL202", "2.49", "1.49")]


def test_a_knob_on_a_server_no_benchmark_drives(tmp_path):
    demo = ("export SGLANG_SIMULATE_ACC_LEN=2.99\n"
            "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
            "--speculative-num-steps 3 --speculative-eagle-topk 1 "
            "--default-chat-template-kwargs '{\"enable_thinking\": true}'\n")
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "chat.sh").write_text(demo)
    (tmp_path / "demo" / "bench.sh").write_text(demo + "python3 -m sglang.bench_serving "
                                                       "--backend sglang\n")
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "glm.sh").write_text(demo)
    bench, chat = audit([tmp_path])
    assert (chat.path, chat.line, chat.code, chat.severity) == ("demo/chat.sh", 1, "GAL310",
                                                                "warning")
    # its client states no lengths and replays no traces: a benchmark of either kind
    assert (bench.path, bench.code) == ("demo/bench.sh", "GAL304")
    assert "agentic or fixed-sequence-length" in bench.message


ATOM_DSPARK = (
    "#!/usr/bin/env bash\n"
    "{comment}\n"
    "python3 -m atom.entrypoints.openai.api_server --model moonshotai/Kimi-K3 --method dspark \\\n"
    "  --draft-model Inferact/Kimi-K3-DSpark --num-speculative-tokens 2 \\\n"
    "  --spec-decode-acceptance-length {value}\n")
PROBABILISTIC = "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method"


def _atom(tmp_path, comment, value):
    (tmp_path / "agentic").mkdir(exist_ok=True)
    (tmp_path / "agentic" / "kimik3_fp4_mi355x_atom_mtp.sh").write_text(
        ATOM_DSPARK.format(comment=comment, value=value))
    return [f for f in audit([tmp_path]) if f.code != "GAL305"]


def test_a_cited_curve_decides_the_variant_the_engine_cannot_select(tmp_path):
    url = ("# AL from https://github.com/SemiAnalysisAI/InferenceX/blob/main/"
           f"golden_al_distribution/{PROBABILISTIC}.yaml (K=2)")
    f, = _atom(tmp_path, url, "2.51")
    assert (f.code, f.severity) == ("GAL311", "info")
    assert f"cites curve {PROBABILISTIC}, which decides" in f.message
    # measured against the cited curve, not against the variant-less one
    value = [x for x in _atom(tmp_path, url, "2.45") if x.code == "GAL201"]
    assert [(x.found, x.expected) for x in value] == [("2.45", "2.51")]


ATOM_DSPARK_BRANCHES = """\
#!/usr/bin/env bash
MODEL_PATH=${{MODEL_PATH:-moonshotai/Kimi-K3}}

# ---- Speculative ----------------------------------------------------------
# https://github.com/SemiAnalysisAI/InferenceX/blob/main/golden_al_distribution/{curve}.yaml
#  6 draft tokens -> AL 3.75
#  2 draft tokens -> AL 2.51
# upstream ATOM change that added the knob
if [ "$CONC" = 1 ]; then
    SPEC_DECODE_AL=3.75
    NUM_SPEC_TOKENS=6
else
    SPEC_DECODE_AL=2.51
    NUM_SPEC_TOKENS=2
fi

SPEC_ARGS=(
    --method dspark
    --draft-model Inferact/Kimi-K3-DSpark
    --num-speculative-tokens "$NUM_SPEC_TOKENS"
    --spec-decode-acceptance-length "$SPEC_DECODE_AL"
)
python -m atom.entrypoints.openai_server --model "$MODEL_PATH" "${{SPEC_ARGS[@]}}" &
run_benchmark_serving --model "$MODEL_PATH"
"""


@pytest.mark.parametrize("blank", [False, True])
def test_a_curve_cited_above_the_branches_that_set_the_value_decides(tmp_path, blank):
    """InferenceX's Kimi-K3 ATOM launcher: the URL heads the if/else assigning the AL,
    five and eight lines above the literals and far from the flag."""
    text = ATOM_DSPARK_BRANCHES.format(curve=PROBABILISTIC)
    if blank:   # a blank line ends the paragraph: the citation is no longer next to it
        text = text.replace("# upstream ATOM", "\n# upstream ATOM")
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "kimik3_fp4_mi355x_atom_mtp.sh").write_text(text)
    found = [f for f in audit([tmp_path]) if f.code != "GAL305"]
    if blank:
        assert [f.code for f in found] == ["GAL304", "GAL304"]
    else:
        assert [f.code for f in found] == ["GAL311", "GAL311"]
        assert all(f"cites curve {PROBABILISTIC}, which decides" in f.message for f in found)


def test_without_engine_setting_or_citation_the_variant_cannot_be_determined(tmp_path):
    f, = _atom(tmp_path, "# Kimi-K3 DSpark launcher", "2.51")
    assert (f.code, f.severity) == ("GAL304", "info")
    assert "no comment next to the knob cites a curve" in f.message


MATRIX = """\
name: ATOM agentic benchmark
jobs:
  benchmark:
    strategy:
      matrix:
        include:
          - model: deepseek-ai/DeepSeek-V4-Pro
            scenario: agentic
            extra_args: "--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-length 2.54"
          - model: deepseek-ai/DeepSeek-V4-Pro
            scenario: agentic
            extra_args: "--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-length 2.54"
          - model: deepseek-ai/DeepSeek-V4-Pro
            scenario: 8k1k
            extra_args: "--method mtp --num-speculative-tokens 2 --spec-decode-acceptance-rate 0.77"
    steps:
      - run: python3 -m atom.entrypoints.openai_server --model ${{ matrix.model }} ${{ matrix.extra_args }}
"""


def test_every_entry_of_a_ci_matrix_is_read(tmp_path):
    """Two identical entries are two runs: both reported, none dropped."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "atom.yaml").write_text(MATRIX)
    report = audit_report([tmp_path])
    got = [(f.line, f.col, f.code, f.found, f.expected) for f in report.findings
           if f.code != "GAL305"]
    assert got == [(9, 98, "GAL201", "2.54", "2.49"), (12, 98, "GAL201", "2.54", "2.49"),
                   (15, 66, "GAL302", "0.77", None)]
    assert report.configs_checked == 3


def test_a_line_continuation_lexes_the_same_whole_or_line_by_line():
    """Found by the lexer's property test: a backslash-newline, then `#'`."""
    from goldenal.recipes.shell import lex, quote_stack

    for chunks in (["\\", "#'"], ["a \\", "#'"], ["a\\", "#'"]):
        stack = quote_stack(chunks[0], [])
        for chunk in chunks[1:]:
            stack = quote_stack("\n" + chunk, stack)
        assert stack == lex("\n".join(chunks))[1] == []


def test_trtllm_gal201_shows_the_al_next_to_the_engines_own_unit(tmp_path):
    (tmp_path / "agentic").mkdir()
    (tmp_path / "agentic" / "dsv4_fp4_b200_trt_mtp.sh").write_text(
        "#!/usr/bin/env bash\n"
        "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.20\n"
        "cat > /tmp/extra.yaml <<EOF\n"
        "speculative_config:\n"
        "  decoding_type: MTP\n"
        "  num_nextn_predict_layers: 3\n"
        "EOF\n"
        "trtllm-serve deepseek-ai/DeepSeek-V4-Pro --extra_llm_api_options /tmp/extra.yaml\n")
    f, = [f for f in audit([tmp_path]) if f.code != "GAL305"]
    assert (f.code, f.found, f.expected) == ("GAL201", "1.20", "1.49")
    assert f.message == ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.20 (AL 2.2) differs "
                         "from the golden cell dsv4_mtp thinking_on K=3: expected 1.49 (AL 2.49)")


def test_a_collection_as_a_key_beside_a_ci_matrix_entry_is_passed_over(tmp_path):
    """Regression: ``? [a]`` beside an entry's ``extra_args`` was a sibling named by a list
    (TypeError: unhashable type); the entry reads as without it."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "atom.yaml").write_text(MATRIX.replace(
        "          - model: deepseek-ai/DeepSeek-V4-Pro\n            scenario: 8k1k\n",
        "          - model: deepseek-ai/DeepSeek-V4-Pro\n            ? [a]\n            : 1\n"
        "            scenario: 8k1k\n"))
    report = audit_report([tmp_path])
    got = [(f.line, f.col, f.code, f.found, f.expected) for f in report.findings
           if f.code != "GAL305"]
    assert got == [(9, 98, "GAL201", "2.54", "2.49"), (12, 98, "GAL201", "2.54", "2.49"),
                   (17, 66, "GAL302", "0.77", None)]


VLLM_SPEC_MAPPING = """\
name: minimax-m3-vllm-agg-h200-agentic
model:
  path: minimax-m3
  container: vllm/vllm-openai:v0.19.1
backend:
  type: vllm
  vllm_config:
    aggregated:
      served-model-name: MiniMaxAI/MiniMax-M3
      default-chat-template-kwargs: '{"thinking_mode": "enabled"}'
      speculative-config:
        method: eagle3
        model: Inferact/MiniMax-M3-EAGLE3
        num_speculative_tokens: 3
        rejection_sample_method: synthetic
        synthetic_acceptance_length: 2.83
        ? [b]
        : 2
"""


def test_a_collection_as_a_key_in_a_speculative_config_mapping_is_passed_over(tmp_path):
    """Regression: ``? [b]`` in a vLLM speculative-config mapping raised TypeError
    (unhashable type) while its members' text was read; the other members still count."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "agg-h200-agentic.yaml").write_text(VLLM_SPEC_MAPPING)
    report = audit_report([tmp_path])
    assert [(f.line, f.col, f.code) for f in report.findings] == [(12, 9, "GAL206")]
    assert report.configs_checked == 1


def test_lists_where_a_vllm_speculative_config_names_things_are_no_names(tmp_path):
    """Regression (atheris): ``model: [2, 3, 4]`` in a speculative-config mapping reached the
    audit's config key as a list (TypeError, unhashable type); a list there names nothing."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "agg-h200-agentic.yaml").write_text(
        VLLM_SPEC_MAPPING.replace("model: Inferact/MiniMax-M3-EAGLE3", "model: [2, 3, 4]")
        .replace("rejection_sample_method: synthetic", "rejection_sample_method: [synthetic]")
        .replace("        ? [b]\n        : 2\n", "        draft_sample_method: [greedy]\n"))
    report = audit_report([tmp_path])
    assert [(f.line, f.code) for f in report.findings] == [(12, "GAL205")]
    assert report.configs_checked == 1
