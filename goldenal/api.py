"""The public conveniences that need several layers at once, so no lower module reaches up.

:func:`lookup` is the registry read through the policy; :func:`adapter` an engine adapter with
``inject``'s and ``audit``'s file operations.  On the ``lookup`` hot path: stdlib imports only."""

from goldenal.engines.knobs import ENGINES
from goldenal.golden.policy import select
from goldenal.golden.registry import load_registry


def lookup(model=None, *, k, thinking, draft=None, curve=None, variant=None, engine=None,
           golden_dir=None):
    """The committed golden AL for one cell, or a refusal that names what exists.

    Parameters
    ----------
    model : str, optional
        Model key, HF id (also a quantized checkpoint a recipe serves) or
        InferenceX model prefix, case-insensitive.  Optional with ``curve``.
    k : int
        ``num_speculative_tokens``.
    thinking : {"on", "off"}
        Thinking mode served.
    draft : str, optional
        HF id of the draft head, or a local path ending in it.
    curve : str, optional
        A curve id, e.g. ``"minimaxm3_eagle3_gqa"``.
    variant : dict or str, optional
        Sampling variant, e.g. ``{"draft_sample_method": "probabilistic"}``;
        ``"none"`` selects a curve without one.
    engine : {"vllm", "sglang", "trtllm", "atom", "llamacpp"}, optional
        The engine whose knob will carry the value (TensorRT-LLM takes AL - 1).
    golden_dir : str, optional
        Another golden directory.

    Returns
    -------
    GoldenValue
        With ``engine``, its ``knob_value`` is that engine's spelling.

    Raises
    ------
    UnknownCurve
        No curve matches the model, draft or curve id.
    PolicyError
        Several curves match, or the cell is not committed (no interpolation,
        extrapolation or fallback to another head, variant or thinking mode).

    Example
    -------
    >>> str(lookup("minimax-m3", draft="Inferact/MiniMax-M3-EAGLE3", k=3, thinking="on"))
    '2.83'
    """
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"`engine` must be one of {', '.join(ENGINES)}, got {engine!r}")
    value = select(load_registry(golden_dir), model, k=k, thinking=thinking, draft=draft,
                   curve=curve, variant=variant)
    value.engine = engine
    return value


class Adapter:
    """An engine's :class:`goldenal.engines.base.EngineAdapter`, plus ``rewrite`` and ``read``."""

    __slots__ = ("_adapter",)

    def __init__(self, engine):
        from goldenal.engines import adapter as engine_adapter

        self._adapter = engine_adapter(engine)

    def __getattr__(self, name):
        return getattr(self._adapter, name)

    def __repr__(self):
        return f"<Adapter {self._adapter.name}>"

    def rewrite(self, path, **options):
        """Rewrite one file in place; see :func:`goldenal.apply.inject.inject`."""
        from goldenal.apply.inject import inject

        return inject(path, engine=self._adapter.name, **options)

    def read(self, path, text=None):
        """This engine's :class:`~goldenal.engines.base.SpecSetting` records in one file."""
        from goldenal.engines.locate import read_settings

        return [s for s in read_settings(path, text) if s.engine == self._adapter.name]


def adapter(engine):
    """One engine's :class:`Adapter`: convert, render, plan, and rewrite or read a file."""
    return Adapter(engine)
