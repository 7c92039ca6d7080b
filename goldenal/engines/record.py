"""Every fact goldenal knows about one serving engine, written once beside the release
it was checked against.  Standard library only (``goldenal lookup`` reads records)."""


class Engine:
    """One serving engine, as its pinned upstream ``release`` behaves; the fields are
    described in docs/architecture.md, "Adding an engine"."""

    def __init__(self, *, name, title, release, value_knob, unit="length", env_knob=None,
                 knobs=(), spellings=(), launches=(), launch_word, aliases=(), server_owner=None,
                 k_ranks=None, sample_keys=(), spec_config=(), draft_keys=(), spec_words=(),
                 positional_model=False, config_file=False,
                 info_endpoints=(), metrics=None, request_fields=None, count_fields=None,
                 log_lines=None,
                 silent_paths="", transport="stream", old_metrics=None, counter_digits=None,
                 per_position_grows=False, info_keys=(), version_key="version",
                 slots_endpoint=None, slot_fields=(), k_keys=(), batch_draw=False, log_steps=None,
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
        self.k_ranks, self.sample_keys = dict(k_ranks or {}), tuple(sample_keys)
        self.spec_config, self.draft_keys = tuple(spec_config), tuple(draft_keys)
        self.spec_words, self.positional_model = tuple(spec_words), positional_model
        self.config_file = config_file
        self.info_endpoints = tuple(info_endpoints)
        self.metrics, self.request_fields = dict(metrics or {}), dict(request_fields or {})
        self.count_fields, self.log_lines = ({key: tuple(names) for key, names in (d or {}).items()}
                                             for d in (count_fields, log_lines))
        self.silent_paths = silent_paths
        if transport not in ("stream", "complete"):
            raise ValueError(f"`transport` must be stream or complete, got {transport!r}")
        self.transport, self.old_metrics = transport, dict(old_metrics or {})
        self.counter_digits, self.per_position_grows = counter_digits, per_position_grows
        self.info_keys, self.version_key = tuple(info_keys), version_key
        self.slots_endpoint, self.slot_fields = slots_endpoint, tuple(slot_fields)
        self.k_keys = tuple(k_keys)
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
