"""The one registry of engines and the knob tables derived from their records; standard
library only at import, as ``goldenal lookup`` converts its value through it."""

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
    """The engine's knob value for a committed AL string, as every writer and the audit use it."""
    return adapter(engine).convert(al_text, k=k, form=form)


def adapter(engine):
    """The adapter object of one engine."""
    return MODULES[record(engine).name].ADAPTER


def env_assignment(engine, al_text):
    """``NAME=value`` for the engine's environment knob, or the runner's variable."""
    env_knob = record(engine).env_knob if engine is not None else None
    if env_knob:
        return f"{env_knob}={knob_value(engine, al_text)}"
    return f"{RUNNER_VARIABLE}={al_text}"
