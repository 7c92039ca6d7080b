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
    transport : {"stream", "complete"}
        How ``measure`` sends a request: streamed with usage, or whole (``request_fields``
        refused on a stream).
    old_metrics : dict
        Metric families of older releases the readers still read, by meaning.
    counter_digits : int or None
        Significant digits the server prints its counters with, when it rounds them.
    per_position_grows : bool
        The per-position family appears with the first speculative request and grows to
        the largest K run, so its size is not the server's K.
    info_keys : tuple
        What the info endpoint reports about speculative decoding: keys, or key paths
        whose last part names the value.
    version_key : str or None
        The info endpoint's key for the release.
    slots_endpoint : str or None
        The endpoint listing slots, each with a ``speculative`` flag.
    k_keys : tuple of str
        Reported settings (``info_keys`` names) that state K.
    batch_draw : bool
        One synthetic draw per batch step, shared by every request in it.
    log_steps : int or None
        Decode steps per printed mean-only log line.
    geometric_length : bool
        A bare length knob realises a geometric per-position schedule.
    selects_variant : bool
        Whether a setting selects the draft head's sampling variant (ATOM's DSpark
        path takes none, docs/engines.md §4.1).
    file_tokens : tuple of str
        Parts of a launcher's file name that name the engine (``"_trt"``).
    default_k : int or None
        K when no setting writes it.
    spec_off : {None, "refused", "dropped"}
        What the server does with a knob while speculative decoding is off: refuses
        to start, or drops the knob silently.
    releases : tuple
        ``(settings, since, until, message)``: the releases (``since`` <= version <
        ``until``, dotted text or None) that read these settings, and what an image
        outside them does (``{name}``, ``{image}`` filled in).
    matrix_args : tuple of str
        Keys of a CI-matrix entry that hold the engine's server arguments.
    """

    def __init__(self, *, name, title, release, value_knob, unit="length", env_knob=None,
                 knobs=(), spellings=(), launches=(), launch_word, aliases=(), server_owner=None,
                 info_endpoints=(), metrics=None, request_fields=None, silent_paths="",
                 transport="stream", old_metrics=None, counter_digits=None,
                 per_position_grows=False, info_keys=(), version_key="version",
                 slots_endpoint=None, k_keys=(), batch_draw=False, log_steps=None,
                 geometric_length=False, selects_variant=True, file_tokens=(), default_k=None,
                 spec_off=None, releases=(), matrix_args=()):
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
        self.silent_paths = silent_paths
        if transport not in ("stream", "complete"):
            raise ValueError(f"`transport` must be stream or complete, got {transport!r}")
        self.transport, self.old_metrics = transport, dict(old_metrics or {})
        self.counter_digits, self.per_position_grows = counter_digits, per_position_grows
        self.info_keys, self.version_key = tuple(info_keys), version_key
        self.slots_endpoint, self.k_keys = slots_endpoint, tuple(k_keys)
        self.batch_draw, self.log_steps = batch_draw, log_steps
        self.geometric_length, self.selects_variant = geometric_length, selects_variant
        self.file_tokens, self.default_k, self.spec_off = tuple(file_tokens), default_k, spec_off
        self.releases, self.matrix_args = tuple(releases), tuple(matrix_args)

    @property
    def offset(self):
        """What is added to the AL to give the value knob (-1 for accepted drafts)."""
        return -1 if self.unit == "accepted" else 0

    def knob_for(self, setting):
        """The first knob spelled as carrying ``setting`` (``"rates"``, ``"rate"``), or None."""
        return next((row[0] for row in self.spellings
                     if row[1] == setting and row[0] in self.knobs), None)

    def rows(self, setting=None, form=None):
        """The :class:`goldenal.recipes.knobs.Spelling` rows of :attr:`spellings` (filtered)."""
        from goldenal.recipes import knobs

        if "_rows" not in self.__dict__:
            self._rows = tuple(knobs.row(self.name, *spelled) for spelled in self.spellings)
        return knobs.select(self._rows, setting=setting, form=form)

    def __repr__(self):
        return f"Engine({self.name!r}, {self.value_knob!r}, release={self.release!r})"
