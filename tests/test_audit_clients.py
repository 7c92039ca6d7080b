"""The benchmark client as evidence, and Markdown judged section by section.

Fixtures are shaped after real files:

- InferenceX's agentic launchers (SemiAnalysisAI/InferenceX
  ``benchmarks/single_node/agentic/*.sh``: ``resolve_trace_source``,
  ``build_replay_cmd``, ``run_agentic_replay_and_write_outputs`` from
  ``benchmarks/benchmark_lib.sh``) and its srt-slurm recipes, whose
  ``benchmark:`` block is ``type: custom`` with ``command: bash
  .../benchmarks/multi_node/agentic_srt.sh``;
- the AgentX client as ATOM's recipes and the AgentX harness README run it
  (ROCm/ATOM ``recipes/*.md``: ``aiperf profile --scenario inferencex-agentx-mvp
  ... --public-dataset semianalysis_cc_traces_weka_062126``), and aiperf's own
  trace replay (ai-dynamo/aiperf docs: ``--custom-dataset-type weka_trace
  --input-file``);
- vLLM's ``vllm bench serve --dataset-name random --random-input-len`` and
  SGLang's ``python3 -m sglang.bench_serving --dataset-name random-ids``;
- serving guides (sgl-project/sglang ``docs/``, vLLM's ``docker run
  vllm/vllm-openai`` examples): a server, then a request, no benchmark.
"""

import os
import re
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goldenal.auditing import audit
from goldenal.auditing.evidence import (CLIENT_SIGNALS, agentic_from_benchmark, agentic_from_client,
                                    agentic_of, client_signals, code_of)
from goldenal.auditing.markdown import fenced_code, heading_says, is_recipe, outline

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(HERE)

# a vLLM server for DeepSeek-V4-Pro with MTP, K=3, thinking on: the golden cell is 2.49
SERVE = ("vllm serve deepseek-ai/DeepSeek-V4-Pro --speculative-config '{\"method\":\"mtp\","
         "\"num_speculative_tokens\":3,\"rejection_sample_method\":\"synthetic\","
         "\"synthetic_acceptance_length\":VALUE}' "
         "--default-chat-template-kwargs '{\"thinking\": true}' &\n")
AGENTX = ("aiperf profile --scenario inferencex-agentx-mvp --url http://localhost:8000 \\\n"
          "  --endpoint-type chat --streaming --model deepseek-ai/DeepSeek-V4-Pro \\\n"
          "  --concurrency 16 --public-dataset semianalysis_cc_traces_weka_062126\n")


def repo(tmp_path, files):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def found(root):
    return [(f.path, f.line, f.code, f.severity) for f in audit([root])]


# ----------------------------------------------------------------- the client's signals

@pytest.mark.parametrize("client", [
    AGENTX,
    # the scenario alone, and the dataset alone, as ``--flag=value`` and quoted
    "aiperf profile --scenario=inferencex-agentx-mvp --url http://x\n",
    "aiperf profile --public-dataset 'semianalysis_cc_traces_weka_with_subagents_256k'\n",
    # aiperf replaying agentic traces from files
    "aiperf profile --custom-dataset-type weka_trace --input-file /data/traces\n",
    # the AgentX harness README: the dataset named in a variable first
    'DATASET="semianalysis_cc_traces_weka_062126"\naiperf profile --public-dataset "$DATASET"\n',
    # InferenceX's helpers
    'resolve_trace_source\nbuild_replay_cmd "$RESULT_DIR"\n'
    'run_agentic_replay_and_write_outputs "$RESULT_DIR"\n',
    "export WEKA_LOADER_OVERRIDE=semianalysis_cc_traces_weka_062126_256k\n",
    "bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh\n",
    # SGLang 0.5.23's trace replay (sglang/benchmark/serving.py:2332)
    "python -m sglang.bench_serving --backend sglang --dataset-name agentic-trace "
    "--dataset-path traces.jsonl\n",
])
def test_an_agentic_client_says_agentic(client):
    assert agentic_from_client(client) is True


@pytest.mark.parametrize("client", [
    "vllm bench serve --dataset-name random --random-input-len 8192 --random-output-len 1024\n",
    "vllm bench serve --model m --dataset-name random\n",            # default lengths: fixed
    "vllm bench serve --dataset-name=prefix_repetition --num-prompts 8\n",
    "python3 -m sglang.bench_serving --dataset-name random-ids --num-prompts 64\n",
    "python3 -m sglang.bench_serving --dataset-name generated-shared-prefix\n",
    # aiperf's synthetic prompts at set lengths
    "aiperf profile --isl 8192 --osl 1024 --concurrency 4\n",
])
def test_a_random_length_client_says_fixed(client):
    assert agentic_from_client(client) is False


