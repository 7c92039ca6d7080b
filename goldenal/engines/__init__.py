"""Engine adapters: how each serving engine spells the golden AL.

One module per engine (``RECORD`` and ``ADAPTER``); :mod:`goldenal.engines.knobs`
is the registry the tables derive from.
"""

from goldenal.engines.knobs import (  # noqa: F401 (the public table, re-exported)
    ENGINES, KNOB_NAMES, KNOBS, MODULES, RUNNER_VARIABLE, acceptance_rate, adapter, add_decimal,
    env_assignment, knob_value, record)


def read_settings(path, text=None):
    """Every speculative-decoding setting of one file (SpecSetting), in file order."""
    from goldenal.engines.locate import read_settings as _read

    return _read(path, text)
