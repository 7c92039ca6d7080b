"""The one record every measurement reader yields.

A reader turns engine output into ``Observation`` records, one per
measurement window (a log interval, a scrape difference, a request, a
benchmark file).  Counts follow vLLM's definitions (docs/formats.md §0.1):

* ``drafts``: verification steps that carried drafts (N);
* ``draft_tokens``: drafted tokens (N * K for a fixed K);
* ``accepted``: accepted draft tokens, bonus token excluded;
* ``accepted_per_position``: c_1..c_K, c_i = steps whose first i drafts
  were all accepted.

So AL = 1 + accepted / drafts.  A source that prints only a mean leaves the
counts ``None`` and is *mean-only*: it is never weighted as if it had counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Observation:
    source: str
    line: int | None
    engine: str
    format: str
    k: int | None = None
    drafts: int | None = None
    draft_tokens: int | None = None
    accepted: int | None = None
    accepted_per_position: tuple[int, ...] | None = None
    mean_al: float | None = None
    line_end: int | None = None
    timestamp: str | None = None
    request: str | None = None
    thinking: str | None = None
    extra: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def mean_only(self) -> bool:
        """True when the source gave a mean but no counts."""
        return self.drafts is None or self.accepted is None

    @property
    def acceptance_length(self) -> float | None:
        """AL of this window: from counts when present, else the printed mean."""
        if not self.mean_only and self.drafts:
            return 1.0 + self.accepted / self.drafts
        return self.mean_al
