"""goldenal.audit on a recipe tree modelled on InferenceX layouts (tests/data/audit/repo).

Every rule and every evidence path has a fixture file; each finding is asserted
exactly (path, line, column, code, found, expected).  Golden values come from
the packaged curves (the upstream committed values).
"""

import os

import pytest

from goldenal.auditing import Finding, audit
from goldenal.golden.registry import load_registry

HERE = os.path.dirname(__file__)
REPO = os.path.join(HERE, "data", "audit", "repo")
MN = "benchmarks/multi_node/srt-slurm-recipes"
SN = "benchmarks/single_node"


@pytest.fixture(scope="module")
def registry():
    return load_registry()


@pytest.fixture(scope="module")
def findings(registry):
    return audit([REPO], root=REPO, registry=registry)


def by(findings, path, code=None):
    return [f for f in findings if f.path == path and (code is None or f.code == code)]


EXPECTED = [
    # (path, line, col, code, found, expected)
    ("benchmarks/multi_node/amd_utils/server_sglang.sh", 22, 33, "GAL201", "2.50", "2.49"),
    ("benchmarks/multi_node/amd_utils/server_sglang.sh", 22, 33, "GAL305", None, None),
    ("benchmarks/multi_node/amd_utils/server_sglang.sh", 22, 33, "GAL305", None, None),
    (f"{MN}/sglang/glm5.2/agentic/agg-gb200-broken-mtp.yaml", 8, 1, "GAL306", None, None),
    (f"{MN}/sglang/glm5.2/agentic/agg-gb200-tp8-c2-mtp.yaml", 12, 30, "GAL204", "2.5", "1.84"),
    (f"{MN}/sglang/glm5.2/agentic/agg-gb200-tp8-c4-topk-mtp.yaml", 11, 30, "GAL206", "2.99", "2.99"),
    (f"{MN}/sglang/glm5.2/agentic/agg-gb200-tp8-c4-topk-mtp.yaml", 11, 41, "GAL308", None, None),
    (f"{MN}/sglang/glm5.2/agentic/agg-gb300-tp4-dup-steps-mtp.yaml", 23, 7, "GAL312", None, None),
    (f"{MN}/sglang/glm5.2/agentic/agg-h200-old-sglang-mtp.yaml", 13, 30, "GAL206", "2.99",
     "2.99"),
    (f"{MN}/sglang/glm5.2/agentic/glm5.2-agentx.yaml", 12, 33, "GAL201", "2.99", "2.50"),
    (f"{MN}/trtllm/glm5.2/agentic/dynamo-agg-gb300-tp8-mtp3.yaml", 8, 49, "GAL206", "0", "1.99"),
    (f"{MN}/trtllm/minimax-m3/agentic/agg-gb300-tep8-two-model.yaml", 8, 49, "GAL206", "1.78",
     "1.78"),
    (f"{MN}/trtllm/minimax-m3/agentic/disagg-gb300-1p1d-tep8-mtp3.yaml", 9, 50, "GAL202", "2.78",
     "1.78"),
    (f"{MN}/vllm/kimi-k3/agentic/agg-gb200-dspark4-agentic.yaml", 11, 27, "GAL305", None, None),
    (f"{MN}/vllm/kimi-k3/agentic/agg-gb200-dspark4-agentic.yaml", 11, 214, "GAL201", "3.22", "3.36"),
    (f"{MN}/vllm/kimi-k3/agentic/agg-gb200-dspark7-agentic.yaml", 10, 1, "GAL301", None, None),
    (f"{MN}/vllm/minimax-m3/agentic/1p1d-tep4-tp4-c1-agentic.yaml", 17, 183, "GAL201", "2.83",
     "2.78"),
    (f"{MN}/vllm/minimax-m3/agentic/agg-gb200-no-method-agentic.yaml", 11, 27, "GAL205", "2.93",
     "2.93"),
    (f"{MN}/vllm/minimax-m3/agentic/agg-h200-old-image-agentic.yaml", 11, 27, "GAL206", "2.83",
     "2.83"),
    (f"{SN}/agentic/dsv4_fp4_mi355x_atom_mtp.sh", 4, 32, "GAL206", "2.49", None),
    (f"{SN}/agentic/dsv4_fp4_mi355x_atom_mtp.sh", 4, 32, "GAL305", None, None),
    (f"{SN}/agentic/foo_fp8_h100_sglang_mtp.sh", 3, 8, "GAL101", "2.80", None),
    (f"{SN}/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", 12, 77, "GAL203", "0.5", "0.75"),
    (f"{SN}/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", 12, 77, "GAL305", None, None),
    (f"{SN}/agentic/glm5.2_fp8_h200_sglang_mtp.sh", 3, 8, "GAL102", "2.99", None),
    (f"{SN}/agentic/kimik2.5_fp4_b300_vllm_mtp.sh", 3, 181, "GAL304", "2.88", None),
    (f"{SN}/agentic/kimik3_fp4_mi355x_atom_mtp.sh", 21, 9, "GAL304", "2.51", None),
    (f"{SN}/agentic/kimik3_fp4_mi355x_atom_mtp.sh", 21, 9, "GAL305", None, None),
    (f"{SN}/agentic/kimik3_fp4_mi355x_atom_mtp.sh", 21, 9, "GAL311", None, None),
    (f"{SN}/agentic/minimaxm3_fp4_b200_mtp.sh", 17, 109, "GAL201", "2.83", "2.78"),
    (f"{SN}/agentic/minimaxm3_fp4_b300_trt_mtp.sh", 14, 12, "GAL305", None, None),
    (f"{SN}/agentic/qwen3.5_fp4_b200_sglang_mtp.sh", 3, 8, "GAL303", "3.39", None),
    (f"{SN}/agentic/qwen3.5_fp4_b300_sglang_mtp.sh", 4, 12, "GAL303", "3.39", None),
    (f"{SN}/agentic/qwen3.5_fp4_b300_sglang_mtp.sh", 6, 1, "GAL301", None, None),
    (f"{SN}/agentic/qwen3.5_fp8_h200_mtp.sh", 3, 1, "GAL301", None, None),
    (f"{SN}/agentic/qwen3.5_fp8_mi300x_mtp.sh", 4, 12, "GAL206", "3.39", "3.39"),
    (f"{SN}/agentic/tiny_gguf_cpu_llamacpp_draft.sh", 5, 5, "GAL207", "1,0.83", None),
    (f"{SN}/dsv4_fp4_b200_sglang_mtp.sh", 3, 8, "GAL302", "2.49", None),
    (f"{SN}/serve_configs/agentic-blob.bin", 1, 1, "GAL306", None, None),
    (f"{SN}/serve_configs/glm-agentic-serve.json", 1, 1, "GAL306", None, None),
    (f"{SN}/serve_configs/minimax-m3-agentic-serve.yaml", 9, 32, "GAL201", "3.11", "3.02"),
    ("configs/test-master.yaml", 22, 42, "GAL201", "2.49", "2.27"),
    ("configs/test-master.yaml", 44, 14, "GAL307", "2.27", None),
    ("configs/test-master.yaml", 63, 14, "GAL302", "2.27", None),
    ("docs/atom-recipes.rst", 9, 46, "GAL309", None, None),
    ("docs/glm5.2-chat-guide.md", 9, 8, "GAL313", "2.99", None),
    ("examples/glm5.2_chat_server.sh", 3, 8, "GAL310", "2.99", None),
]


