"""A key written twice in one mapping is refused by inject and audit alike.

PyYAML, which vLLM, SGLang, TensorRT-LLM and srt-slurm load their YAML with,
keeps the last of two equal keys without a word; a lookup that stops at the
first would check (inject --check) or rewrite (inject) a value the engine
never reads.  The recipes below are the shapes of tests/data/inject, each
with one key pasted twice.
"""


import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.core.errors import DuplicateKeyError
from goldenal.auditing import audit
from goldenal.recipes import spans
from goldenal.apply.inject import inject
from hostile.hostile_support import run_goldenal

SGLANG_AGG = """\
name: glm5.2-sglang-agg-gb300-tp4-mtp
model:
  path: "hf:zai-org/GLM-5.2-FP8"
  container: "lmsysorg/sglang:v0.5.16-cu130"
backend:
  type: sglang
  aggregated_environment:
    SGLANG_DEFAULT_THINKING: '1'
    SGLANG_SIMULATE_ACC_LEN: '2.99'
    SGLANG_SIMULATE_ACC_METHOD: 'match-expected'
    SGLANG_SIMULATE_ACC_TOKEN_MODE: 'real-draft-token'
    SGLANG_REASONING_EFFORT: high   # keep thinking on
{extra_env}  sglang_config:
    aggregated:
      served-model-name: zai-org/GLM-5.2-FP8
      tensor-parallel-size: 4
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
{extra_cfg}"""

TRTLLM_EXTRA = """\
# extra-llm-api options for trtllm-serve
# env-file: trtllm_extra.env
speculative_config:
    decoding_type: Eagle3
    max_draft_len: 3
    speculative_model: /models/Inferact/MiniMax-M3-EAGLE3-GQA
    max_draft_len: 1
kv_cache_config:
    free_gpu_memory_fraction: 0.8
"""

VLLM_DISAGG = """\
name: minimax-m3-vllm-disagg
model:
  path: MiniMaxAI/MiniMax-M3
backend:
  type: vllm
  vllm_config:
    decode:
      served-model-name: MiniMaxAI/MiniMax-M3
      speculative-config: '{"method": "eagle3", "model": "Inferact/MiniMax-M3-EAGLE3", \
"num_speculative_tokens": 3, "num_speculative_tokens": 1}'
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path



def test_a_knob_pasted_twice_in_an_env_block_is_refused_not_passed(tmp_path):
    """inject --check passed this file while SGLang served 3.50."""
    text = SGLANG_AGG.format(extra_env="    SGLANG_SIMULATE_ACC_LEN: '3.50'\n", extra_cfg="")
    path = _write(tmp_path, "agg.yaml", text)
    rc, out, err = run_goldenal("inject", "agg.yaml", "--thinking", "on", "--check", cwd=tmp_path)
    assert (rc, out, err) == (
        2, "", "error: agg.yaml:13: duplicate key 'SGLANG_SIMULATE_ACC_LEN' (first at line 9)\n")
    # the engine's own loader reads the second one
    assert yaml.safe_load(text)["backend"]["aggregated_environment"][
        "SGLANG_SIMULATE_ACC_LEN"] == "3.50"
    assert path.read_text() == text


def test_k_written_twice_is_refused_instead_of_writing_the_first_ks_value(tmp_path):
    """inject wrote the K=3 value (2.99) where SGLang drafts K=1."""
    text = SGLANG_AGG.format(extra_env="", extra_cfg="      speculative-num-steps: 1\n")
    path = _write(tmp_path, "agg.yaml", text)
    rc, out, err = run_goldenal("inject", "agg.yaml", "--thinking", "on", cwd=tmp_path)
    assert (rc, out, err) == (
        2, "", "error: agg.yaml:21: duplicate key 'speculative-num-steps' (first at line 18)\n")
    assert path.read_text() == text
    assert yaml.safe_load(text)["backend"]["sglang_config"]["aggregated"][
        "speculative-num-steps"] == 1


def test_audit_reports_gal312_at_the_repeat_and_exits_1(tmp_path):
    _write(tmp_path, "agg.yaml", SGLANG_AGG.format(
        extra_env="", extra_cfg="      speculative-num-steps: 1\n"))
    rc, out, err = run_goldenal("audit", "agg.yaml", cwd=tmp_path)
    assert rc == 1
    assert out.splitlines()[0] == (
        "agg.yaml:21:7: GAL312 duplicate key 'speculative-num-steps' (first at line 18)")
    finding, = audit([str(tmp_path / "agg.yaml")])
    assert (finding.code, finding.name, finding.severity, finding.line, finding.col) == (
        "GAL312", "duplicate-key", "error", 21, 7)
    rc, out, _ = run_goldenal("audit", "--explain", "GAL312", cwd=tmp_path)
    assert rc == 0 and out.startswith("# duplicate-key (GAL312)\n\nSeverity: error.")


def test_trtllm_speculative_config_key_twice(tmp_path):
    path = _write(tmp_path, "extra.yaml", TRTLLM_EXTRA)
    env = _write(tmp_path, "trtllm_extra.env", "MODEL=nvidia/MiniMax-M3-NVFP4\n")
    with pytest.raises(DuplicateKeyError) as info:
        inject(path, thinking="on")
    assert str(info.value) == f"{path}:7: duplicate key 'max_draft_len' (first at line 5)"
    assert (info.value.key, info.value.line, info.value.first_line) == ("max_draft_len", 7, 5)
    assert env.read_text() == "MODEL=nvidia/MiniMax-M3-NVFP4\n"


def test_vllm_speculative_config_json_key_twice(tmp_path):
    path = _write(tmp_path, "disagg.yaml", VLLM_DISAGG)
    rc, out, err = run_goldenal("inject", "disagg.yaml", "--thinking", "on", cwd=tmp_path)
    assert (rc, err) == (2, "error: disagg.yaml:9: duplicate key 'num_speculative_tokens' in "
                            "the speculative-config JSON (first at line 9)\n")
    assert path.read_text() == VLLM_DISAGG
    finding, = audit([str(path)])
    assert (finding.code, finding.line) == ("GAL312", 9)


def test_env_file_key_twice_is_refused(tmp_path):
    path = _write(tmp_path, "extra.yaml", TRTLLM_EXTRA.replace("    max_draft_len: 1\n", ""))
    env = _write(tmp_path, "trtllm_extra.env",
                 "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78\nTLLM_LOG_LEVEL=INFO\n"
                 "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.50\n")
    before = env.read_bytes()
    with pytest.raises(DuplicateKeyError) as info:
        inject(path, thinking="on", check=True)
    assert str(info.value) == (f"{env}:3: duplicate key "
                               "'TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS' (first at line 1)")
    assert env.read_bytes() == before


def test_merges_and_overrides_are_not_duplicates(tmp_path):
    """``<<`` twice, and a key overriding a merged one, are how anchored recipes share."""
    text = """\