@pytest.mark.parametrize("client", [
    # both kinds in one launcher: its branches or its path decide
    AGENTX + "vllm bench serve --dataset-name random\n",
    # a trace replay that is not AgentX's, a real-text dataset, another tool's --scenario
    "aiperf profile --custom-dataset-type mooncake_trace --input-file trace.jsonl\n",
    "vllm bench serve --dataset-name sharegpt --dataset-path sg.json\n",
    "python coverage_study.py --scenario agentic-like\n",
    # commented out
    "# aiperf profile --scenario inferencex-agentx-mvp\n# resolve_trace_source\n",
    # a name forwarded to a client container runs nothing (InferenceX's
    # benchmarks/multi_node/amd_utils/server_sglang.sh, shared by both kinds of run)
    "for v in IS_AGENTIC CLEAR_CACHE_BETWEEN_CONC \\\n    WEKA_LOADER_OVERRIDE AIPERF_X; do\n"
    "  echo $v\ndone\n",
])
def test_other_clients_say_nothing(client):
    assert agentic_from_client(client) is None


_PIECES = ("--isl 1", "  # --osl 2", "#", " --scenario inferencex-agentx-mvp", "--dataset-name=random",
           "run_agentic_replay_and_write_outputs", "# resolve_trace_source", '="semianalysis_cc_traces_weka',
           "--random-input-len", "--", " ", "\t", "\n", "\r\n", "\x0b", "\u2028", "é")


@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_comment_lines_say_nothing(text):
    # the signals are read off comment lines in place: as they are from the code alone
    assert client_signals(text) == client_signals(code_of(text))


def test_every_signal_of_the_table_is_read():
    for signal in CLIENT_SIGNALS:
        for value in signal.values or ("1024",):
            # a flag and its value; a command as a word; a variable as an assignment
            text = (f"client {signal.flag} {value}\n" if signal.flag
                    else f"export {value}=x\n" if value.isupper() else f"{value} x\n")
            agentic, fixed = client_signals(text)
            assert (agentic, fixed) == (signal.agentic, not signal.agentic), text


def test_the_policy_page_lists_every_signal_with_its_upstream_file():
    with open(os.path.join(ROOT, "docs", "policy.md"), encoding="utf-8") as fh:
        page = fh.read()
    table = page[page.index("## 5."):]
    for signal in CLIENT_SIGNALS:
        repository, path = signal.source.split(" ")
        assert re.search(rf"`{re.escape(path)}(`|:\d)", table) and repository in table, signal
        for value in signal.values:
            assert re.search(rf"[ `]{re.escape(value)}", table), value
        if signal.flag:
            assert signal.flag in table, signal.flag


# ------------------------------------------------------------- launchers and recipes

@pytest.mark.parametrize("where", ["launch/dsv4_vllm_mtp.sh", "scripts/dsv4_vllm_mtp.sh"])
def test_a_wrong_value_beside_an_agentic_client_is_an_error(tmp_path, where):
    """Before: GAL304 info (nothing says agentic), and the wrong 2.54 passed CI."""
    root = repo(tmp_path, {where: SERVE.replace("VALUE", "2.54") + AGENTX})
    assert found(root) == [(where, 1, "GAL201", "error")]
    root = repo(tmp_path / "ok", {where: SERVE.replace("VALUE", "2.49") + AGENTX})
    assert found(root) == []


RECIPE = """\
name: dsv4-agg-gb200-mtp3
model:
  path: deepseek-ai/DeepSeek-V4-Pro
  container: vllm/vllm-openai:v0.20.1-ubuntu2404
backend:
  type: dynamo
  vllm_config:
    aggregated:
      speculative-config: '{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":VALUE}'
      default-chat-template-kwargs: '{"thinking": true}'
benchmark:
  type: custom
  command: COMMAND
"""