def test_every_finding_of_the_fixture_tree(findings):
    got = [(f.path, f.line, f.col, f.code, f.found, f.expected) for f in findings]
    assert got == EXPECTED


def test_clean_fixtures_give_no_value_findings(findings):
    # correct values, guarded by EVAL_ONLY, with thinking signals: nothing at all
    for name in ("dsv4_fp4_b200_vllm_mtp.sh", "glm5.2_fp4_b200_sglang_mtp.sh",
                 "bar_fp8_h100_sglang_mtp.sh", "kimik2.5_fp4_b200_vllm_mtp.sh"):
        assert by(findings, f"{SN}/agentic/{name}") == []
    # per-role K: prefill drafts 1 token with 2.5, decode drafts 2 with the K=2 cell 2.50
    assert by(findings, f"{MN}/sglang/glm5.2/agentic/disagg-gb200-1p4d-dep8-tp4-c48-mtp.yaml") == []
    # eval recipes keep real verification: no knob, no finding
    assert by(findings, f"{MN}/vllm/minimax-m3/agentic/1p1d-tp2-tp4-c20-eval-agentic.yaml") == []
    # a recipe whose knob is injected by a master-config entry is not a GAL301
    assert by(findings, f"{MN}/vllm/deepseek-v4/agentic/agg-gb200-tp8-mtp2-agentic.yaml") == []


