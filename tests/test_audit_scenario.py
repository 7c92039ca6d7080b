"""Agentic or fixed-sequence-length, and which model: from the file's content, then its repository path.

Fixtures written here after the real cases: an srt-slurm recipe stating
``benchmark.type: sa-bench`` with ``isl 8192``/``osl 1024`` filed under an
agentic directory, TensorRT-LLM recipes under ``ISL1K_OSL1K/``, SGLang files
whose ``8k1k`` appears only in variant names, launchers named ``oot_...``.
"""

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import REFERENCE_GOLDEN, goldenal_cmd
from goldenal.core.errors import PolicyError
from goldenal.auditing import audit
from goldenal.auditing.evidence import agentic_from_client, agentic_from_name, agentic_of
from goldenal.apply.inject import inject

HERE = Path(__file__).parent
DATA = HERE / "data" / "inject"
# a vLLM recipe with a knob that is golden for dsv4_mtp thinking_on K=3 (2.49)
RECIPE = """\
name: dsv4-gb200-vllm-mtp
model:
  path: deepseek-ai/DeepSeek-V4-Pro
  container: vllm/vllm-openai:v0.20.1
backend:
  type: vllm
  vllm_config:
    aggregated:
      speculative-config: '{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.49}'
      default-chat-template-kwargs: '{"enable_thinking": true}'
"""
SA_BENCH = "benchmark:\n  type: sa-bench\n  isl: 8192\n  osl: 1024\n"


def repo(tmp_path, rel, text):
    """A git repository under a directory whose own name says 'agentic' (it must not count)."""
    root = tmp_path / "agentic-checkouts" / "InferenceX"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return root, path


def codes(findings):
    return [(f.path, f.code) for f in findings if f.code not in ("GAL305",)]


def test_the_answer_does_not_depend_on_how_the_file_is_named(tmp_path, monkeypatch):
    rel = "benchmarks/multi_node/srt-slurm-recipes/vllm/dsv4/8k1k/agg-gb200.yaml"
    root, path = repo(tmp_path, rel, RECIPE)
    expected = "GAL302"
    # the repository, the recipe's own directory, the file alone, from another directory
    assert codes(audit([root])) == [(rel, expected)]
    # paths are reported from the repository root, whatever directory is audited
    assert codes(audit([path.parent])) == [(rel, expected)]
    assert codes(audit([path])) == [(rel, expected)]
    assert codes(audit([path], root=path.parent)) == [("agg-gb200.yaml", expected)]
    monkeypatch.chdir(tmp_path)
    assert codes(audit([os.path.relpath(path)], root=".")) == [
        (os.path.relpath(path).replace(os.sep, "/"), expected)]


def test_copies_of_one_file_are_judged_each_by_its_own_path(tmp_path):
    # an audit reads a text once; each copy keeps its path and what its path says
    fixed = "benchmarks/multi_node/srt-slurm-recipes/vllm/dsv4/8k1k/agg-gb200.yaml"
    agentic = "benchmarks/multi_node/srt-slurm-recipes/vllm/dsv4/agentic/agg-gb200.yaml"
    plain = "recipes/agg-gb200.yaml"
    for rel in (fixed, agentic, plain):
        root, _ = repo(tmp_path, rel, RECIPE)
    assert codes(audit([root])) == [(fixed, "GAL302"), (plain, "GAL304")]


def test_the_benchmark_settings_decide_before_the_path(tmp_path):
    """sa-bench with isl 8192 / osl 1024 is fixed-length under any directory."""
    for folder in ("agentic", "other"):
        rel = f"benchmarks/multi_node/srt-slurm-recipes/vllm/dsv4/{folder}/agg.yaml"
        root, _ = repo(tmp_path, rel, RECIPE + SA_BENCH)
        assert codes(audit([root / "benchmarks"])) == [(rel, "GAL302")]
        shutil.rmtree(root)


@pytest.mark.parametrize("spelling", ["ISL1K_OSL1K", "ISL8K_OSL1K", "isl8192-osl1024",
                                      "dsv4-1k1k", "fixed-seq-len"])
def test_every_spelling_of_a_fixed_length(spelling):
    assert agentic_of(f"benchmarks/multi_node/srt-slurm-recipes/trtllm/minimax/{spelling}/x.yaml",
                      None) is False
    assert agentic_from_name(f"{spelling}_variant") is False


