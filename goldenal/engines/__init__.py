"""Engine adapters: how each serving engine spells the golden AL.

Each engine is one module, ``goldenal/engines/<engine>.py``, holding its
``RECORD`` (:class:`goldenal.engines.record.Engine`) and its ``ADAPTER``;
:data:`MODULES` in :mod:`goldenal.engines.knobs` is the one registry.  The
modules import only the standard library at load time, so ``goldenal lookup``
reads the records without the heavy parts.

Public API (stable):

- ``ENGINES``, ``MODULES``, ``record(engine)``, ``KNOBS`` (engine -> (value
  knob, offset)), ``KNOB_NAMES`` (engine -> every knob name it reads),
  ``add_decimal``, ``knob_value``, ``acceptance_rate``, ``env_assignment``;
- ``adapter(engine)`` -> :class:`goldenal.engines.base.EngineAdapter` with
  ``convert``, ``fragment``, ``plan`` (edits for one site) and ``setting``;
- ``read_settings(path, text=None)`` -> list of
  :class:`goldenal.engines.setting.SpecSetting`, one per worker role;
- the spellings of every knob in recipe text: :mod:`goldenal.engines.table`.
"""

from goldenal.engines.knobs import (  # noqa: F401 (the public table, re-exported)
    ENGINES, KNOB_NAMES, KNOBS, MODULES, RUNNER_VARIABLE, acceptance_rate, adapter, add_decimal,
    env_assignment, knob_value, record)


def read_settings(path, text=None):
    """Every speculative-decoding setting in one serve config file.

    Parameters
    ----------
    path : str or os.PathLike
        The file (an srt-slurm recipe, a serve config YAML/JSON, a launch script ...).
    text : str, optional
        The file's content, when already read.

    Returns
    -------
    list of goldenal.engines.setting.SpecSetting
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
