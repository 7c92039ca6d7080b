"""`inject` writes only what is right: explicit lengths checked, per-role lengths, golden bytes kept.

The fixtures are shaped like InferenceX's deployed recipes: a DeepSeek-V4
disaggregated vLLM recipe whose master-config row pins the K=3 value on a K=2
deployment, and prefill/decode roles drafting different K.
"""

from pathlib import Path

import pytest

from goldenal.core.errors import PolicyError
from goldenal.apply.inject import inject, inject_runner

DATA = Path(__file__).parent / "data" / "inject"
ENV = {"SYNTHETIC_ACCEPTANCE": "true", "THINKING_MODE": "thinking_on",
       "FRAMEWORK": "dynamo-vllm"}


def recipe(tmp_path, prefill_k=3, decode_k=3, name="agentic.yaml"):
    text = (DATA / "vllm_disagg.yaml").read_text()
    first, _, rest = text.partition('"num_speculative_tokens":3}')
    text = (first + f'"num_speculative_tokens":{prefill_k}}}'
            + rest.replace('"num_speculative_tokens":3}', f'"num_speculative_tokens":{decode_k}}}'))
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_explicit_length_for_another_k_is_refused(tmp_path):
    """A master-config row pinning 2.49 (dsv4_mtp K=3) on a K=2 deployment."""
    path = recipe(tmp_path, 2, 2)
    before = path.read_bytes()
    env = {**ENV, "SYNTHETIC_ACCEPTANCE_LENGTH": "2.49"}
    with pytest.raises(PolicyError) as exc:
        inject_runner(path, environ=env)
    assert exc.value.message == (
        "explicit SYNTHETIC_ACCEPTANCE_LENGTH=2.49 for the prefill role differs from the golden "
        "cell dsv4_mtp thinking_on K=2: expected 2.27; 2.49 is dsv4_mtp thinking_on K=3; pass "
        "--force to write it anyway")
    assert path.read_bytes() == before
    # the golden value goes through; --force writes the other one with a warning
    assert inject_runner(path, environ={**env, "SYNTHETIC_ACCEPTANCE_LENGTH": "2.27"}
                         ).result.changed == 2
    result = inject_runner(path, environ=env, force=True).result
    assert path.read_text().count('"synthetic_acceptance_length":2.49}') == 2
    assert any("differs from the golden cell dsv4_mtp thinking_on K=2 (2.27)" in w
               for w in result.warnings)


def test_the_cli_refuses_as_audit_would(tmp_path, run_cli, monkeypatch):
    path = recipe(tmp_path, 2, 2)
    for key, value in {**ENV, "SYNTHETIC_ACCEPTANCE_LENGTH": "2.49"}.items():
        monkeypatch.setenv(key, value)
    code, out, err = run_cli("inject", path, "--framework", "dynamo-vllm")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {path}:26: explicit SYNTHETIC_ACCEPTANCE_LENGTH=2.49 for the "
                          "prefill role differs from the golden cell dsv4_mtp thinking_on K=2")
    code, _, _ = run_cli("inject", path, "--framework", "dynamo-vllm", "--force")
    assert code == 0


def test_per_role_lengths_for_roles_with_different_k(tmp_path):
    path = recipe(tmp_path, 2, 3)
    env = {**ENV, "SYNTHETIC_ACCEPTANCE_LENGTH": "2.49"}
    with pytest.raises(PolicyError, match="for the prefill role differs .* K=2: expected 2.27"):
        inject_runner(path, environ=env)
    env["SYNTHETIC_ACCEPTANCE_LENGTH_PREFILL"] = "2.27"
    result = inject_runner(path, environ=env).result
    assert [(v.role, v.k, v.al) for v in result.values] == [("prefill", 2, "2.27"),
                                                             ("decode", 3, "2.49")]
    text = path.read_text()
    assert '"num_speculative_tokens":2,"rejection_sample_method":"synthetic",' \
           '"synthetic_acceptance_length":2.27}' in text
    assert '"num_speculative_tokens":3,"rejection_sample_method":"synthetic",' \
           '"synthetic_acceptance_length":2.49}' in text
    # the library takes the same as a mapping; a role left without a value is refused
    other = recipe(tmp_path, 2, 3, name="agentic-2.yaml")
    with pytest.raises(Exception, match="no explicit acceptance length for the prefill role"):
        inject(other, al={"decode": "2.49"}, thinking="on")
    assert inject(other, al={"prefill": "2.27", "decode": "2.49"}, thinking="on").changed == 2


