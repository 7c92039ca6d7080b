"""`inject` on a launch script: the engine is the server it starts.

vLLM launchers get their literal ``--speculative-config`` JSON rewritten;
others are named, with what was looked for.

Shaped like InferenceX's single-node vLLM launchers
(``benchmarks/single_node/agentic/*_mtp.sh``): a bash script that runs
``vllm serve ... --speculative-config '{...}'``.
"""

import json
import os
import re
import shlex
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import goldenal_cmd
from goldenal.engines.vllm import plan_command
from goldenal.engines.table import launched_engines
from goldenal.recipes.spans import apply_edits

VLLM_SCRIPT = """\
#!/usr/bin/env bash
set -euo pipefail
MODEL_PATH=nvidia/MiniMax-M3-NVFP4
NUM_SPEC_TOKENS=3
# python3 -m sglang.launch_server was the old way
vllm serve "$MODEL_PATH" \\
    --port 8888 \\
    --speculative-config '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA","num_speculative_tokens":3}'
"""


def _inject(path, *args):
    env = dict(os.environ)
    env.pop("GOLDENAL_DIR", None)
    env.pop("GOLDENAL_ALLOW_NON_AGENTIC", None)
    return subprocess.run([*goldenal_cmd(), "inject", str(path), "--thinking", "on", *args],
                          capture_output=True, text=True, env=env, cwd=path.parent)


def test_launched_engines_reads_the_command_not_comments():
    assert launched_engines(VLLM_SCRIPT) == ("vllm",)
    assert launched_engines("llama-server -m x &\npython3 -m atom.entrypoints.openai_server\n"
                            ) == ("llamacpp", "atom")
    assert launched_engines("# vllm serve x\necho vllm\n") == ()


GUARDED = """\
#!/usr/bin/env bash
MODEL_PATH=nvidia/MiniMax-M3-NVFP4
if [[ "${EVAL_ONLY:-false}" == "true" ]]; then
    vllm serve "$MODEL_PATH" \\
        --speculative-config '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA","num_speculative_tokens":3}'
else
    vllm serve "$MODEL_PATH" \\
        --speculative-config '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA","num_speculative_tokens":3}'
fi
"""
GOLDEN = ',"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.78}'


def test_a_vllm_launcher_is_injected(tmp_path):
    """The engine is the one the script launches: vllm serve, with literal JSON."""
    path = tmp_path / "minimaxm3_fp4_b300_mtp.sh"
    path.write_text(VLLM_SCRIPT)
    proc = _inject(path)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == f"{path}: changed 1 of 1 entry (vllm K=3: 2.78)\n"
    assert path.read_text() == VLLM_SCRIPT.replace('"num_speculative_tokens":3}',
                                                   '"num_speculative_tokens":3' + GOLDEN)
    proc = _inject(path)
    assert proc.stderr == (f"{path}: already carries the golden AL in 1 entry; "
                           "nothing to change\n")


def test_escaped_json_in_a_double_quoted_string_stays_escaped(tmp_path):
    path = tmp_path / "dsv4_fp4_b300_vllm_mtp.sh"
    text = ('vllm serve deepseek-ai/DeepSeek-V4-Pro --speculative-config '
            '"{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":3}"\n')
    path.write_text(text)
    proc = _inject(path)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == text.replace(
        '3}"', '3,\\"rejection_sample_method\\":\\"synthetic\\",'
               '\\"synthetic_acceptance_length\\":2.49}"')


def test_only_the_benchmark_path_of_a_vllm_launcher_gets_the_knob(tmp_path):
    path = tmp_path / "minimaxm3_fp4_b300_mtp.sh"
    path.write_text(GUARDED)
    assert _inject(path).returncode == 0
    lines = path.read_text().splitlines()
    assert lines[4].endswith('"num_speculative_tokens":3}\'')           # EVAL_ONLY=true
    assert lines[7].endswith('"num_speculative_tokens":3' + GOLDEN + "'")


def refused(path, text, code, message, *args):
    """``inject`` on ``text`` exits ``code`` with ``error: PATH<message>`` and writes nothing."""
    path.write_text(text)
    proc = _inject(path, *args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, "", f"error: {path}{message}\n")
    assert path.read_text() == text


