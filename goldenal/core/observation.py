"""The one record every measurement reader yields, one per measurement window.

Counts follow vLLM's definitions (docs/formats.md §0.1), so AL = 1 + accepted / drafts; a
source that prints only a mean leaves them ``None`` (*mean-only*, never weighted as counts).
"""

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
