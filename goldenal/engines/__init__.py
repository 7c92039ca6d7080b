"""Engine adapters: how each serving engine spells the golden AL.

This module holds only the light, table-driven part that ``goldenal lookup``
needs (no heavy imports); the per-engine modules add rendering, rewriting and
reading back.  Sources for every knob: ENGINES.md of the project's references
(vLLM ``SpeculativeConfig``, SGLang ``SGLANG_SIMULATE_ACC_*``, TensorRT-LLM
``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``, ATOM ``--spec-decode-*``).
"""

ENGINES = ("vllm", "sglang", "trtllm", "atom")

# engine -> (name of the knob that carries the value, offset added to AL)
# TensorRT-LLM counts forced *accepted drafts*, so it takes AL - 1.
KNOBS = {
    "vllm": ("synthetic_acceptance_length", 0),
    "sglang": ("SGLANG_SIMULATE_ACC_LEN", 0),
    "trtllm": ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", -1),
    "atom": ("--spec-decode-acceptance-length", 0),
}

# The variable InferenceX's runner reads when no engine is named.
RUNNER_VARIABLE = "SYNTHETIC_ACCEPTANCE_LENGTH"


def add_decimal(text, delta):
    """Add the integer ``delta`` to a decimal string, keeping its decimals.

    Exact string arithmetic, so ``add_decimal("2.83", -1) == "1.83"`` (float
    arithmetic would give ``1.8299999999999998``).
    """
    text = text.strip()
    sign = -1 if text.startswith("-") else 1
    whole, _, frac = text.lstrip("+-").partition(".")
    scale = 10 ** len(frac)
    units = sign * int((whole or "0") + frac) + delta * scale
    magnitude = abs(units)
    out = str(magnitude // scale)
    if frac:
        out += "." + str(magnitude % scale).zfill(len(frac))
    return ("-" if units < 0 else "") + out


def knob_value(engine, al_text):
    """The engine's knob value for a committed AL string (exact decimals)."""
    try:
        _, offset = KNOBS[engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}") from None
    return add_decimal(al_text, offset) if offset else al_text


def env_assignment(engine, al_text):
    """``NAME=value`` for the engine's environment knob, or the runner's variable."""
    if engine in ("sglang", "trtllm"):
        return f"{KNOBS[engine][0]}={knob_value(engine, al_text)}"
    return f"{RUNNER_VARIABLE}={al_text}"
