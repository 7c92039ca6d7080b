"""Each engine's synthetic-acceptance knob and the exact conversion of a committed AL to it.

Pure data and decimal arithmetic, standard library only: ``goldenal lookup``
and :class:`goldenal.golden.policy.GoldenValue` use it without loading an adapter.
Every table here is derived from the engines' records
(:mod:`goldenal.engines.record`); how recipe text spells the knobs:
:mod:`goldenal.engines.table`.
"""

from goldenal.engines.values import (  # noqa: F401 (re-exported)
    acceptance_rate, add_decimal, carries_golden, record_value)

# The one registry of engines: adding one is adding its module here (docs/architecture.md).
from goldenal.engines import atom, llamacpp, sglang, trtllm, vllm  # noqa: E402

MODULES = {m.RECORD.name: m for m in (vllm, sglang, trtllm, atom, llamacpp)}
ENGINES = tuple(MODULES)
# engine -> (the knob that carries the value, offset added to AL): derived from the records
KNOBS = {name: (m.RECORD.value_knob, m.RECORD.offset) for name, m in MODULES.items()}
# engine -> every knob name it reads for synthetic acceptance (value knob first)
KNOB_NAMES = {name: m.RECORD.knobs for name, m in MODULES.items()}

# The variable InferenceX's runner reads when no engine is named.
RUNNER_VARIABLE = "SYNTHETIC_ACCEPTANCE_LENGTH"


def record(engine):
    """The :class:`~goldenal.engines.record.Engine` of ``engine`` (ValueError when unknown)."""
    try:
        return MODULES[engine].RECORD
    except (KeyError, TypeError):
        raise ValueError(f"unknown engine {engine!r}; expected one of "
                         f"{', '.join(MODULES)}") from None


def knob_value(engine, al_text, *, k=None, form=None):
    """The engine's knob value for a committed AL string (exact decimals).

    The one conversion every writer and the audit use
    (:func:`goldenal.engines.values.record_value`).
    """
    rec = record(engine)
    return record_value(rec, al_text, k=k, form=form, forms=MODULES[rec.name].ADAPTER.forms)


def adapter(engine):
    """The adapter object of one engine."""
    return MODULES[record(engine).name].ADAPTER


def env_assignment(engine, al_text):
    """``NAME=value`` for the engine's environment knob, or the runner's variable."""
    env_knob = record(engine).env_knob if engine is not None else None
    if env_knob:
        return f"{env_knob}={knob_value(engine, al_text)}"
    return f"{RUNNER_VARIABLE}={al_text}"
