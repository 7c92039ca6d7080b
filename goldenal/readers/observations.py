"""Result objects of ingestion: :class:`Observations`, :class:`Problem`, :class:`CellSummary`.

Counts are pooled, never ratios averaged (docs/formats.md §9, rule 2): a cell's
AL is ``1 + sum(accepted) / sum(drafts)`` over the windows that have counts.
Windows that carry only a printed mean are kept apart and reported as such.
"""

from dataclasses import FrozenInstanceError, dataclass, field
from functools import reduce
from itertools import chain, groupby, repeat
from operator import add, attrgetter, itemgetter

from goldenal.core.errors import printable
from goldenal.core.observation import Observation

COLUMNS = ("source", "line", "line_end", "engine", "format", "k", "drafts", "draft_tokens",
           "accepted", "accepted_per_position", "mean_al", "timestamp", "request", "thinking")


@dataclass(frozen=True)
class Problem:
    """A window a reader refused (the result is then incomplete), or a remark."""

    path: str
    line: int | None
    message: str
    refused: bool = True

    def __str__(self):
        where = self.path + (f":{self.line}" if self.line else "")
        return printable(f"{where}: {self.message}")


@dataclass(frozen=True)
class ServerStart:
    """A server's speculative settings as its log states them at start-up (the readers'
    ``server_start`` fact), in no engine's names: what ``verify`` and a run's checks compare."""

    line: int
    k: int | None = None
    k_name: str = "K"           # the engine's name of K, for messages
    method: str | None = None
    draft: str | None = None
    variant: dict = field(default_factory=dict)
    synthetic: bool = False     # the synthetic-acceptance verifier is in place
    knob: object = None         # the synthetic knob's value as stated
    pinned: float | None = None     # the AL that value pins
    stated: str = ""            # how the log states the knob, for messages
    off: str = ""               # why the settings stated mean no synthetic acceptance


@dataclass(frozen=True)
class SourceInfo:
    """What a reader learned about one source besides its windows."""

    path: str
    reader: str
    windows: int
    facts: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CellSummary:
    """Pooled totals of one cell (one source and K, or one run cell)."""

    cell: tuple
    engine: str
    formats: tuple
    k: int | None
    windows: int
    counted_windows: int
    steps: int
    draft_tokens: int | None
    accepted: int
    accepted_per_position: tuple | None
    mean_only_windows: int
    mean_of_means: float | None

    @property
    def acceptance_length(self):
        """Pooled AL, ``1 + accepted / steps``; None without counted steps."""
        return 1.0 + self.accepted / self.steps if self.steps else None

    @property
    def survival(self):
        """Per-position survival ``c_i / N`` pooled over windows with per-position counts."""
        if not self.accepted_per_position or not self.steps:
            return None
        return tuple(c / self.steps for c in self.accepted_per_position)

    def to_dict(self):
        al = self.acceptance_length
        return {"cell": "/".join(str(c) for c in self.cell), "engine": self.engine,
                "format": ",".join(self.formats), "k": self.k, "windows": self.windows,
                "steps": self.steps, "accepted": self.accepted,
                "draft_tokens": self.draft_tokens,
                "al": None if al is None else round(al, 4),
                "mean_only_windows": self.mean_only_windows,
                "mean_of_means": None if self.mean_of_means is None
                else round(self.mean_of_means, 4)}


class Summarizer:
    """Running per-cell totals: add observations one at a time, in constant memory."""

    def __init__(self, key):
        self.key = key
        self.cells = {}

    def add(self, obs):
        cell = self.key(obs)
        totals = self.cells.get(cell)
        if totals is None:
            totals = self.cells[cell] = _Totals()
        totals.add_rows((as_row(obs),))

    def result(self):
        return tuple(totals.result(cell) for cell, totals in self.cells.items())


def _position_sums(positions):
    """Column sums of per-position count tuples, shorter tuples padded with zeros."""
    width = max(map(len, positions))
    if min(map(len, positions)) == width:
        # one getter per column: no per-window iterator objects for the collector
        return tuple(sum(map(itemgetter(i), positions)) for i in range(width))
    acc = [0] * width
    for pos in positions:
        for i, c in enumerate(pos):
            acc[i] += c
    return tuple(acc)