def test_trtllm_recipes_under_isl_osl_directories_are_not_written_into(tmp_path):
    rel = "benchmarks/multi_node/srt-slurm-recipes/trtllm/minimax-m3/ISL1K_OSL1K/disagg.yaml"
    root, path = repo(tmp_path, rel, (DATA / "trtllm_disagg_anchor.yaml").read_text())
    with pytest.raises(PolicyError, match="fixed-sequence-length"):
        inject(path, thinking="on")


def test_variant_names_inside_the_file_decide(tmp_path):
    """8k1k only in the variant keys and their names; no benchmark type."""
    text = (DATA / "sglang_variants.yaml").read_text().replace("    type: sa-bench\n", "")
    text = text.replace("gb200-fp4-glm5.2-mtp", "gb200-fp4-glm5.2")
    assert "sa-bench" not in text
    _, path = repo(tmp_path, "recipes/sglang/glm5.2/disagg.yaml", text)
    with pytest.raises(PolicyError, match=r"config \(variant names\) must measure real"):
        inject(path, thinking="on")
    assert inject(path, thinking="on", allow_non_agentic=True).changed == 3


def test_cannot_determine_instead_of_skip(tmp_path):
    root, _ = repo(tmp_path, "serve/glm_sglang.sh",
                   "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
                   "--speculative-num-steps 3 --speculative-eagle-topk 1\n")
    f, = audit([root])
    assert (f.code, f.severity) == ("GAL304", "info")
    assert f.message.startswith("cannot determine whether this spec-decode config (sglang, "
                                "K=3) is agentic or fixed-sequence-length")


@pytest.mark.parametrize("name", ["oot_fp4_b200_sglang_mtp.sh", "atom_fp4_b200_sglang_mtp.sh"])
def test_the_model_comes_from_the_content_not_the_file_name(tmp_path, name):
    root, _ = repo(tmp_path, f"benchmarks/single_node/agentic/{name}",
                   "MODEL_PATH=${MODEL_PATH:-/models/GLM-5.2-NVFP4}\n"
                   "export SGLANG_SIMULATE_ACC_LEN=2.50\n"
                   "python3 -m sglang.launch_server --model-path \"$MODEL_PATH\" "
                   "--speculative-num-steps 3 --speculative-eagle-topk 1 "
                   "--default-chat-template-kwargs '{\"enable_thinking\": true}'\n")
    f, = audit([root])
    assert (f.code, f.expected) == ("GAL201", "2.99")
    assert "glm5.2_mtp thinking_on K=3" in f.message



@pytest.mark.parametrize("serve", ["vllm serve --model deepseek-ai/DeepSeek-V4-Pro",
                                   "vllm serve --model=deepseek-ai/DeepSeek-V4-Pro",
                                   "vllm serve deepseek-ai/DeepSeek-V4-Pro"])
def test_the_model_after_vllm_serve_may_be_given_by_model(tmp_path, serve):
    """``vllm serve`` takes the model as its positional or through ``--model``."""
    root, _ = repo(tmp_path, "benchmarks/single_node/agentic/vllm_serve_mtp.sh",
                   f"{serve} --speculative-config '{{\"method\":\"mtp\","
                   "\"num_speculative_tokens\":3,\"rejection_sample_method\":\"synthetic\","
                   "\"synthetic_acceptance_length\":2.27}' "
                   "--default-chat-template-kwargs '{\"thinking\": true}' &\n"
                   "run_benchmark_serving\n")
    f, = audit([root])
    assert (f.code, f.found, f.expected) == ("GAL201", "2.27", "2.49")
    assert "dsv4_mtp thinking_on K=3" in f.message


def test_a_prefix_naming_curves_that_miss_the_head_checks_every_candidate(tmp_path):
    """Curves that carry no draft heads (InferenceX's own, under ids the packaged manifest
    does not know): the minimaxm3 launchers' prefix names two curves, either of which may be
    the GQA head's; a value neither carries is wrong, one that one carries passes."""
    golden = tmp_path / "golden"
    golden.mkdir()
    for path in REFERENCE_GOLDEN.glob("*.yaml"):
        shutil.copy(path, golden / f"{path.stem}_ix.yaml")
    text = ("DRAFT_MODEL=Inferact/MiniMax-M3-EAGLE3-GQA\n"
            "vllm serve \"$MODEL\" --speculative-config '{\"method\":\"eagle3\","
            "\"model\":\"Inferact/MiniMax-M3-EAGLE3-GQA\",\"num_speculative_tokens\":3,"
            "\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":2.78}' "
            "--default-chat-template-kwargs '{\"thinking_mode\": \"enabled\"}' &\n"
            "run_benchmark_serving\n")
    root, path = repo(tmp_path, "benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh", text)
    assert audit([root], golden_dir=golden) == []
    # the packaged ids: the heads come from the packaged manifest, and 2.78 is the GQA cell
    assert audit([root], golden_dir=REFERENCE_GOLDEN) == []
    path.write_text(text.replace("2.78", "2.80"))
    f, = audit([root], golden_dir=golden)
    assert (f.code, f.severity) == ("GAL201", "error")
    assert f.message.startswith("synthetic_acceptance_length=2.80 matches no candidate cell: "
                                "minimaxm3_eagle3_gqa_ix thinking_on K=3 (2.78), "
                                "minimaxm3_eagle3_ix thinking_on K=3 (2.83)")


