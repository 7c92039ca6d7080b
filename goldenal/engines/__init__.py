"""Engine adapters: how each serving engine spells the golden AL.

Each engine is one module, ``goldenal/engines/<engine>.py``, holding its
``RECORD`` and its ``ADAPTER``; :data:`MODULES` in :mod:`goldenal.engines.knobs`
is the one registry, and the tables (``KNOBS``, ``KNOB_NAMES``, ``knob_value``,
``env_assignment``...) are derived from it.  ``adapter(engine)`` converts,
renders, plans edits and reads back; :mod:`goldenal.engines.table` holds every
knob's spellings in recipe text.
"""

from goldenal.engines.knobs import (  # noqa: F401 (the public table, re-exported)
    ENGINES, KNOB_NAMES, KNOBS, MODULES, RUNNER_VARIABLE, acceptance_rate, adapter, add_decimal,
    env_assignment, knob_value, record)


def read_settings(path, text=None):
    """Every speculative-decoding setting of one file (SpecSetting), in file order."""
    from goldenal.engines.locate import read_settings as _read

    return _read(path, text)
