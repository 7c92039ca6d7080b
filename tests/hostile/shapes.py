"""Pathological inputs of a given size, shared by the linear-time tests and the benchmark.

Each shape is one that took seconds to minutes before it was made linear:
spaces inside ``[[ ]]``, nested ``if``s, a line of repeated ``EXTRA_INPUTS=``,
a long curve-header comment, an arithmetic exponent tower.
"""

SCRIPT_HEAD = "#!/bin/bash\nMODEL=deepseek-ai/DeepSeek-V4-Pro\nIS_AGENTIC=1\n"
SCRIPT_TAIL = ('python3 -m sglang.launch_server --model-path "$MODEL" --speculative-algorithm '
               "EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1\n"
               "export SGLANG_SIMULATE_ACC_LEN=2.50\n")


def brackets(n):
    """``[[ <n spaces>"$X" == 1 ]]`` guarding the launch."""
    return (SCRIPT_HEAD + "if [[" + " " * n + '"$X" == 1 ]]; then\n' + SCRIPT_TAIL + "fi\n")


def nested_ifs(n):
    """The launch inside ``n`` nested ``if``s on unknown variables."""
    return (SCRIPT_HEAD + "".join(f'if [[ "$V{i}" == 1 ]]; then\n' for i in range(n))
            + SCRIPT_TAIL + "fi\n" * n)


def extra_inputs(n):
    """One line of ``n`` repeated ``EXTRA_INPUTS=`` (13 bytes each: 208 KB at n=16,000)."""
    return SCRIPT_HEAD + "EXTRA_INPUTS=" * n + "\n" + SCRIPT_TAIL


def arith_tower(n):
    """``K=$(( 9**9**...**9 ))`` with ``n`` nines."""
    return SCRIPT_HEAD + "K=$(( " + "**".join(["9"] * n) + " ))\n" + SCRIPT_TAIL


def header_comment(n):
    """A curve file whose header has an ``n``-byte comment line of each risky kind."""
    return ("# thinking_on: " + "a" * n + "\n"
            + "# dataset: coding | z_" + "\t" * n + "\n"
            + "# speculative-config: " + "b" * n + "\n"
            + "# thinking_off: " + "chat_template_kwargs {" * (n // 22) + "\n"
            + "model:\n  thinking_on:\n    3: 2.50\n")


SCRIPTS = {"brackets": brackets, "nested_ifs": nested_ifs, "extra_inputs": extra_inputs,
           "arith_tower": arith_tower}
# the sizes named in the reliability requirements
REQUIRED = {"brackets": 2000, "nested_ifs": 400, "extra_inputs": 16000, "arith_tower": 4,
            "header_comment": 16000}