LAUNCH = ("vllm serve deepseek-ai/DeepSeek-V4-Pro --speculative-config '{\"method\":\"mtp\","
          "\"num_speculative_tokens\":3,\"rejection_sample_method\":\"synthetic\","
          "\"synthetic_acceptance_length\":2.49}' "
          "--default-chat-template-kwargs '{\"thinking\": true}' &\n")


@pytest.mark.parametrize("client, code", [
    ("vllm bench serve --dataset-name random --random-input-len 8192 --random-output-len 1024",
     "GAL302"),
    ("python3 -m sglang.bench_serving --dataset-name random --random-input 1024 "
     "--random-output 1024", "GAL302"),
    # InferenceX's fixed-seq-len launchers: lengths from the runner's environment
    ('run_benchmark_serving --input-len "$ISL" --output-len "$OSL" --random-range-ratio 0.8',
     "GAL302"),
    # a comment mentioning lengths is no client: the directory decides (agentic), and
    # one that says nothing leaves it undetermined (a Mooncake trace is no AgentX replay)
    ("# was: --input-len 1024\naiperf profile --custom-dataset-type mooncake_trace "
     "--input-file traces.jsonl", None),
    # InferenceX's agentic helpers (benchmarks/benchmark_lib.sh) say agentic wherever the
    # launcher sits: 2.49 is the golden dsv4_mtp thinking_on K=3 cell, so nothing to report
    ("# was: --input-len 1024\nresolve_trace_source\nbuild_replay_cmd \"$RESULT_DIR\"\n"
     "run_agentic_replay_and_write_outputs \"$RESULT_DIR\"", "clean"),
])
def test_the_benchmark_client_of_a_launcher_decides_before_its_path(tmp_path, client, code):
    """Content first: the lengths a launcher's client runs say fixed-sequence-length,
    in a directory that says nothing and in one that says agentic alike."""
    for where in ("launch/dsv4_vllm_mtp.sh", "benchmarks/single_node/agentic/dsv4_vllm_mtp.sh"):
        root, _ = repo(tmp_path / where.split("/")[0], where, LAUNCH + client + "\n")
        expected = code or ("GAL304" if where.startswith("launch/") else None)
        expected = None if expected == "clean" else expected
        assert [f.code for f in audit([root])] == ([expected] if expected else []), where


@given(st.lists(st.text(alphabet=" -=\"'$#abcdeilnoprstu0123456789", max_size=40), max_size=8))
def test_commented_lines_never_decide_and_the_answer_is_false_or_none(lines):
    text = "\n".join(lines)
    assert agentic_from_client(text) in (False, None)
    assert agentic_from_client("\n".join("# " + line for line in lines)) is None

MASTER = """\
dsv4-fp4-gb200-dynamo-vllm-mtp:
  image: vllm/vllm-openai:v0.20.1-ubuntu2404
  model: deepseek-ai/DeepSeek-V4-Pro
  model-prefix: dsv4
  framework: dynamo-vllm
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: mtp
        prefill:
          additional-settings:
          - "CONFIG_FILE=recipes/vllm/dsv4/agg-gb200.yaml"
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        prefill:
          additional-settings:
          - "SYNTHETIC_ACCEPTANCE=true"
          - "CONFIG_FILE=recipes/vllm/dsv4/agentic/agg-gb200-agentic.yaml"
"""