def test_a_config_built_elsewhere_is_refused_where_it_is_used(tmp_path):
    """InferenceX's launchers build the JSON with printf into $SPEC_CONFIG."""
    refused(tmp_path / "minimaxm3_fp4_b300_mtp.sh",
            "SPEC_CONFIG=$(printf '{\"method\":\"eagle3\",\"num_speculative_tokens\":%d}' 3)\n"
            'vllm serve nvidia/MiniMax-M3-NVFP4 \\\n    --speculative-config "$SPEC_CONFIG"\n',
            2, ":3: --speculative-config \"$SPEC_CONFIG\" is not literal JSON; write "
               "synthetic_acceptance_length where the script builds it (goldenal emit --engine "
               "vllm prints it)")


SGLANG_SCRIPT = ("export SGLANG_SIMULATE_ACC_LEN=2.99\n"
                 "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 "
                 "--speculative-num-steps 3\n")


def test_a_launcher_of_another_engine_is_named_as_such(tmp_path):
    path = tmp_path / "glm5.2_fp4_b200_sglang_mtp.sh"
    refused(path, SGLANG_SCRIPT, 2,
            ": the script starts sglang.launch_server, not ATOM, llama-server or vllm serve: "
            "inject rewrites the launch commands of those only (looked for "
            "--num-speculative-tokens, llama-server and vllm serve); write the sglang knob "
            "where the script builds its speculative settings (goldenal emit --engine sglang "
            "prints it)")
    refused(path, SGLANG_SCRIPT, 1,
            ": inject rewrites ATOM, llama-server and vllm serve launch scripts only, not "
            "sglang (the script starts sglang.launch_server)", "--engine", "sglang")


def test_a_script_starting_no_server_says_what_was_looked_for(tmp_path):
    refused(tmp_path / "prepare.sh", "#!/bin/bash\nhuggingface-cli download nvidia/GLM-5.2-NVFP4\n",
            2, ": no ATOM speculative flags found (--num-speculative-tokens): the script starts "
               "no server (looked for vllm serve, sglang.launch_server, trtllm-serve, "
               "atom.entrypoints, llama-server)")


def test_an_atom_launcher_without_speculation_says_so(tmp_path):
    refused(tmp_path / "kimik3_fp4_mi355x_atom.sh",
            "#!/bin/bash\npython3 -m atom.entrypoints.openai_server --model m -tp 8\n",
            2, ": no ATOM speculative flags found (--num-speculative-tokens): the script starts "
               "atom.entrypoints without speculative decoding")


@given(st.dictionaries(st.sampled_from(["model", "method", "note"]),
                       st.text(st.characters(blacklist_characters="$`'\x00",
                                             blacklist_categories=("Cs",)), max_size=8),
                       max_size=3),
       st.sampled_from(["'", '"']))
def test_a_literal_config_reads_back_as_json_with_the_knob(extra, quote):
    """Whatever the strings of the JSON hold, bash's reading of the rewritten word is the
    same object plus the two knob keys (double quotes: \\ " $ ` escaped)."""
    spec = {**extra, "num_speculative_tokens": 2}
    body = json.dumps(spec, separators=(",", ":"))
    word = (quote + (body if quote == "'" else re.sub(r'([$`"\\])', r"\\\1", body)) + quote)
    text = f"vllm serve m --speculative-config {word}\n"
    plan, targets = plan_command("x.sh", text, lambda site, k, line: "2.27")
    after = apply_edits(text, plan.edits)
    (read,) = shlex.split(after.split("--speculative-config ", 1)[1])
    assert json.loads(read) == {**spec, "rejection_sample_method": "synthetic",
                                "synthetic_acceptance_length": 2.27}
    assert [t[:4] for t in targets] == [(1, 2, "2.27", "2.27")]


