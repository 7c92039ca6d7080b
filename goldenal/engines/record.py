"""The shape of an engine's record: every fact goldenal knows about one serving engine.

Each engine module (``goldenal/engines/<engine>.py``) holds one :class:`Engine`
as ``RECORD``; the knob tables, the recipe spellings, the audit's prefilter,
``measure``'s transport and the readers' field and metric names are derived
from the five records, so a fact is written once, next to the upstream
release it was checked against.

Standard library only and no dataclasses: ``goldenal lookup`` reads records.
"""


class Engine:
    """One serving engine, as its pinned upstream release behaves.

    Attributes
    ----------
    name, title : str
        The id goldenal uses (``"trtllm"``) and the name people write (``"TensorRT-LLM"``).
    release : str
        The upstream release (or commit) every fact below was checked against.
    value_knob : str
        The knob that carries the golden value.
    unit : {"length", "accepted"}
        What the value knob counts: the AL itself, or accepted drafts (AL - 1).
    env_knob : str or None
        The environment name that carries the value knob, when the engine reads one.
    knobs : tuple of str
        Every knob name the engine reads for synthetic acceptance, the value knob first.
    spellings : tuple
        ``(name, setting, form)`` or ``(name, setting, form, key_separators)``:
        how recipe text spells each knob and spec setting (:mod:`goldenal.recipes.knobs`).
    launches : tuple
        ``(word, regex)``: the commands that start the engine's server; ``word`` is a
        substring every match holds.
    launch_word : str
        The words a launch line is recognised by when inserting a knob.
    aliases : tuple of str
        Other names recipes give the engine (``"dynamo-trt"``, ``"llama.cpp"``).
    server_owner : str
        ``owned_by`` in the server's ``/v1/models`` answer.
    info_endpoints : tuple of str
        Endpoints that describe a running server's configuration.
    metrics : dict
        Prometheus family names by meaning (``"accepted"``, ``"drafts"``, ...).
    request_fields : dict
        Fields added to a request so the answer carries per-request counts.
    silent_paths : str
        The ways a set knob is silently not applied (docs/engines.md §6).
    selects_variant : bool
        Whether a setting selects the draft head's sampling variant (ATOM's DSpark
        path takes none, docs/engines.md §4.1).
    """

    def __init__(self, *, name, title, release, value_knob, unit="length", env_knob=None,
                 knobs=(), spellings=(), launches=(), launch_word, aliases=(), server_owner=None,
                 info_endpoints=(), metrics=None, request_fields=None, silent_paths="",
                 selects_variant=True):
        if unit not in ("length", "accepted"):
            raise ValueError(f"`unit` must be length or accepted, got {unit!r}")
        self.name, self.title, self.release = name, title, release
        self.value_knob, self.unit, self.env_knob = value_knob, unit, env_knob
        self.knobs = tuple(knobs) or (value_knob,)
        if self.knobs[0] != value_knob:
            raise ValueError(f"{name}: the value knob must come first in `knobs`")
        self.spellings, self.launches, self.launch_word = tuple(spellings), tuple(launches), launch_word
        self.aliases, self.server_owner = tuple(aliases), server_owner or name
        self.info_endpoints = tuple(info_endpoints)
        self.metrics, self.request_fields = dict(metrics or {}), dict(request_fields or {})
        self.silent_paths, self.selects_variant = silent_paths, selects_variant

    @property
    def offset(self):
        """What is added to the AL to give the value knob (-1 for accepted drafts)."""
        return -1 if self.unit == "accepted" else 0

    def __repr__(self):
        return f"Engine({self.name!r}, {self.value_knob!r}, release={self.release!r})"
