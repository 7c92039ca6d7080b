"""Result objects of ingestion: :class:`Observations`, :class:`Problem`, :class:`CellSummary`.

Counts are pooled, never ratios averaged (FORMATS.md, general rule 2): a cell's
AL is ``1 + sum(accepted) / sum(drafts)`` over the windows that have counts.
Windows that carry only a printed mean are kept apart and reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


def summarize(observations, key):
    """Pool observations into :class:`CellSummary` rows grouped by ``key(obs)``."""
    acc = Summarizer(key)
    for obs in observations:
        acc.add(obs)
    return acc.result()


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
        if by == "run":
            return Summary(summarize(self.items, lambda o: (o.thinking, o.k)))
        return Summary(summarize(self.items, lambda o: (o.source, o.k)))

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
