"""Result objects of ingestion: :class:`Observations`, :class:`Problem`, :class:`CellSummary`.

Counts are pooled, never ratios averaged (FORMATS.md, general rule 2): a cell's
AL is ``1 + sum(accepted) / sum(drafts)`` over the windows that have counts.
Windows that carry only a printed mean are kept apart and reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from goldenal.observation import Observation

COLUMNS = ("source", "line", "line_end", "engine", "format", "k", "drafts", "draft_tokens",
           "accepted", "accepted_per_position", "mean_al", "timestamp", "request", "thinking")


@dataclass(frozen=True)
class Problem:
    """A window a reader refused (``refused=True``) or a remark about a source.

    A refused window makes the result incomplete; a remark does not.
    """

    path: str
    line: int | None
    message: str
    refused: bool = True

    def __str__(self):
        where = self.path + (f":{self.line}" if self.line else "")
        return f"{where}: {self.message}"


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
        cell = self.cells.get(self.key(obs))
        if cell is None:
            cell = self.cells[self.key(obs)] = {
                "engines": set(), "formats": set(), "ks": set(), "windows": 0, "counted": 0,
                "steps": 0, "accepted": 0, "tokens": 0, "tokens_known": True, "per_pos": [],
                "per_pos_ok": True, "means": 0.0, "n_means": 0}
        cell["engines"].add(obs.engine)
        cell["formats"].add(obs.format)
        if obs.k is not None:
            cell["ks"].add(obs.k)
        cell["windows"] += 1
        if not obs.mean_only and obs.drafts:
            cell["counted"] += 1
            cell["steps"] += obs.drafts
            cell["accepted"] += obs.accepted
            if obs.draft_tokens is None:
                cell["tokens_known"] = False
            else:
                cell["tokens"] += obs.draft_tokens
            pos = obs.accepted_per_position
            if not pos:
                cell["per_pos_ok"] = False
            else:
                acc = cell["per_pos"]
                acc.extend([0] * (len(pos) - len(acc)))
                for i, c in enumerate(pos):
                    acc[i] += c
        elif obs.mean_al is not None:
            cell["means"] += obs.mean_al
            cell["n_means"] += 1

    def result(self):
        out = []
        for key, c in self.cells.items():
            ks = c["ks"]
            out.append(CellSummary(
                cell=key, engine=",".join(sorted(c["engines"])),
                formats=tuple(sorted(c["formats"])), k=next(iter(ks)) if len(ks) == 1 else None,
                windows=c["windows"], counted_windows=c["counted"], steps=c["steps"],
                draft_tokens=c["tokens"] if c["counted"] and c["tokens_known"] else None,
                accepted=c["accepted"],
                accepted_per_position=tuple(c["per_pos"]) if c["counted"] and c["per_pos_ok"]
                else None,
                mean_only_windows=c["windows"] - c["counted"],
                mean_of_means=c["means"] / c["n_means"] if c["n_means"] else None))
        return tuple(out)


def summarize(observations, key, attrs=None):
    """Pool observations into :class:`CellSummary` rows grouped by ``key(obs)``.

    The same totals as :class:`Summarizer`, faster on the hundreds of
    thousands of windows of a large log: each window is touched once (they are
    scattered in memory), and ``attrs`` -- the attribute names whose values
    ``key`` returns as a tuple, e.g. ``("source", "k")`` -- lets the grouping
    make a key only where the cell changes instead of a tuple per window.
    """
    groups = {}
    if attrs:
        getters = [attrgetter(a) for a in attrs]
        current, members = None, None
        for o in observations:
            values = [g(o) for g in getters] if len(getters) != 2 else None
            if values is None:
                first, second = getters[0](o), getters[1](o)
                if current is not None and first == current[0] and second == current[1]:
                    members.append(o)
                    continue
                current = (first, second)
            else:
                current = tuple(values)
            members = groups.get(current)
            if members is None:
                members = groups[current] = []
            members.append(o)
    else:
        for o in observations:
            cell = key(o)
            members = groups.get(cell)
            if members is None:
                members = groups[cell] = []
            members.append(o)
    return tuple(_pool(cell, members) for cell, members in groups.items())


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


def _pool(cell, members):
    engines, formats, ks = set(), set(), set()
    counted = steps = accepted = tokens = n_means = 0
    tokens_known = per_pos_ok = True
    positions = []
    means = 0.0
    for o in members:
        engines.add(o.engine)
        formats.add(o.format)
        k = o.k
        if k is not None:
            ks.add(k)
        drafts, acc = o.drafts, o.accepted
        if drafts and acc is not None:
            counted += 1
            steps += drafts
            accepted += acc
            t = o.draft_tokens
            if t is None:
                tokens_known = False
            else:
                tokens += t
            pos = o.accepted_per_position
            if pos:
                positions.append(pos)
            else:
                per_pos_ok = False
        else:
            mean = o.mean_al
            if mean is not None:
                means += mean  # in order, as the running totals add them
                n_means += 1
    return CellSummary(
        cell=cell, engine=",".join(sorted(engines)), formats=tuple(sorted(formats)),
        k=next(iter(ks)) if len(ks) == 1 else None, windows=len(members),
        counted_windows=counted, steps=steps,
        draft_tokens=tokens if counted and tokens_known else None, accepted=accepted,
        accepted_per_position=_position_sums(positions) if counted and per_pos_ok else None,
        mean_only_windows=len(members) - counted,
        mean_of_means=means / n_means if n_means else None)


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


@dataclass(frozen=True)
class Observations:
    """Immutable, iterable result of :func:`goldenal.readers.ingest`.

    Attributes
    ----------
    items : tuple of Observation
        One per measurement window, in file order.
    problems : tuple of Problem
        Refused windows (then ``complete`` is False) and remarks.
    sources : tuple of SourceInfo
        One per file (or before/after pair) read.
    """

    items: tuple
    problems: tuple = ()
    sources: tuple = ()

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __repr__(self):
        state = "complete" if self.complete else f"INCOMPLETE, {self.refused} refused"
        return (f"<Observations: {len(self.items)} windows from {len(self.sources)} "
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
        attrs = ("thinking", "k") if by == "run" else ("source", "k")
        return Summary(summarize(self.items, attrgetter(*attrs), attrs))

    def to_frame(self):
        """One row per window; counts as nullable integers."""
        import pandas as pd

        rows = [{c: getattr(o, c) for c in COLUMNS} for o in self.items]
        frame = pd.DataFrame(rows, columns=list(COLUMNS))
        for c in ("line", "line_end", "k", "drafts", "draft_tokens", "accepted"):
            frame[c] = frame[c].astype("Int64")
        frame["acceptance_length"] = [o.acceptance_length for o in self.items]
        return frame

    def filter(self, **criteria):
        """Observations whose attributes equal the given values, e.g. ``k=3``."""
        keep = tuple(o for o in self.items
                     if all(getattr(o, name) == value for name, value in criteria.items()))
        return Observations(keep, self.problems, self.sources)


def as_dict(obs: Observation):
    """The JSON record of one observation (the ``ingest --format jsonl`` keys)."""
    return {"source": obs.source, "line": obs.line, "engine": obs.engine,
            "format": obs.format, "k": obs.k, "drafts": obs.drafts,
            "draft_tokens": obs.draft_tokens, "accepted": obs.accepted,
            "accepted_per_position": None if obs.accepted_per_position is None
            else list(obs.accepted_per_position),
            "mean_al": obs.mean_al}
