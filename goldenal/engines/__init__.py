"""How each serving engine spells the golden AL: one module per engine (``RECORD`` and
``ADAPTER``), registered in :mod:`goldenal.engines.knobs`, which the tables derive from."""

from goldenal.engines.knobs import (  # noqa: F401 (the public table, re-exported)
    ENGINES, KNOB_NAMES, KNOBS, MODULES, RUNNER_VARIABLE, acceptance_rate, adapter, add_decimal,
    env_assignment, knob_value, record)


def read_settings(path, text=None):
    """Every speculative-decoding setting of one file (SpecSetting), in file order."""
    from goldenal.engines.locate import read_settings as _read

    return _read(path, text)