def test_finding_is_a_named_tuple(findings):
    f = findings[0]
    assert isinstance(f, Finding)
    assert Finding._fields == ("code", "name", "severity", "path", "line", "col", "message",
                               "found", "expected", "fix", "related", "edit")
    assert f.name == "golden-value-mismatch" and f.severity == "error"


def test_shared_launcher_gated_by_agentic_variable(findings):
    # defaults (${DECODE_MTP_SIZE:-0}) do not prune branches; the case arm pins K;
    # the knob sits in a string used as the command's environment prefix; the
    # embedded multi-line python -c '...' is one word, not bash
    fs = by(findings, "benchmarks/multi_node/amd_utils/server_sglang.sh")
    value = [f for f in fs if f.code == "GAL201"]
    assert len(value) == 1
    assert value[0].message.startswith(
        "SGLANG_SIMULATE_ACC_LEN=2.50 differs from the golden cell dsv4_mtp thinking_on K=3: "
        "expected 2.49; 2.50 is glm5.2_mtp thinking_on K=2")
    assert '*DeepSeek-V4*:3)' in value[0].message


# ------------------------------------------------------------------ messages

def test_gqa_head_served_with_non_gqa_value(findings):
    f, = by(findings, f"{MN}/vllm/minimax-m3/agentic/1p1d-tep4-tp4-c1-agentic.yaml", "GAL201")
    assert f.message == (
        "synthetic_acceptance_length=2.83 differs from the golden cell minimaxm3_eagle3_gqa "
        "thinking_on K=3: expected 2.78; 2.83 is minimaxm3_eagle3 thinking_on K=3, but this "
        "config serves Inferact/MiniMax-M3-EAGLE3-GQA thinking_on K=3 [role decode]")
    assert f.fix == "replace 2.83 with 2.78"
    # the knob sits on the anchored prefill mapping that decode merges (<<: *worker)
    assert f.line == 17


def test_wrong_k_injected_from_master_config(findings):
    f = by(findings, "configs/test-master.yaml", "GAL201")[0]
    assert f.message == (
        "SYNTHETIC_ACCEPTANCE_LENGTH=2.49 differs from the golden cell dsv4_mtp thinking_on K=2: "
        "expected 2.27; 2.49 is dsv4_mtp thinking_on K=3, but this config serves native MTP "
        "thinking_on K=2 [branch recipe "
        f"{MN}/vllm/deepseek-v4/agentic/agg-gb200-tp8-mtp2-agentic.yaml]")


def test_base_dspark_value_with_probabilistic_draft(findings):
    f = by(findings, f"{MN}/vllm/kimi-k3/agentic/agg-gb200-dspark4-agentic.yaml", "GAL201")[0]
    assert "golden cell kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method " \
           "thinking_on K=4: expected 3.36; 3.22 is kimik3_dspark thinking_on K=4" in f.message


def test_multi_variant_recipe_override_changes_k(findings):
    # the base (K=3) and the hightpt variant serve 2.99 correctly; lowlat drafts 2
    f, = by(findings, f"{MN}/sglang/glm5.2/agentic/glm5.2-agentx.yaml")
    assert f.message.endswith("[role decode; branch variant zip_override_mtp_agentx_lowlat]")
    assert "expected 2.50; 2.99 is glm5.2_mtp thinking_on K=3" in f.message


