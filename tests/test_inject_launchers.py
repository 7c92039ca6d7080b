"""`inject` on a launch script names the server it starts, not flags of another engine.

Shaped like InferenceX's single-node vLLM launchers
(``benchmarks/single_node/agentic/*_mtp.sh``): a bash script that runs
``vllm serve ... --speculative-config '{...}'``.
"""

import os
import subprocess

from conftest import goldenal_cmd
from goldenal.recipes.knobs import launched_engines

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


def test_a_vllm_launcher_is_named_as_such(tmp_path):
    path = tmp_path / "minimaxm3_fp4_b300_mtp.sh"
    path.write_text(VLLM_SCRIPT)
    proc = _inject(path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"error: {path}: the script starts vllm serve, not ATOM or llama-server: inject "
        "rewrites the launch commands of those two only (looked for --num-speculative-tokens "
        "and llama-server); write the vllm knob where the script builds its speculative "
        "settings (goldenal emit --engine vllm prints it)\n")
    assert path.read_text() == VLLM_SCRIPT


def test_engine_vllm_on_a_launcher_says_what_it_starts(tmp_path):
    path = tmp_path / "minimaxm3_fp4_b300_mtp.sh"
    path.write_text(VLLM_SCRIPT)
    proc = _inject(path, "--engine", "vllm")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (f"error: {path}: inject rewrites ATOM and llama-server launch "
                           "scripts only, not vllm (the script starts vllm serve)\n")


def test_a_script_starting_no_server_says_what_was_looked_for(tmp_path):
    path = tmp_path / "prepare.sh"
    path.write_text("#!/bin/bash\nhuggingface-cli download nvidia/GLM-5.2-NVFP4\n")
    proc = _inject(path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"error: {path}: no ATOM speculative flags found (--num-speculative-tokens): the "
        "script starts no server (looked for vllm serve, sglang.launch_server, trtllm-serve, "
        "atom.entrypoints, llama-server)\n")


def test_an_atom_launcher_without_speculation_says_so(tmp_path):
    path = tmp_path / "kimik3_fp4_mi355x_atom.sh"
    path.write_text("#!/bin/bash\npython3 -m atom.entrypoints.openai_server --model m -tp 8\n")
    proc = _inject(path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"error: {path}: no ATOM speculative flags found "
                           "(--num-speculative-tokens): the script starts atom.entrypoints "
                           "without speculative decoding\n")