@dataclass(frozen=True)
class Summary:
    """Per-cell summaries, iterable; ``.to_frame()`` for a table."""

    cells: tuple

    def __iter__(self):
        return iter(self.cells)

    def __len__(self):
        return len(self.cells)

    def __getitem__(self, index):
        return self.cells[index]

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([c.to_dict() for c in self.cells])


FIELDS = tuple(Observation.__dataclass_fields__)
# a window as a plain tuple of its Observation fields, in FIELDS order
_SOURCE, _LINE, _ENGINE, _FORMAT, _K, _DRAFTS, _TOKENS, _ACCEPTED, _POS, _MEAN = range(10)
_THINKING = FIELDS.index("thinking")
_EXTRA = FIELDS.index("extra")
_fields = attrgetter(*FIELDS[:-1])
_new = object.__new__


def as_row(obs):
    """The row of one :class:`Observation`: its fields in :data:`FIELDS` order.

    ``extra`` is flat, ``(key, value, ...)``: a tuple holding no dict or tuple is
    untracked by the garbage collector, which a large log's rows must be.
    """
    return _fields(obs) + (tuple(chain.from_iterable(obs.extra.items())),)


def make_observation(row):
    """The :class:`Observation` of one row (see :func:`as_row`); ``extra`` a new dict."""
    # built in place: a frozen dataclass's __init__ sets each field through
    # object.__setattr__, several times the cost
    obs = _new(Observation)
    d = obs.__dict__
    d.update(zip(FIELDS, row))
    flat = iter(row[_EXTRA])
    d["extra"] = dict(zip(flat, flat))
    return obs


class Columns:
    """A run of counted windows of one source, engine, format and K, as int64 arrays.

    Rows are built only when iterated; ``timestamp``: ``MMDDhhmmss`` or None; a
    window's ``extra`` is ``extras[extra_code[i]]``.
    """

    __slots__ = ("source", "engine", "format", "k", "line", "drafts", "draft_tokens",
                 "accepted", "per_position", "mean_al", "timestamp", "extra_code", "extras")

    def __init__(self, source, engine, format, k, line, drafts, draft_tokens, accepted,
                 per_position, mean_al, timestamp, extra_code, extras):
        self.source, self.engine, self.format, self.k = source, engine, format, k
        self.line, self.drafts, self.draft_tokens = line, drafts, draft_tokens
        self.accepted, self.per_position, self.mean_al = accepted, per_position, mean_al
        self.timestamp, self.extra_code, self.extras = timestamp, extra_code, extras

    def __len__(self):
        return len(self.line)

    @property
    def template(self):
        """A row with the fields every window of the part shares, None elsewhere."""
        row = [None] * len(FIELDS)
        row[_SOURCE], row[_ENGINE], row[_FORMAT], row[_K] = \
            self.source, self.engine, self.format, self.k
        return tuple(row)

    def rows(self):
        """The windows as rows, :data:`FIELDS` order, with plain Python values."""
        n = len(self)
        stamps = repeat(None, n) if self.timestamp is None else _stamps(self.timestamp)
        extras = map(self.extras.__getitem__, self.extra_code.tolist())
        return list(zip(repeat(self.source, n), self.line.tolist(), repeat(self.engine),
                        repeat(self.format), repeat(self.k), self.drafts.tolist(),
                        self.draft_tokens.tolist(), self.accepted.tolist(),
                        map(tuple, self.per_position.tolist()), self.mean_al.tolist(),
                        repeat(None), stamps, repeat(None), repeat(None), extras))


def summarize_parts(parts, by=(_SOURCE, _K)):
    """Pooled :class:`CellSummary` per cell (the row positions ``by``) of parts, the
    totals :class:`Summarizer` adds, column-wise with no Python step per window."""
    groups = {}
    get = itemgetter(*by)
    for part in parts:
        if isinstance(part, Columns):
            cell = get(part.template)
            groups.setdefault(cell, []).append(part)
            continue
        if not part:
            continue
        if len(set(map(get, part))) == 1:  # one cell (one large file, one K)
            groups.setdefault(get(part[0]), []).append(part)
            continue
        for cell, run in groupby(part, get):
            groups.setdefault(cell, []).append(list(run))
    return tuple(_pool_parts(cell, members) for cell, members in groups.items())