def test_concurrency_branches_give_one_result_each(findings):
    # ATOM cannot select DSpark's sampling variant.  CONC=1: K=6 with 3.54, a comment cites
    # kimik3_dspark, where it is golden -> GAL311 only; else: K=2 with 2.51, no citation ->
    # cannot determine (2.51 is the probabilistic variant's cell), never "wrong"
    fs = by(findings, f"{SN}/agentic/kimik3_fp4_mi355x_atom_mtp.sh")
    assert not [f for f in fs if f.severity == "error"]
    unknown, = [f for f in fs if f.code == "GAL304"]
    assert unknown.message == (
        "cannot determine the golden cell for --spec-decode-acceptance-length 2.51: sampling "
        "variant: atom has no setting that selects one and no comment next to the knob cites "
        "a curve; candidates kimik3_dspark, "
        "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method; 2.51 is the "
        "golden value of kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method "
        "thinking_on K=2 [branch else of if [ \"$CONC\" = 1 ]]")
    cited, = [f for f in fs if f.code == "GAL311"]
    assert cited.message.startswith("atom cannot select a sampling variant of dspark "
                                    "Inferact/Kimi-K3-DSpark; the comment next to the knob "
                                    "cites curve kimik3_dspark, which decides")
    assumed = sorted(f.message.split(" [branch ", 1)[1] for f in fs if f.code == "GAL305")
    assert assumed == ['if [ "$CONC" = 1 ]]']


def test_atom_rate_for_another_k(findings):
    f, = by(findings, f"{SN}/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", "GAL203")
    assert f.message == ("--spec-decode-acceptance-rate 0.5 is (AL-1)/3 for the golden AL 2.50 "
                         "of glm5.2_mtp thinking_on K=2, but K=2 is served; it encodes AL 2")
    assert f.fix == "use --spec-decode-acceptance-length 2.50"


def test_trtllm_al_not_minus_one(findings):
    f, = by(findings, f"{MN}/trtllm/minimax-m3/agentic/disagg-gb300-1p1d-tep8-mtp3.yaml")
    assert f.message.startswith("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.78 is the golden "
                                "AL itself; TensorRT-LLM takes AL - 1 = 1.78")
    assert f.fix == "replace 2.78 with 1.78"


def test_missing_synthetic_method_and_engine_limits(findings):
    f, = by(findings, f"{MN}/vllm/minimax-m3/agentic/agg-gb200-no-method-agentic.yaml")
    assert "rejection_sample_method is absent, not 'synthetic'" in f.message
    f, = by(findings, f"{MN}/vllm/minimax-m3/agentic/agg-h200-old-image-agentic.yaml")
    assert "needs vLLM >= 0.20, but the image is vllm/vllm-openai:v0.19.1" in f.message
    f, = by(findings, f"{MN}/trtllm/minimax-m3/agentic/agg-gb300-tep8-two-model.yaml")
    assert "two-model path (eagle3_one_model: false)" in f.message
    f, = by(findings, f"{MN}/sglang/glm5.2/agentic/agg-gb200-tp8-c4-topk-mtp.yaml", "GAL206")
    assert "requires speculative-eagle-topk 1, got 4" in f.message
    f = by(findings, f"{SN}/agentic/dsv4_fp4_mi355x_atom_mtp.sh", "GAL206")[0]
    assert "without --method" in f.message
    f, = by(findings, f"{MN}/sglang/glm5.2/agentic/agg-h200-old-sglang-mtp.yaml")
    assert "needs SGLang >= 0.5.15, but the image is lmsysorg/sglang:v0.5.14-cu129" in f.message
    f, = by(findings, f"{SN}/agentic/qwen3.5_fp8_mi300x_mtp.sh")
    assert f.message.startswith("SGLANG_SIMULATE_ACC_METHOD=multinomial does not reproduce")


def test_out_of_range_names_k(findings):
    f, = by(findings, f"{MN}/sglang/glm5.2/agentic/agg-gb200-tp8-c2-mtp.yaml")
    assert f.message == ("SGLANG_SIMULATE_ACC_LEN=2.5 means AL 2.5, outside [1, 2] for K=1 "
                         "[role aggregated]")


def test_eval_paths(findings):
    f, = by(findings, f"{SN}/agentic/qwen3.5_fp4_b200_sglang_mtp.sh")
    assert f.message.endswith("[branch EVAL_ONLY=true]")
    fs = by(findings, f"{SN}/agentic/qwen3.5_fp4_b300_sglang_mtp.sh")
    assert [x.code for x in fs] == ["GAL303", "GAL301"]


def test_unknown_model_and_stated_source(findings):
    f, = by(findings, f"{SN}/agentic/foo_fp8_h100_sglang_mtp.sh")
    assert f.message.startswith("no committed curve for model acme/Foo-1-FP8;")
    assert by(findings, f"{SN}/agentic/bar_fp8_h100_sglang_mtp.sh") == []


