"""Engine adapters: how each serving engine spells the golden AL.

This module holds only the light, table-driven part that ``goldenal lookup``
needs (no heavy imports); the per-engine modules add rendering, rewriting and
reading back.

Public API (stable):

- ``ENGINES``, ``KNOBS`` (engine -> (value knob, offset)), ``KNOB_NAMES``
  (engine -> every knob name it reads), ``add_decimal``, ``knob_value``,
  ``acceptance_rate``,
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

Sources for every knob: docs/engines.md §1-§5 (vLLM ``SpeculativeConfig``, SGLang
``SGLANG_SIMULATE_ACC_*``, TensorRT-LLM ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``,
ATOM ``--spec-decode-*``, llama.cpp ``--spec-synth-len`` / ``--spec-synth-rates``).
"""

from goldenal.engines.knobs import (  # noqa: F401 (the public table, re-exported)
    ENGINES, KNOB_NAMES, KNOBS, RUNNER_VARIABLE, acceptance_rate, add_decimal, env_assignment,
    knob_value)


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
    goldenal.core.errors.ParseError
        The file is not valid YAML/JSON, or a speculative-config JSON string
        does not parse (``path`` and ``line`` set).
    """
    from goldenal.engines.locate import read_settings as _read

    return _read(path, text)


def adapter(engine):
    """The adapter object of one engine (imports its module on first use)."""
    from goldenal.engines.base import adapter as _adapter

    return _adapter(engine)