class _Totals:
    """Running totals of one cell, in window order: the one pooling rule (mean-only
    windows go to ``mean_of_means``; per-position sums only while every window has them)."""

    def __init__(self):
        self.engines, self.formats, self.ks = set(), set(), set()
        self.windows = self.counted = self.steps = self.accepted = self.tokens = 0
        self.tokens_known = self.per_pos_ok = True
        self.per_position = []
        self.means, self.n_means = 0.0, 0

    def add_rows(self, members):
        self.windows += len(members)
        self.engines.update(map(itemgetter(_ENGINE), members))
        self.formats.update(map(itemgetter(_FORMAT), members))
        self.ks.update(map(itemgetter(_K), members))
        counted = [r for r in members if r[_DRAFTS] and r[_ACCEPTED] is not None]
        if counted:
            self.counted += len(counted)
            # one getter per column (zip(*rows) would make an iterator per window for
            # the collector); reduce(add) adds in order exactly as the running totals do
            self.steps = reduce(add, map(itemgetter(_DRAFTS), counted), self.steps)
            self.accepted = reduce(add, map(itemgetter(_ACCEPTED), counted), self.accepted)
            tokens = list(map(itemgetter(_TOKENS), counted))
            if None in tokens:
                self.tokens_known = False
            else:
                self.tokens = reduce(add, tokens, self.tokens)
            positions = list(map(itemgetter(_POS), counted))
            if all(positions):
                self._add_positions(_position_sums(positions))
            else:
                self.per_pos_ok = False
        if len(counted) < len(members):
            for r in members:
                if not (r[_DRAFTS] and r[_ACCEPTED] is not None) and r[_MEAN] is not None:
                    self.means += r[_MEAN]  # in order, as the running totals add them
                    self.n_means += 1

    def add_columns(self, part):
        # every window of a Columns part has counts, drafts > 0 and K positions
        n = len(part)
        self.windows += n
        self.counted += n
        self.engines.add(part.engine)
        self.formats.add(part.format)
        self.ks.add(part.k)
        self.steps += int(part.drafts.sum())
        self.accepted += int(part.accepted.sum())
        self.tokens += int(part.draft_tokens.sum())
        self._add_positions(part.per_position.sum(axis=0).tolist())

    def _add_positions(self, sums):
        acc = self.per_position
        acc.extend([0] * (len(sums) - len(acc)))
        for i, c in enumerate(sums):
            acc[i] += c

    def result(self, cell):
        ks = self.ks - {None}
        counted = self.counted
        return CellSummary(
            cell=cell, engine=",".join(sorted(self.engines)),
            formats=tuple(sorted(self.formats)), k=next(iter(ks)) if len(ks) == 1 else None,
            windows=self.windows, counted_windows=counted, steps=self.steps,
            draft_tokens=self.tokens if counted and self.tokens_known else None,
            accepted=self.accepted,
            accepted_per_position=tuple(self.per_position) if counted and self.per_pos_ok
            else None,
            mean_only_windows=self.windows - counted,
            mean_of_means=self.means / self.n_means if self.n_means else None)


def _stamps(numbers):
    """``MM-DD hh:mm:ss`` strings of ``MMDDhhmmss`` numbers, formatted column-wise."""
    import numpy as np

    digits = numbers[:, None] // 10 ** np.arange(9, -1, -1, dtype=np.int64) % 10 + ord("0")
    text = np.empty((len(numbers), 14), np.uint8)
    text[:, [0, 1, 3, 4, 6, 7, 9, 10, 12, 13]] = digits
    text[:, 2], text[:, 5], text[:, [8, 11]] = ord("-"), ord(" "), ord(":")
    return text.view("S14").ravel().astype("U14").tolist()


def _pool_parts(cell, members):
    totals = _Totals()
    for part in members:
        if isinstance(part, Columns):
            totals.add_columns(part)
        else:
            totals.add_rows(part)
    return totals.result(cell)