name: trtllm-disagg
model:
  path: nvidia/MiniMax-M3-NVFP4
common: &common
  TLLM_LOG_LEVEL: INFO
spec: &spec
  TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "2.00"
backend:
  type: trtllm
  decode_environment:
    <<: *common
    <<: *spec
    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "1.78"
  trtllm_config:
    decode:
      speculative_config:
        decoding_type: Eagle3
        max_draft_len: 3
        speculative_model: /models/Inferact/MiniMax-M3-EAGLE3-GQA
"""
    path = _write(tmp_path, "disagg.yaml", text)
    result = inject(path, thinking="on", check=True)
    assert [v.knob_value for v in result.values] == ["1.78"]
    assert result.changed == 0


KEYS = st.lists(st.sampled_from(["a", "b", "K", "SGLANG_SIMULATE_ACC_LEN", "<<x", "1"]),
                min_size=1, max_size=8)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(outer=KEYS, inner=KEYS)
def test_compose_refuses_exactly_the_first_repeat(outer, inner):
    """Nested block mappings: refused iff a mapping repeats a key, at its first repeat."""
    lines, where = ["top:"], []     # (line, key, first line) of every repeat

    def add(line, key, seen):
        lines.append(line)
        if key in seen:
            where.append((len(lines), key, seen[key]))
        seen.setdefault(key, len(lines))

    seen = {}
    for key in outer:
        add(f"  {key}:", key, seen)
        sub = {}
        for k in inner:
            add(f"    {k}: v", k, sub)
    text = "\n".join(lines) + "\n"
    if not where:
        assert spans.compose(text, "x.yaml") is not None
        return
    line, key, first = min(where)
    with pytest.raises(DuplicateKeyError) as info:
        spans.compose(text, "x.yaml")
    assert (info.value.line, info.value.key, info.value.first_line) == (line, key, first)


def test_a_golden_manifest_naming_a_curve_twice_is_refused(tmp_path):
    """The manifest is a golden directory's identity: the second entry of a curve id
    must not silently replace the first (what yaml.load would do)."""
    import shutil
    from pathlib import Path

    golden = tmp_path / "golden"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "golden-tiny", golden)
    text = (golden / "manifest.yaml").read_text()
    entry = text[text.index("\n  ", text.index("curves:")):]
    (golden / "manifest.yaml").write_text(text + entry.replace("goldenal-tiny",
                                                               "goldenal-other", 1))
    code, out, err = run_goldenal("validate", str(golden), cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (f"error: {golden / 'manifest.yaml'}:15: manifest has a duplicate key "
                   "'tiny_draft' (first at line 5)\n")


def test_yaml_documents_load_by_the_core_schema_through_the_one_composer():
    from goldenal.core.yamldoc import load

    assert load("a: [on, yes, 017, 0x1f, 1.5e3, .inf, ~, 2026-12-04, '3']\n"
                "b: &x {c: 1}\nd: {<<: *x, e: 2}\n") == {
        "a": ["on", "yes", 17, 31, 1500.0, float("inf"), None, "2026-12-04", "3"],
        "b": {"c": 1}, "d": {"e": 2, "c": 1}}
    with pytest.raises(DuplicateKeyError, match=r"run.yaml:3: duplicate key 'k' \(first at "
                                                r"line 2\)"):
        load("cells:\n- {k: 3,\n   k: 4}\n", "run.yaml")
    # an alias is one object, not a copy: a billion-laughs document stays small
    laughs = "a: &a [x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, "
                                         f"*{chr(97 + i)}]\n" for i in range(20))
    doc = load(laughs)
    assert doc["u"][0] is doc["u"][1]