@pytest.mark.parametrize("command, value, code", [
    # InferenceX's srt-slurm recipes run the agentic driver through a custom benchmark
    ("bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh", "2.54", "GAL201"),
    ("bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh", "2.49", None),
    ("vllm bench serve --dataset-name random --random-input-len 8192 --random-output-len 1024",
     "2.49", "GAL302"),
    # nothing says agentic or not: 2.54 is wrong either way (dsv4_mtp K=3 is 2.49), the
    # golden value cannot be checked
    ("echo nothing to say", "2.54", "GAL201"),
    ("echo nothing to say", "2.49", "GAL304"),
])
def test_a_custom_benchmark_command_is_read_like_a_launchers_client(tmp_path, command, value,
                                                                    code):
    rel = "srt-slurm-recipes/vllm/dsv4/agg-gb200-mtp3.yaml"
    root = repo(tmp_path, {rel: RECIPE.replace("VALUE", value).replace("COMMAND", command)})
    assert [c for _, _, c, _ in found(root)] == ([code] if code else [])


def test_inject_reads_the_custom_command_as_audit_does():
    """``inject`` refuses a fixed-sequence-length recipe by the same test (agentic_of)."""
    fixed = {"type": "custom", "command": "vllm bench serve --dataset-name random"}
    agentic = {"type": "custom", "command": "bash benchmarks/multi_node/agentic_srt.sh"}
    assert agentic_from_benchmark(fixed) is False and agentic_of("x/agentic/r.yaml", None,
                                                                 fixed) is False
    assert agentic_from_benchmark(agentic) is True and agentic_of("x/8k1k/r.yaml", None,
                                                                  agentic) is True


@pytest.mark.parametrize("folder, command, refused", [
    ("recipes", "vllm bench serve --dataset-name random --random-input-len 8192", True),
    ("8k1k", "bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh", False),
])
def test_inject_and_audit_agree_on_the_custom_command(tmp_path, run_cli, folder, command,
                                                       refused):
    rel = f"{folder}/agg-gb200-mtp3.yaml"
    text = RECIPE.replace("VALUE", "2.20").replace("COMMAND", command)
    root = repo(tmp_path, {rel: text})
    codes = {c for _, _, c, _ in found(root)}
    assert codes == ({"GAL302"} if refused else {"GAL201"})
    # --force: the recipe pins another value, which inject replaces only when told
    rc, out, err = run_cli("inject", root / rel, "--thinking", "on", "--force")
    if refused:
        assert rc == 1 and "a fixed-sequence-length (non-agentic) config" in err
        assert (root / rel).read_text() == text
    else:
        assert (rc, err) == (0, f"{root / rel}: changed 1 of 1 entry (aggregated K=3: 2.49)\n")
        assert '"synthetic_acceptance_length":2.49' in (root / rel).read_text()
        assert found(root) == []


def test_a_launcher_driving_an_agentic_client_is_no_demo_server(tmp_path):
    """GAL310 is for servers no client drives; InferenceX's helpers are a client."""
    root = repo(tmp_path, {"launch/dsv4_vllm_mtp.sh": SERVE.replace("VALUE", "2.49")
                           + "resolve_trace_source\nbuild_replay_cmd \"$RESULT_DIR\"\n"})
    assert found(root) == []


# ------------------------------------------------------------------------ Markdown

# a benchmarking guide: an agentic section pinning the knob, a fixed-length one that does not
GUIDE = """\
# Benchmarking DeepSeek-V4-Pro

## Agentic coding (AgentX)

```bash
{serve}{agentx}```

## Fixed sequence length

```bash
vllm serve deepseek-ai/DeepSeek-V4-Pro --speculative-config '{{"method":"mtp","num_speculative_tokens":3}}' &
vllm bench serve --dataset-name random --random-input-len 8192 --random-output-len 1024
```
"""


@pytest.mark.parametrize("where", ["docs/benchmarking.md", "recipes/dsv4/README.md"])
def test_another_sections_fixed_length_runs_never_make_a_block_fixed_length(tmp_path, where):
    """Before: GAL302 on the agentic example, from the 8k1k client of the next section."""
    text = GUIDE.format(serve=SERVE.replace("VALUE", "2.49"), agentx=AGENTX)
    assert found(repo(tmp_path, {where: text})) == []
    text = GUIDE.format(serve=SERVE.replace("VALUE", "2.54"), agentx=AGENTX)
    severity = "warning" if where.startswith("docs/") else "error"
    assert found(repo(tmp_path / "wrong", {where: text})) == [(where, 6, "GAL201", severity)]