class Observations:
    """Immutable, iterable result of :func:`goldenal.readers.ingest`.

    Windows are kept as rows and become :class:`Observation` records only when
    iterated or indexed, so a large log costs no object per window.

    Parameters
    ----------
    items : iterable of Observation
        One per measurement window, in file order.
    problems : tuple of Problem
        Refused windows (then ``complete`` is False) and remarks.
    sources : tuple of SourceInfo
        One per file (or before/after pair) read.
    """

    __slots__ = ("_parts", "_materialized", "problems", "sources")

    def __init__(self, items=(), problems=(), sources=()):
        self._init((tuple(map(as_row, items)),), problems, sources)

    def _init(self, parts, problems, sources):
        _set = object.__setattr__
        _set(self, "_parts", parts)
        _set(self, "_materialized", None)
        _set(self, "problems", problems)
        _set(self, "sources", sources)

    @classmethod
    def from_rows(cls, rows, problems=(), sources=()):
        """Observations over rows of field values (:data:`FIELDS` order), taken as they are."""
        return cls.from_parts((rows,), problems, sources)

    @classmethod
    def from_parts(cls, parts, problems=(), sources=()):
        """Observations over parts in window order: lists of rows and :class:`Columns`."""
        self = object.__new__(cls)
        self._init(tuple(parts), problems, sources)
        return self

    @property
    def _rows(self):
        """Every window as a row, built from :class:`Columns` parts on first use."""
        rows = self._materialized
        if rows is None:
            parts = self._parts
            if len(parts) == 1 and not isinstance(parts[0], Columns):
                rows = parts[0]
            else:
                rows = []
                for part in parts:
                    rows.extend(part.rows() if isinstance(part, Columns) else part)
            object.__setattr__(self, "_materialized", rows)
        return rows

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (Observations.from_rows, (tuple(self._rows), self.problems, self.sources))

    def _key(self):
        # Observation equality leaves out ``extra``
        return tuple(r[:-1] for r in self._rows), self.problems, self.sources

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    @property
    def items(self):
        """One :class:`Observation` per measurement window, in file order (a new tuple)."""
        return tuple(map(make_observation, self._rows))

    def __iter__(self):
        return map(make_observation, self._rows)

    def __len__(self):
        return sum(map(len, self._parts))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(map(make_observation, self._rows[index]))
        return make_observation(self._rows[index])

    def __repr__(self):
        state = "complete" if self.complete else f"INCOMPLETE, {self.refused} refused"
        return (f"<Observations: {len(self)} windows from {len(self.sources)} "
                f"source(s), {state}>")

    @property
    def refused(self):
        """Number of windows refused (bad lines, resets, contradictions)."""
        return sum(1 for p in self.problems if p.refused)

    @property
    def complete(self):
        """False when any window was refused: the totals are partial."""
        return self.refused == 0

    def summary(self, by="source"):
        """Pooled AL per cell.

        Parameters
        ----------
        by : {"source", "run"}
            ``"source"`` groups by file and K; ``"run"`` by thinking mode and K.
        """
        return Summary(summarize_parts(self._parts, (_THINKING, _K) if by == "run"
                                       else (_SOURCE, _K)))

    def to_frame(self):
        """One row per window; counts as nullable integers."""
        import pandas as pd

        frame = pd.DataFrame.from_records(self._rows, columns=list(FIELDS), nrows=len(self._rows))
        frame = frame[list(COLUMNS)]
        for c in ("line", "line_end", "k", "drafts", "draft_tokens", "accepted"):
            frame[c] = frame[c].astype("Int64")
        frame["acceptance_length"] = [1.0 + r[_ACCEPTED] / r[_DRAFTS]
                                      if r[_DRAFTS] and r[_ACCEPTED] is not None else r[_MEAN]
                                      for r in self._rows]
        return frame

    def filter(self, **criteria):
        """Observations whose attributes equal the given values, e.g. ``k=3``."""
        keep = tuple(r for r, o in zip(self._rows, self)
                     if all(getattr(o, name) == value for name, value in criteria.items()))
        return Observations.from_rows(keep, self.problems, self.sources)


def as_dict(obs: Observation):
    """The JSON record of one observation (the ``ingest --format jsonl`` keys)."""
    return {"source": obs.source, "line": obs.line, "engine": obs.engine,
            "format": obs.format, "k": obs.k, "drafts": obs.drafts,
            "draft_tokens": obs.draft_tokens, "accepted": obs.accepted,
            "accepted_per_position": None if obs.accepted_per_position is None
            else list(obs.accepted_per_position),
            "mean_al": obs.mean_al}