def test_the_master_configs_sequence_length_setting_decides_for_its_recipe(tmp_path):
    """A recipe silent about its scenario, run by the master under fixed-seq-len."""
    root, _ = repo(tmp_path, "srt-slurm-recipes/vllm/dsv4/agg-gb200.yaml", RECIPE)
    # no signal at all: undetermined, whatever the value (2.49 is golden for its cell)
    assert codes(audit([root])) == [("srt-slurm-recipes/vllm/dsv4/agg-gb200.yaml", "GAL304")]
    (root / "configs").mkdir()
    (root / "configs" / "nvidia-master.yaml").write_text(MASTER)
    assert codes(audit([root])) == [("srt-slurm-recipes/vllm/dsv4/agg-gb200.yaml", "GAL302")]


def test_a_file_name_prefix_is_never_reported_as_the_model(tmp_path):
    root, _ = repo(tmp_path, "benchmarks/single_node/agentic/oot_fp4_b200_sglang_mtp.sh",
                   "export SGLANG_SIMULATE_ACC_LEN=2.99\n"
                   "python3 -m sglang.launch_server --speculative-num-steps 3 "
                   "--speculative-eagle-topk 1\n")
    f, = audit([root])
    assert (f.code, f.severity) == ("GAL304", "info")
    assert "model oot" not in f.message
    assert f.message.endswith("model (the files name none; the file-name prefix 'oot' names "
                              "no curve)")


def _fixed_flag_oracle(text):
    # a word of the code that is one of the fixed-length flags, alone or as ``--flag=...``
    flags = {"--input-len", "--output-len", "--random-input-len", "--random-output-len",
             "--random-input", "--random-output", "--isl", "--osl"}
    for line in text.split("\n"):
        for i in range(len(line)):
            if line.startswith("--", i) and (i == 0 or not (line[i - 1].isalnum()
                                                            or line[i - 1] in "_-")):
                word = line[i:]
                for flag in flags:
                    if word.startswith(flag) and (len(word) == len(flag)
                                                  or word[len(flag)] in " \t\r\x0b\x0c=\"'"):
                        return True
    return False


# no "c": no trace or agentic word can form, so the flags alone decide
@given(st.lists(st.text(alphabet="-=\"' \tailnoprstudx_", max_size=30), max_size=6))
def test_a_fixed_length_flag_counts_only_as_a_word_of_its_own(lines):
    """``--isl`` counts; ``x--isl``, ``---isl`` and ``--isles`` do not."""
    text = "\n".join(lines)
    assert agentic_from_client(text) is (False if _fixed_flag_oracle(text) else None)


# A launcher shaped like InferenceX's single-node ones, under a directory that says nothing
# and with a benchmark client that states no lengths: 2.50 is not glm5.2_mtp thinking_on
# K=3 (2.99), but whether a golden value is wanted at all is not known.
SILENT = ("export SGLANG_SIMULATE_ACC_LEN=2.50\n"
          "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
          "--speculative-num-steps 3 --speculative-eagle-topk 1 "
          "--default-chat-template-kwargs '{\"enable_thinking\": true}' &\n"
          "python3 -m sglang.bench_serving --backend sglang --num-prompts 64LENGTHS\n")
UNDETERMINED = (
    "cannot determine whether the config is agentic or fixed-sequence-length, so "
    "SGLANG_SIMULATE_ACC_LEN=2.50 is not checked against a golden cell: nothing in the files "
    "says; state it by the path (an agentic/ or fixed-seq-len folder), the benchmark settings "
    "(an agentic client, or isl/osl), or the scenario of a master config that runs it")
WRONG_EITHER_WAY = (
    "SGLANG_SIMULATE_ACC_LEN=2.50 matches no candidate cell: glm5.2_mtp thinking_on K=3 (2.99); "
    "which applies cannot be decided (agentic or fixed-sequence-length: the files do not say, "
    "and a fixed-sequence-length config takes no knob), but the value is wrong whichever does")


def test_a_knob_with_no_scenario_signal_is_undetermined_not_checked_as_agentic(tmp_path):
    root, _ = repo(tmp_path, "launch/glm5.2_sglang_mtp.sh", SILENT.replace("LENGTHS", ""))
    # 2.50 is no golden value of glm5.2 K=3 (2.99): wrong whichever the config is
    f, = audit([root])
    assert (f.path, f.line, f.col, f.code, f.severity) == (
        "launch/glm5.2_sglang_mtp.sh", 1, 32, "GAL201", "error")
    assert (f.found, f.expected, f.fix) == ("2.50", "2.99", None)
    assert f.message == WRONG_EITHER_WAY
    # the golden value is not checked as if the config were agentic: info, naming the cell
    root, _ = repo(tmp_path / "golden", "launch/glm5.2_sglang_mtp.sh",
                   SILENT.replace("LENGTHS", "").replace("2.50", "2.99"))
    f, = audit([root])
    assert (f.line, f.col, f.code, f.severity) == (1, 8, "GAL304", "info")
    assert (f.found, f.expected, f.fix) == ("2.99", None, None)
    assert f.message == (UNDETERMINED.replace("2.50", "2.99")
                         + "; 2.99 is the golden value of glm5.2_mtp thinking_on K=3")