# ATOM's recipe pages: the heading says agentic, the server and the client in sections of
# their own (ROCm/ATOM recipes/*.md)
ATOM_PAGE = """\
# DeepSeek-V4-Pro agentic on ATOM

## TP8 server

```bash
export MODEL_PATH="/models/deepseek-ai/DeepSeek-V4-Pro"
python3 -u -m atom.entrypoints.openai_server \\
  --model "$MODEL_PATH" --served-model-name deepseek-ai/DeepSeek-V4-Pro \\
  --tensor-parallel-size 8 --kv-cache-dtype fp8 \\
  --method mtp --num-speculative-tokens 3 \\
  --spec-decode-acceptance-length 2.54
```

## Client

```bash
{client}```
"""


@pytest.mark.parametrize("title, client", [
    ("DeepSeek-V4-Pro agentic on ATOM", "curl http://localhost:8000/v1/models\n"),
    # a recipe whose title says nothing: the page's one client decides
    ("DeepSeek-V4-Pro on ATOM", AGENTX),
])
def test_a_recipe_page_is_read_from_its_headings_and_its_client(tmp_path, title, client):
    text = ATOM_PAGE.replace("DeepSeek-V4-Pro agentic on ATOM", title).format(client=client)
    rel = "recipes/DeepSeek-V4-Pro.md"
    got = [(line, code, sev) for _, line, code, sev in found(repo(tmp_path, {rel: text}))]
    assert got == [(11, "GAL305", "info"), (11, "GAL201", "error")]


def test_documentation_pages_do_not_take_the_page_client(tmp_path):
    """In a guide, another section's client is another example, not this block's run: the
    server section is a serving example, its value checked as the engine reads it."""
    text = ATOM_PAGE.replace(" agentic", "").format(client=AGENTX)
    got = [(line, code, sev) for _, line, code, sev in
           found(repo(tmp_path, {"docs/atom.md": text}))]
    assert got == [(11, "GAL305", "info"), (11, "GAL313", "warning"), (11, "GAL201", "warning")]


def test_a_fixed_length_example_in_documentation_is_a_warning(tmp_path):
    text = ("# Throughput\n\n## 8k1k\n\n```bash\n" + SERVE.replace("VALUE", "2.49")
            + "vllm bench serve --dataset-name random --random-input-len 8192\n```\n")
    assert found(repo(tmp_path, {"docs/throughput.md": text})) == [
        ("docs/throughput.md", 6, "GAL302", "warning")]
    assert found(repo(tmp_path / "r", {"benchmarks/throughput.md": text})) == [
        ("benchmarks/throughput.md", 6, "GAL302", "error")]


def test_the_block_holding_the_knob_decides_when_its_section_runs_both(tmp_path):
    text = ("# Runs\n\n```bash\n" + SERVE.replace("VALUE", "2.54") + AGENTX + "```\n\n"
            "```bash\nvllm bench serve --dataset-name random --random-input-len 8192\n```\n")
    assert found(repo(tmp_path, {"docs/runs.md": text})) == [
        ("docs/runs.md", 4, "GAL201", "warning")]


CHAT_GUIDE = """\
# Chat with DeepSeek-V4-Pro

Serve the model, then talk to it.

## Serve

```bash
{command}
```

## Talk to it

```bash
curl http://localhost:8000/v1/chat/completions -d '{{"messages": []}}'
```
"""


@pytest.mark.parametrize("command, line, engine", [
    (SERVE.replace("VALUE", "2.49").rstrip(" &\n"), 8, "vllm"),
    # vLLM's container examples: the image's entrypoint is the server
    ("docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.20.1 \\\n"
     "  --model deepseek-ai/DeepSeek-V4-Pro --speculative-config '{\"method\":\"mtp\","
     "\"num_speculative_tokens\":3,\"rejection_sample_method\":\"synthetic\","
     "\"synthetic_acceptance_length\":2.49}' \\\n"
     "  --default-chat-template-kwargs '{\"thinking\": true}'", 9, "vllm"),
    ("docker run --gpus all -e SGLANG_SIMULATE_ACC_LEN=2.99 lmsysorg/sglang:v0.5.9 \\\n"
     "  python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
     "--speculative-num-steps 3 --speculative-eagle-topk 1 "
     "--default-chat-template-kwargs '{\"enable_thinking\": true}'", 8, "sglang"),
])
def test_synthetic_acceptance_in_a_serving_guide_is_gal313(tmp_path, command, line, engine):
    root = repo(tmp_path, {"docs/chat.md": CHAT_GUIDE.format(command=command)})
    f, = audit([root])
    assert (f.path, f.line, f.code, f.severity) == ("docs/chat.md", line, "GAL313", "warning")
    assert f.message.endswith("command that no benchmark runs, section 'Serve': forced "
                              "acceptance emits unverified tokens to real users")
    assert f" {engine} command" in f.message


