"""A recipe a master-config entry runs is looked up by that entry's ``model-prefix``.

Shaped like InferenceX: curves in its upstream ``golden_al_distribution/``
shape (no manifest, under ids the packaged manifest does not know, so no
aliases for quantized checkpoints), an srt-slurm
SGLang recipe serving ``nvidia/GLM-5.2-NVFP4``, and ``configs/nvidia-master.yaml``
whose entry (``model-prefix: glm5.2``) runs it through a ``CONFIG_FILE`` with a
``:variant`` selector.
"""

import os
import shutil
import subprocess
from pathlib import Path

from conftest import goldenal_cmd
from goldenal.auditing import audit
from goldenal.auditing.master import recipe_model_prefixes

UPSTREAM = Path(__file__).parent / "data" / "upstream_golden"
REL = "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/gb200-fp4/agentic/glm5.2-agentx.yaml"
RECIPE = """\
name: glm5.2-agentx
model:
  path: glm-5.2-fp4
identity:
  model:
    repo: nvidia/GLM-5.2-NVFP4
backend:
  type: sglang
  aggregated_environment:
    SGLANG_SIMULATE_ACC_LEN: "{al}"
    SGLANG_SIMULATE_ACC_METHOD: match-expected
    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token
  sglang_config:
    aggregated:
      served-model-name: nvidia/GLM-5.2-NVFP4
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
"""
ENTRY = """\
{name}:
  model-prefix: {prefix}
  framework: {framework}
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        decode:
          additional-settings:
{settings}
"""
GLM_REF = "recipes/sglang/glm5.2/gb200-fp4/agentic/glm5.2-agentx.yaml"


def master(prefix, name="glm5.2-fp4-gb200-dynamo-sglang-mtp", *, more=True):
    """The GLM entry (its CONFIG_FILE with a ``:variant`` selector), then (``more``) a dsv4
    entry injecting into a recipe this tree does not hold."""
    glm = ENTRY.format(name=name, prefix=prefix, framework="dynamo-sglang",
                       settings=f'          - "CONFIG_FILE={GLM_REF}:zip_override_mtp_agentx_frontier[0]"')
    dsv4 = ENTRY.format(name="dsv4-fp4-gb200-dynamo-vllm-mtp", prefix="dsv4",
                        framework="dynamo-vllm",
                        settings='          - "SYNTHETIC_ACCEPTANCE=true"\n'
                                 '          - "CONFIG_FILE=recipes/vllm/dsv4/agentic/agg.yaml"')
    return glm + ("# a later entry of the same file\n" + dsv4 if more else "")


def tree(tmp_path, al="2.99", prefix="glm5.2"):
    root = tmp_path / "InferenceX"
    (root / ".git").mkdir(parents=True)
    # under ids the packaged manifest does not know (its entries would name the checkpoint)
    golden = root / "golden_al_distribution"
    golden.mkdir()
    for path in UPSTREAM.glob("*.yaml"):
        shutil.copy(path, golden / f"{path.stem}_ix.yaml")
    (root / REL).parent.mkdir(parents=True)
    (root / REL).write_text(RECIPE.format(al=al))
    if prefix is not None:
        (root / "configs").mkdir()
        (root / "configs" / "nvidia-master.yaml").write_text(master(prefix))
    return root


def found(root):
    return [(f.code, f.message) for f in audit([root], golden_dir=root / "golden_al_distribution")
            if f.code != "GAL305"]


def test_model_prefixes_per_reference():
    lines = master("glm5.2").splitlines()
    assert recipe_model_prefixes(lines) == {GLM_REF: {"glm5.2"},
                                            "recipes/vllm/dsv4/agentic/agg.yaml": {"dsv4"}}
    assert recipe_model_prefixes(["x:", "  model-prefix: q", "# - CONFIG_FILE=a.yaml"]) == {}


def test_without_a_master_entry_the_quantized_checkpoint_names_no_curve(tmp_path):
    (code, message), = found(tree(tmp_path, prefix=None))
    assert code == "GAL101"
    assert message.startswith("no committed curve for model nvidia/GLM-5.2-NVFP4")


def test_the_master_entrys_model_prefix_finds_the_curve(tmp_path):
    assert found(tree(tmp_path)) == []


def test_the_value_is_then_checked_against_that_curve(tmp_path):
    (code, message), = found(tree(tmp_path, al="3.33"))
    assert code == "GAL201"
    assert "expected 2.99" in message and "glm5.2_mtp" in message


def test_a_prefix_naming_no_curve_changes_nothing(tmp_path):
    (code, message), = found(tree(tmp_path, prefix="glm9"))
    assert code == "GAL101" and "nvidia/GLM-5.2-NVFP4" in message


def test_audit_run_inside_the_tree_as_a_user_runs_it(tmp_path):
    root = tree(tmp_path, al="3.33")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLDENAL_")}
    env["GOLDENAL_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([*goldenal_cmd(), "audit", "."], cwd=root, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "GAL101" not in proc.stdout
    assert f"{REL}:10:" in proc.stdout and "GAL201" in proc.stdout


def test_entries_disagreeing_on_the_prefix_add_nothing(tmp_path):
    root = tree(tmp_path)
    path = root / "configs" / "nvidia-master.yaml"
    path.write_text(path.read_text() + master("qwen3.5", name="other-entry", more=False))
    (code, _), = found(root)
    assert code == "GAL101"