def test_cell_not_committed_and_undeterminable(findings):
    f, = by(findings, f"{SN}/agentic/glm5.2_fp8_h200_sglang_mtp.sh")
    assert f.message == ("curve glm5.2_mtp has no committed cell for thinking_off K=3 (it has "
                         "thinking_on K=1,2,3,4,5,6,7,8)")
    f, = by(findings, f"{SN}/agentic/kimik2.5_fp4_b300_vllm_mtp.sh")
    assert f.severity == "info"
    # vLLM's own K spelling, not every engine's
    assert "K (no literal num_speculative_tokens / --spec-tokens on this path)" in f.message


def test_thinking_default_is_stated(findings):
    f = by(findings, f"{SN}/agentic/minimaxm3_fp4_b300_trt_mtp.sh", "GAL305")[0]
    assert f.message == ("no thinking-mode signal in the files; assumed thinking_on, the "
                         "documented default (THINKING_MODE=thinking_on) for curve "
                         "minimaxm3_eagle3_gqa")
    f = by(findings, f"{SN}/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", "GAL305")[0]
    assert "assumed the curve's only mode thinking_on for curve glm5.2_mtp" in f.message


def test_suppression_used_and_unused(findings):
    # kimik2.5_fp4_b200: 2.75 is the thinking_off cell, suppressed on its line
    assert by(findings, f"{SN}/agentic/kimik2.5_fp4_b200_vllm_mtp.sh") == []
    f, = by(findings, f"{MN}/sglang/glm5.2/agentic/agg-gb200-tp8-c4-topk-mtp.yaml", "GAL308")
    assert f.message == "suppression ignore[GAL204] matches no finding"


def test_select_and_ignore(registry):
    fs = audit([REPO], root=REPO, registry=registry, select=["GAL2"])
    assert {f.code for f in fs} == {"GAL201", "GAL202", "GAL203", "GAL204", "GAL205", "GAL206",
                                    "GAL207"}
    fs = audit([REPO], root=REPO, registry=registry, ignore="GAL305,unreadable-input")
    assert not {f.code for f in fs} & {"GAL305", "GAL306"}


def test_paths_relative_to_root(registry):
    one = os.path.join(REPO, SN, "agentic", "foo_fp8_h100_sglang_mtp.sh")
    fs = audit([one], registry=registry, root=REPO)
    assert [(f.path, f.code) for f in fs] == [(f"{SN}/agentic/foo_fp8_h100_sglang_mtp.sh",
                                               "GAL101")]


def test_nothing_to_audit_raises():
    from goldenal.core.errors import ParseError

    with pytest.raises(ParseError, match="nothing to audit"):
        audit(["/nonexistent/recipes"])


def test_a_suppression_shown_in_documentation_is_never_reported_unused(tmp_path, registry):
    # the syntax quoted in Markdown prose or in a Python string is documentation (as ruff
    # reads noqa only in comments); in a fenced shell block or a Python comment it is code
    (tmp_path / "GUIDE.md").write_text(
        "Suppress with `# goldenal: ignore[GAL201]` on the knob's line.\n"
        "\n"
        "```bash\n"
        "echo hi  # goldenal: ignore[GAL204]\n"
        "```\n")
    (tmp_path / "helper.py").write_text(
        'HELP = "suppress with # goldenal: ignore[GAL302]"\n'
        "x = 1  # goldenal: ignore[GAL203]\n"
        "# speculative\n")
    fs = audit([str(tmp_path)], registry=registry, settings=False)
    assert [(f.path, f.line, f.code, f.message) for f in fs] == [
        ("GUIDE.md", 4, "GAL308", "suppression ignore[GAL204] matches no finding"),
        ("helper.py", 2, "GAL308", "suppression ignore[GAL203] matches no finding")]


def test_a_suppression_in_markdown_prose_still_applies(tmp_path, registry):
    (tmp_path / "NOTES.md").write_text(
        "Our runs pin SGLANG_SIMULATE_ACC_LEN=2.49. <!-- # goldenal: ignore[GAL309] -->\n")
    fs = audit([str(tmp_path)], registry=registry, settings=False)
    assert fs == []
    (tmp_path / "NOTES.md").write_text("Our runs pin SGLANG_SIMULATE_ACC_LEN=2.49.\n")
    assert [f.code for f in audit([str(tmp_path)], registry=registry, settings=False)] == [
        "GAL309"]