@pytest.mark.parametrize("where, lengths, code", [
    ("benchmarks/single_node/agentic/glm5.2_sglang_mtp.sh", "", "GAL201"),      # path
    ("launch/8k1k/glm5.2_sglang_mtp.sh", "", "GAL302"),                          # path
    ("launch/glm5.2_sglang_mtp.sh", " --random-input 8192 --random-output 1024",  # client
     "GAL302"),
])
def test_every_scenario_signal_still_decides(tmp_path, where, lengths, code):
    root, _ = repo(tmp_path, where, SILENT.replace("LENGTHS", lengths))
    assert [f.code for f in audit([root])] == [code]


def test_a_master_configs_agentic_scenario_decides_for_a_silent_recipe(tmp_path):
    rel = "srt-slurm-recipes/vllm/dsv4/agg-gb200.yaml"
    root, _ = repo(tmp_path, rel, RECIPE.replace("2.49", "2.27"))
    f, = audit([root])
    # silent: 2.27 is wrong whichever it is (dsv4_mtp thinking_on K=3 is 2.49)
    assert (f.code, f.found) == ("GAL201", "2.27")
    assert f.message.startswith("synthetic_acceptance_length=2.27 matches no candidate cell: "
                                "dsv4_mtp thinking_on K=3 (2.49); which applies cannot be "
                                "decided (agentic or fixed-sequence-length")
    (root / "configs").mkdir()
    (root / "configs" / "nvidia-master.yaml").write_text(
        MASTER.replace("agentic/agg-gb200-agentic.yaml", "agg-gb200.yaml")
              .replace("    fixed-seq-len:", "    other-seq-len:"))
    f, = audit([root])
    assert (f.path, f.code, f.found, f.expected) == (rel, "GAL201", "2.27", "2.49")


def test_a_master_naming_other_recipes_is_not_read_for_a_silent_one(tmp_path, monkeypatch):
    """Its scenarios are read only when one of its CONFIG_FILE items can name the recipe."""
    from goldenal.auditing import master as ms

    rel = "srt-slurm-recipes/vllm/dsv4/agg-gb200.yaml"
    root, _ = repo(tmp_path, rel, RECIPE.replace("2.49", "2.27"))
    (root / "configs").mkdir()
    (root / "configs" / "nvidia-master.yaml").write_text(
        MASTER.replace("agentic/agg-gb200-agentic.yaml", "agg-gb300.yaml")
              .replace("dsv4/agg-gb200.yaml", "dsv4/agg-gb300.yaml"))
    read, scenarios = [], ms.recipe_scenarios
    monkeypatch.setattr(ms, "recipe_scenarios", lambda *a: read.append(a[0]) or scenarios(*a))
    f, = audit([root])
    assert (f.path, f.code, read) == (rel, "GAL201", [])
    assert "but the value is wrong whichever does" in f.message
    # named, with or without a ``:variant`` selector after the path (InferenceX writes
    # ``glm5-mtp.yaml:zip_override_mtp_8k1k_lowlat[4]``), the master is read and runs it
    for name, code in (("agg-gb200.yaml:agg", "GAL201"), ("agg-gb200.yaml", "GAL201"),
                       ("agg-gb200.yaml:zip_override_mtp_8k1k_lowlat[4]", "GAL201")):
        (root / "configs" / "nvidia-master.yaml").write_text(
            MASTER.replace("agentic/agg-gb200-agentic.yaml", name)
                  .replace("    fixed-seq-len:", "    other-seq-len:"))
        read.clear()
        f, = audit([root])
        assert (f.path, f.code, f.found) == (rel, code, "2.27")
        assert read == ["configs/nvidia-master.yaml"]


