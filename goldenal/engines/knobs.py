"""Each engine's synthetic-acceptance knob and the exact conversion of a committed AL to it.

Pure data and decimal arithmetic, standard library only: ``goldenal lookup``
and :class:`goldenal.policy.GoldenValue` use it without loading an adapter.
Sources for every knob: docs/engines.md §1-§5 (vLLM
``SpeculativeConfig``, SGLang ``SGLANG_SIMULATE_ACC_*``, TensorRT-LLM
``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``, ATOM ``--spec-decode-*``, llama.cpp
``--spec-synth-len`` / ``--spec-synth-rates``).  How recipe text spells them:
:mod:`goldenal.recipes.knobs`.
"""

ENGINES = ("vllm", "sglang", "trtllm", "atom", "llamacpp")

# engine -> (name of the knob that carries the value, offset added to AL)
# TensorRT-LLM counts forced *accepted drafts*, so it takes AL - 1.
KNOBS = {
    "vllm": ("synthetic_acceptance_length", 0),
    "sglang": ("SGLANG_SIMULATE_ACC_LEN", 0),
    "trtllm": ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", -1),
    "atom": ("--spec-decode-acceptance-length", 0),
    "llamacpp": ("--spec-synth-len", 0),
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


def acceptance_rate(al_text, k):
    """(AL - 1) / K as a decimal string, exact when it terminates.

    ``acceptance_rate("2.83", 3) == "0.61"``.  A repeating quotient is given
    to 12 decimals, so 1 + K * rate is within 1e-11 of the AL (ATOM's
    ``--spec-decode-acceptance-rate``, vLLM 0.19's ``synthetic_acceptance_rate``).
    """
    from decimal import Decimal

    from goldenal.errors import PolicyError

    if isinstance(k, bool) or not k or int(k) <= 0:
        raise PolicyError("the rate form needs K (--num-speculative-tokens) > 0")
    q = (Decimal(al_text) - 1) / Decimal(int(k))
    text = format(q.quantize(Decimal("1e-12")), "f").rstrip("0").rstrip(".")
    return text or "0"


def knob_value(engine, al_text, *, k=None, form=None):
    """The engine's knob value for a committed AL string (exact decimals).

    The one conversion every writer and the audit use.  ``form="rate"``
    (ATOM) gives (AL - 1) / K.

    Raises
    ------
    goldenal.errors.PolicyError
        TensorRT-LLM would get 0 or less, which it reads as "forcing off"
        (AL 1.00 cannot be expressed there).
    """
    try:
        _, offset = KNOBS[engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}") from None
    if form not in (None, "length"):
        if engine != "atom" or form != "rate":
            raise ValueError(f"`form` must be one of length, rate (ATOM only), got {form!r}")
        return acceptance_rate(al_text, k)
    if not offset:
        return al_text
    value = add_decimal(al_text, offset)
    if value.startswith("-") or not value.strip("0."):
        from goldenal.errors import PolicyError

        raise PolicyError(f"golden AL {al_text} would need {KNOBS[engine][0]}={value}, which "
                          "TensorRT-LLM reads as 'forcing off'; AL 1.00 cannot be "
                          "expressed on this engine")
    return value


def env_assignment(engine, al_text):
    """``NAME=value`` for the engine's environment knob, or the runner's variable."""
    if engine in ("sglang", "trtllm"):
        return f"{KNOBS[engine][0]}={knob_value(engine, al_text)}"
    if engine == "llamacpp":
        return f"LLAMA_ARG_SPEC_SYNTH_LEN={knob_value(engine, al_text)}"
    return f"{RUNNER_VARIABLE}={al_text}"


# Every knob name each engine reads for synthetic acceptance (value knob first).
# Sources: docs/engines.md §1.1 (vLLM), §2.1 (SGLang), §3.1 (TensorRT-LLM), §4.1 (ATOM), §5.1
# (llama.cpp: flags and their LLAMA_ARG_* environment spellings).
KNOB_NAMES = {
    "vllm": ("synthetic_acceptance_length", "synthetic_acceptance_rates",
             "synthetic_acceptance_rate", "rejection_sample_method"),
    "sglang": ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD",
               "SGLANG_SIMULATE_ACC_TOKEN_MODE"),
    "trtllm": ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",),
    "atom": ("--spec-decode-acceptance-length", "--spec-decode-acceptance-rate"),
    "llamacpp": ("--spec-synth-len", "--spec-synth-rates", "LLAMA_ARG_SPEC_SYNTH_LEN",
                 "LLAMA_ARG_SPEC_SYNTH_RATES"),
}