def test_a_serving_guide_exits_zero_on_the_command_line(tmp_path):
    root = repo(tmp_path, {"docs/chat.md": CHAT_GUIDE.format(
        command=SERVE.replace("VALUE", "2.49").rstrip(" &\n"))})
    run = subprocess.run(["python", "-m", "goldenal", "audit", ".", "--no-cache"], cwd=root,
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.splitlines()[0] == (
        "docs/chat.md:8:144: GAL313 synthetic_acceptance_length=2.49 is set in a vllm command "
        "that no benchmark runs, section 'Serve': forced acceptance emits unverified tokens to "
        "real users")


def test_a_knob_without_a_server_in_documentation_stays_undetermined(tmp_path):
    text = "# Knobs\n\n```bash\nexport SGLANG_SIMULATE_ACC_LEN=2.99\n```\n"
    assert [c for _, _, c, _ in found(repo(tmp_path, {"docs/knobs.md": text}))] == ["GAL304"]


# ------------------------------------------------------------------ the Markdown outline

def test_outline_reads_atx_and_setext_headings_and_skips_fenced_ones():
    lines = ["Title", "=====", "", "## Serve ##", "```bash", "# not a heading", "vllm serve m",
             "```", "Sub", "---", "~~~", "code", "~~~", "```sh", "unclosed"]
    heads, blocks = outline(lines)
    assert [(h.line, h.level, h.title, h.parent) for h in heads] == [
        (0, 1, "Title", -1), (3, 2, "Serve", 0), (8, 2, "Sub", 0)]
    assert [(b.first, b.stop, b.shell, b.section) for b in blocks] == [
        (5, 7, True, 1), (11, 12, True, 2), (14, 15, True, 2)]


@given(st.lists(st.sampled_from(["```", "```bash", "```python", "~~~", "# T", "## S", "text",
                                 "---", "===", "$ run", ""]), max_size=30))
def test_outline_agrees_with_fenced_code(lines):
    """A shell block's lines are exactly the lines fenced_code keeps; nothing else is."""
    _, blocks = outline(lines)
    kept = {i for b in blocks if b.shell for i in range(b.first, b.stop)}
    code = fenced_code(lines)
    assert all(code[i] == "" for i in range(len(lines)) if i not in kept)
    assert all(code[i] in (lines[i], lines[i].replace("$ ", "  ", 1)) for i in kept)
    assert all(b.first <= b.stop <= len(lines) for b in blocks)


@pytest.mark.parametrize("title, said", [
    ("Agentic coding (AgentX)", True), ("AgentX MVP", True), ("8k1k", False),
    ("Fixed-length (8k1k) runs", False), ("Fixed sequence length", False),
    ("ISL8K_OSL1K", False), ("Launch the server", None), ("Benchmark", None),
    ("Non-agentic runs", False), ("Not agentic: 1k1k", False),
])
def test_heading_says(title, said):
    assert heading_says(title) is said


@pytest.mark.parametrize("path, recipe", [
    ("recipes/DeepSeek-V4.md", True), ("benchmarks/single_node/agentic/README.md", True),
    ("docs/agentic/atom-guide.md", True), ("docs/guide.md", False), ("README.md", False),
    ("examples/chat/README.md", False), ("docs/benchmarking/vllm.md", False),
])
def test_is_recipe(path, recipe):
    assert is_recipe(path) is recipe



@given(st.lists(st.sampled_from(["resolve_trace_source", "build_replay_cmd", "agentic_srt.sh",
                                 "run_agentic_replay_and_write_outputs", "run_agentic_replay",
                                 "WEKA_LOADER_OVERRIDE=", "semianalysis_cc_traces_weka", "=",
                                 "'", '"', "-", "_", "x", " ", "\n", ".sh"]), max_size=12))
def test_agentic_words_are_found_where_the_pattern_finds_them(parts):
    """The words are looked up before the pattern is tried, only where one starts."""
    from goldenal.auditing import evidence as ev

    text = "".join(parts)
    assert ev._runs_agentic_words(text) == bool(ev._AGENTIC_WORD_RE.search(text))