# a master entry injecting 2.27 into a recipe without a knob (dsv4_mtp thinking_on K=3: 2.49)
ENTRY_SETTINGS = """\
- spec-decoding: mtp
  prefill:
    additional-settings:
    - "SYNTHETIC_ACCEPTANCE=true"
    - "SYNTHETIC_ACCEPTANCE_LENGTH=2.27"
    - "THINKING_MODE=thinking_on"
    - "CONFIG_FILE=recipes/vllm/dsv4/{folder}agg.yaml"
"""


def injected(tmp_path, folder="", scenario=None, selector=""):
    """``(path, line, code)`` of the audit's findings (but GAL301) on the entry, placed under
    ``scenario`` or, with none, outside any ``scenarios:`` key."""
    bare = RECIPE.replace(',"rejection_sample_method":"synthetic","synthetic_acceptance_length"'
                          ':2.49', "")
    root, _ = repo(tmp_path, f"srt-slurm-recipes/vllm/dsv4/{folder}agg.yaml", bare)
    settings = ENTRY_SETTINGS.format(folder=folder).replace("agg.yaml", "agg.yaml" + selector)
    master = "dsv4-fp4-gb200-dynamo-vllm-mtp:\n  model-prefix: dsv4\n  framework: dynamo-vllm\n"
    if scenario is None:
        master += "  search-space:\n" + textwrap.indent(settings, "  ")
    else:
        master += (f"  scenarios:\n    {scenario}:\n    - search-space:\n"
                   + textwrap.indent(settings, "      "))
    (root / "configs").mkdir()
    (root / "configs" / "nvidia-master.yaml").write_text(master)
    return [(f.path, f.line, f.code) for f in audit([root]) if f.code != "GAL301"]


# undecided, 2.27 is still no golden value of dsv4_mtp K=3 whichever the scenario: GAL201
@pytest.mark.parametrize("folder, code", [("agentic/", "GAL201"), ("8k1k/", "GAL302"),
                                          ("", "GAL201")])
def test_an_injection_outside_any_scenario_takes_its_recipes_answer(tmp_path, folder, code):
    assert injected(tmp_path, folder) == [("configs/nvidia-master.yaml", 9, code)]


def test_an_injection_into_a_variant_of_a_recipe_is_checked_against_that_recipe(tmp_path):
    # ``agg.yaml:mtp_8k1k_lowlat[4]`` selects a variant of agg.yaml: without the recipe,
    # K and the draft head could not be checked (GAL307)
    assert injected(tmp_path, "agentic/", selector=":mtp_8k1k_lowlat[4]") == [
        ("configs/nvidia-master.yaml", 9, "GAL201")]


# InferenceX's golden_al_distribution/README.md (at 843c6254) shows each engine's knob in a
# fenced block; nothing around them says which kind of benchmark they are for
GOLDEN_README = """\
# Golden acceptance lengths

vLLM supports this through synthetic rejection sampling:

```bash
vllm serve MODEL \\
  --speculative-config '{
    "method": "eagle3",
    "model": "DRAFT_MODEL",
    "num_speculative_tokens": 4,
    "rejection_sample_method": "synthetic",
    "synthetic_acceptance_length": 3.24
  }'
```

TensorRT-LLM takes the golden AL minus 1; a golden AL of `3.5` becomes:

```bash
TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.5
```
"""


def test_a_readme_code_block_is_undetermined_on_the_command_line(tmp_path):
    root, _ = repo(tmp_path, "golden_al_distribution/README.md", GOLDEN_README)
    run = subprocess.run([*goldenal_cmd(), "audit", ".", "--no-cache"], cwd=root,
                         capture_output=True, text=True)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == (
        "golden_al_distribution/README.md:19:1: GAL304 cannot determine whether the config is "
        "agentic or fixed-sequence-length, so TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.5 is "
        "not checked against a golden cell: nothing in the files says; state it by the path (an "
        "agentic/ or fixed-seq-len folder), the benchmark settings (an agentic client, or "
        "isl/osl), or the scenario of a master config that runs it\n"
        "Found 1 finding (0 errors, 0 warnings, 1 info).\n"
        "Checked 1 serve config in 1 file read; skipped 0 files.\n")


@pytest.mark.parametrize("scenario, code", [("agentic-coding", "GAL201"),
                                            ("agentx-coding", "GAL201"),
                                            ("fixed-seq-len", "GAL302"),
                                            ("throughput", "GAL201")])
def test_an_injections_scenario_is_read_by_its_name(tmp_path, scenario, code):
    """A scenario whose name says neither is not taken as fixed-sequence-length."""
    assert injected(tmp_path, scenario=scenario) == [("configs/nvidia-master.yaml", 11, code)]