def test_the_fixed_length_override_is_honoured_in_runner_mode(tmp_path, run_cli, monkeypatch):
    # (the test's own name keeps "agentic" out of the temporary path)
    folder = tmp_path / "dsv4_8k1k"
    folder.mkdir()
    path = recipe(folder, name="recipe.yaml")
    path.write_text(path.read_text().replace("agentic-mtp", "mtp"))
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GOLDENAL_ALLOW_NON_AGENTIC", raising=False)
    code, _, err = run_cli("inject", path, "--framework", "dynamo-vllm")
    assert code == 1 and "pass --allow-non-agentic or set GOLDENAL_ALLOW_NON_AGENTIC=true" in err
    before = path.read_bytes()
    code, _, err = run_cli("inject", path, "--framework", "dynamo-vllm", "--allow-non-agentic",
                           "--diff")
    assert code == 0 and path.read_bytes() == before
    # the environment-variable form, as a runner sets it
    monkeypatch.setenv("GOLDENAL_ALLOW_NON_AGENTIC", "true")
    code, _, _ = run_cli("inject", path, "--framework", "dynamo-vllm")
    assert code == 0 and '"synthetic_acceptance_length":2.49}' in path.read_text()
    other = recipe(folder, name="recipe-2.yaml")
    code, _, _ = run_cli("inject", other, "--thinking", "on")
    assert code == 0


@pytest.mark.parametrize("before, after", [
    # vLLM JSON in a YAML string
    ('"num_speculative_tokens":3,"rejection_sample_method":"synthetic",'
     '"synthetic_acceptance_length":2.490}',
     '"num_speculative_tokens":3,"rejection_sample_method":"synthetic",'
     '"synthetic_acceptance_length":2.490}'),
])
def test_an_already_golden_value_is_left_byte_for_byte(tmp_path, before, after):
    path = recipe(tmp_path)
    path.write_text(path.read_text().replace('"num_speculative_tokens":3}', before))
    original = path.read_bytes()
    result = inject(path, thinking="on")
    assert result.changed == 0 and path.read_bytes() == original


def test_an_already_golden_atom_literal_is_left_byte_for_byte(tmp_path):
    path = tmp_path / "dsv4_fp4_mi355x_atom_mtp.sh"
    path.write_text("python3 -m atom.entrypoints.openai_server --model deepseek-ai/DeepSeek-V4-Pro "
                    "--method mtp --num-speculative-tokens 3 "
                    "--spec-decode-acceptance-length 2.490\n")
    original = path.read_bytes()
    result = inject(path, thinking="on")
    assert path.read_bytes() == original and result.changed == 0


def test_companions_go_only_to_roles_that_speculate(tmp_path):
    """SGLang PD whose prefill worker drafts nothing: its environment is left alone."""
    path = tmp_path / "glm5.2-disagg-gb200-1p4d-agentic.yaml"
    path.write_text(
        "name: glm5.2-disagg-gb200-1p4d-agentic\nmodel:\n  path: \"hf:zai-org/GLM-5.2-FP8\"\n"
        "backend:\n  type: sglang\n  prefill_environment:\n    PYTHONUNBUFFERED: \"1\"\n"
        "  decode_environment:\n    PYTHONUNBUFFERED: \"1\"\n    SGLANG_SIMULATE_ACC_LEN: '2.5'\n"
        "  sglang_config:\n    prefill:\n      tensor-parallel-size: 4\n    decode:\n"
        "      speculative-algorithm: EAGLE\n      speculative-num-steps: 2\n"
        "      speculative-eagle-topk: 1\n")
    inject(path, thinking="on")
    assert path.read_text().split("  decode_environment:")[0].endswith(
        "  prefill_environment:\n    PYTHONUNBUFFERED: \"1\"\n")
    assert "    SGLANG_SIMULATE_ACC_LEN: '2.5'\n    SGLANG_SIMULATE_ACC_METHOD: " in path.read_text()
