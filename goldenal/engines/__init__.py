"""Engine adapters: how each serving engine spells the golden AL.

This module holds only the light, table-driven part that ``goldenal lookup``
needs (no heavy imports); the per-engine modules add rendering, rewriting and
reading back.

Public API (stable):

- ``ENGINES``, ``KNOBS`` (engine -> (value knob, offset)), ``KNOB_NAMES``
  (engine -> every knob name it reads), ``add_decimal``, ``knob_value``,
  ``env_assignment``;
- ``adapter(engine)`` -> :class:`goldenal.engines.base.EngineAdapter` with
  ``convert``, ``fragment``, ``plan`` (edits for one site), ``rewrite`` and
  ``read``;
- ``read_settings(path, text=None)`` -> list of
  :class:`goldenal.engines.base.SpecSetting`, one per worker role (srt-slurm
  recipes, vLLM ``--config`` YAML/JSON, TensorRT-LLM extra-LLM-API YAML and
  the environment file it names, launcher scripts ``.sh``/``.args`` with
  SGLang/TensorRT-LLM exports, vLLM JSON strings and ATOM flags);
- ``goldenal.engines.vllm.parse_speculative_config(json_text) -> dict``.

Sources for every knob: ENGINES.md of the project's references (vLLM ``SpeculativeConfig``, SGLang ``SGLANG_SIMULATE_ACC_*``, TensorRT-LLM
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


# Every knob name each engine reads for synthetic acceptance (value knob first).
# Sources: ENGINES.md §1.1 (vLLM), §2 (SGLang), §3 (TensorRT-LLM), §4.1 (ATOM).
KNOB_NAMES = {
    "vllm": ("synthetic_acceptance_length", "synthetic_acceptance_rates",
             "synthetic_acceptance_rate", "rejection_sample_method"),
    "sglang": ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD",
               "SGLANG_SIMULATE_ACC_TOKEN_MODE"),
    "trtllm": ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",),
    "atom": ("--spec-decode-acceptance-length", "--spec-decode-acceptance-rate"),
}


def read_settings(path, text=None):
    """Every speculative-decoding setting in one serve config file.

    Parameters
    ----------
    path : str or os.PathLike
        The file (an srt-slurm recipe, a vLLM ``--config`` YAML/JSON, a
        TensorRT-LLM extra-LLM-API YAML ...).
    text : str, optional
        The file's content, when already read.

    Returns
    -------
    list of goldenal.engines.base.SpecSetting
        One record per worker role and engine, in file order; empty when the
        file configures no speculative decoding.

    Raises
    ------
    goldenal.errors.ParseError
        The file is not valid YAML/JSON, or a speculative-config JSON string
        does not parse (``path`` and ``line`` set).
    """
    from goldenal.engines.locate import read_settings as _read

    return _read(path, text)


def adapter(engine):
    """The adapter object of one engine (imports its module on first use)."""
    found = _ADAPTERS.get(engine)
    if found is None:
        import importlib

        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
        found = _ADAPTERS[engine] = importlib.import_module(f"goldenal.engines.{engine}").ADAPTER
    return found


_ADAPTERS = {}
