"""The shared shape of every engine adapter, and the read-back record.

A :class:`SpecSetting` is one place in a file where an engine's speculative
decoding is configured: the synthetic-acceptance knob (when present) and the
settings around it (K, draft head, method, sampling variant).  Readers yield
one record per worker role, so a disaggregated recipe gives one for prefill
and one for decode.

Stable API (also used by ``goldenal audit``):

- :class:`SpecSetting` (frozen dataclass);
- :func:`adapter` ``(engine) -> EngineAdapter``;
- :func:`goldenal.engines.read_settings` ``(path, text=None) -> list[SpecSetting]``;
- :func:`goldenal.engines.vllm.parse_speculative_config` ``(json_text) -> dict``;
- the knob names per engine in :data:`goldenal.engines.KNOB_NAMES`.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SpecSetting:
    """One speculative-decoding setting found in a file.

    Attributes
    ----------
    path : str
        File the setting was read from.
    line, col : int
        1-based position of the knob, or of the spec config when no knob is set.
    engine : str
        ``"vllm"``, ``"sglang"``, ``"trtllm"``, ``"atom"`` or ``"llamacpp"``.
    role : str or None
        ``"aggregated"``, ``"prefill"``, ``"decode"``, or None when the file
        has no worker roles.
    knob : str or None
        Name of the synthetic-acceptance knob found (e.g.
        ``"synthetic_acceptance_length"``, ``"SGLANG_SIMULATE_ACC_LEN"``),
        None when none is set.
    value : str or None
        The knob's value exactly as written (without quotes).
    k : int or None
        Drafted tokens per step as configured, None when the file omits it.
    draft : str or None
        Draft head (HF id or path) when named, None for native MTP or unknown.
    method : str or None
        Speculative method as written (``eagle3``, ``mtp``, ``EAGLE``, ...).
    variant : dict
        Sampling-variant settings (``draft_sample_method`` ...) that name a curve.
    rejection_sample_method : str or None
        vLLM's ``rejection_sample_method``; None elsewhere.
    model : str or None
        Served model path or id when the file names it.
    extra : dict
        Engine-specific companions (e.g. SGLang ``SGLANG_SIMULATE_ACC_METHOD``,
        vLLM ``synthetic_acceptance_rates``, TensorRT-LLM
        ``num_nextn_predict_layers``); ``section`` names the variant section of a
        multi-variant recipe (``"base"``, ``"zip_override_..."``).
    """

    path: str
    line: int
    col: int
    engine: str
    role: "str | None" = None
    knob: "str | None" = None
    value: "str | None" = None
    k: "int | None" = None
    draft: "str | None" = None
    method: "str | None" = None
    variant: dict = field(default_factory=dict)
    rejection_sample_method: "str | None" = None
    model: "str | None" = None
    extra: dict = field(default_factory=dict)


# -- the adapter interface ----------------------------------------------------

FORMATS = ("shell", "env", "json", "yaml", "args")


@dataclass(frozen=True)
class Plan:
    """What writing one site needs: the edits and what they change.

    ``changes`` lists ``(knob, old, new)`` for every setting that differs
    (``old`` None when the setting is added); ``warnings`` are one-line notes.
    """

    edits: tuple = ()
    changes: tuple = ()
    warnings: tuple = ()


class EngineAdapter:
    """One engine's spelling of the golden AL: convert, render, rewrite, read back.

    Subclasses set ``name`` and ``knob`` and implement :meth:`convert`,
    :meth:`fragment`, :meth:`site_from_recipe` / :meth:`site_from_config`
    (reading), :meth:`setting` (the :class:`SpecSetting` of a site) and
    :meth:`plan` (the edits that make a site carry a value).
    """

    name = None
    knob = None

    def convert(self, al_text, *, k=None, form=None):
        """The knob value for a committed AL string (exact decimal arithmetic)."""
        raise NotImplementedError

    def fragment(self, al_text, *, k, fmt, **options):
        """The config fragment that carries the AL, in one output format."""
        raise NotImplementedError

    def site_from_recipe(self, doc, section, role, cfg, cfg_own, models):
        return None

    def site_from_config(self, doc, root, spec):
        raise NotImplementedError

    def setting(self, doc, site):
        raise NotImplementedError

    def plan(self, doc, site, al_text, *, k, force=False, **options):
        raise NotImplementedError


def same_number(a, b):
    """True when two decimal strings spell the same number (``2.5`` and ``2.50``)."""
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(str(a).strip()) == Decimal(str(b).strip())
    except InvalidOperation:
        return False


def check_pinned(knob, old, new, *, force, path, line):
    """Refuse to overwrite a different pinned value unless forced."""
    from goldenal.core.errors import ConflictError

    if old is None or old == new or same_number(old, new) or force:
        return
    raise ConflictError(f"{knob} is already pinned to {old}, golden value is {new}; "
                        "use --force to overwrite", path=path, line=line)


def on_both_paths(what, *, path, line):
    """The refusal of a launch ``what`` on ``line`` that runs on both sides of ``EVAL_ONLY``.

    A knob added there would be active during eval runs too (ATOM, ``llama-server``
    and ``vllm serve`` launch scripts alike).
    """
    from goldenal.core.errors import PolicyError

    return PolicyError(f"{what} on line {line} runs on both the EVAL_ONLY=true path and the "
                       "benchmark path, so a knob added there would be active during eval "
                       "runs; add it under an EVAL_ONLY guard by hand", path=path, line=line)


def adapter(engine):
    """The adapter object of one engine (imports its module on first use)."""
    found = _ADAPTERS.get(engine)
    if found is None:
        import importlib

        from goldenal.engines.knobs import ENGINES

        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
        # each adapter module imports this one: named here, imported by name
        found = _ADAPTERS[engine] = importlib.import_module(f"goldenal.engines.{engine}").ADAPTER
    return found


_ADAPTERS = {}