@pytest.mark.parametrize("sep", [" ", "=", " \\\n    ", " \\\n  \\\n  "])
def test_every_separator_of_the_flag_and_its_value(sep):
    """``--speculative-config \\`` with the JSON on the next line is the same flag."""
    text = f"vllm serve m --speculative-config{sep}'{{\"method\":\"mtp\",\"num_speculative_tokens\":2}}'\n"
    plan, _ = plan_command("x.sh", text, lambda site, k, line: "2.27")
    assert apply_edits(text, plan.edits) == text.replace(
        '2}', '2,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.27}')


# Two heads on one line, as in the one-line ``if [ "$CONC" = 1 ]; then ...; else ...; fi``
# branches of InferenceX's launchers: the GQA head (minimaxm3_eagle3_gqa, K=3: 2.78)
# first, the MHA head (minimaxm3_eagle3, K=3: 2.83) after it.
ONE_LINE = (
    "#!/usr/bin/env bash\n"
    "if [ \"$CONC\" = 1 ]; then vllm serve Inferact/MiniMax-M3 --speculative-config "
    "'{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-EAGLE3-GQA\","
    "\"num_speculative_tokens\":3}'; else vllm serve Inferact/MiniMax-M3 --speculative-config "
    "'{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-EAGLE3\","
    "\"num_speculative_tokens\":3}'; fi\n")


@pytest.mark.parametrize("distribution, knobs", [
    (None, ("2.78", "2.83")),
    # each head's own curve (goldenal.apply.distribution.acceptance_rates of minimaxm3_eagle3_gqa
    # and minimaxm3_eagle3, thinking_on K=3)
    ("curve", ("[0.79,0.6,0.39]", "[0.78,0.6,0.45]")),
])
def test_each_command_on_a_line_is_written_and_reported_from_its_own_curve(
        tmp_path, distribution, knobs):
    """Keyed by line, the first command was reported with the curve of the second."""
    from goldenal.apply.inject import inject

    path = tmp_path / "minimaxm3_fp4_b300_vllm_mtp.sh"
    path.write_text(ONE_LINE)
    result = inject(path, thinking="on", distribution=distribution)
    assert [(v.line, v.al, v.knob_value, v.curve) for v in result.values] == [
        (2, "2.78", knobs[0], "minimaxm3_eagle3_gqa"), (2, "2.83", knobs[1], "minimaxm3_eagle3")]
    key = "synthetic_acceptance_rates" if distribution else "synthetic_acceptance_length"
    written = [json.loads(word.split("'")[1]) for word in path.read_text().split(
        "--speculative-config ")[1:]]
    assert [json.dumps(spec[key], separators=(",", ":")) for spec in written] == list(knobs)


def test_the_rates_are_asked_for_the_site_they_are_written_into():
    """``rates_for`` gets the site of the value it turns into rates, not the last one asked."""
    asked = []

    def golden_for(site, k, line):
        return {"A": "2.5", "B": "3.0"}[site.draft]

    def rates_for(site, k, al_text):
        asked.append((site.draft, k, al_text))
        return {"A": [0.9, 0.5, 0.1], "B": [1.0, 0.6, 0.4]}[site.draft]

    text = ("vllm serve m --speculative-config '{\"model\":\"A\",\"num_speculative_tokens\":3}'"
            " || vllm serve m --speculative-config '{\"model\":\"B\",\"num_speculative_tokens\""
            ":3}'\n")
    _, targets = plan_command("x.sh", text, golden_for, rates_for=rates_for)
    assert asked == [("A", 3, "2.5"), ("B", 3, "3.0")]
    assert [(t[:4], t[4].draft) for t in targets] == [
        ((1, 3, "2.5", "[0.9,0.5,0.1]"), "A"), ((1, 3, "3.0", "[1.0,0.6,0.4]"), "B")]


def test_inject_keeps_nothing_of_a_file_once_done(tmp_path):
    """Regression: the thinking mode inject reads as the audit does left each script's
    text and configs in the audit's per-run table, which only an audit clears: a session
    injecting many files grew without bound."""
    from goldenal.apply.inject import inject
    from goldenal.auditing import runner

    for n in range(3):
        path = tmp_path / f"minimaxm3_fp4_b300_mtp_{n}.sh"
        path.write_text(VLLM_SCRIPT + f"# copy {n}\n")
        assert inject(path, thinking="on").changed == 1
    assert runner._SAME == {}
