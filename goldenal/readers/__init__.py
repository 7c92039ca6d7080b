"""Measurement ingestion: engine output in, :class:`~goldenal.core.observation.Observation` records out.

One reader per format, chosen by content (docs/formats.md §9 lists them).  No
pandas or scipy is imported here; ``.to_frame()`` imports pandas.
"""

from goldenal.readers.ingestion import READERS, IngestStream, _k_iv, ingest, sniff  # noqa: F401
from goldenal.readers.observations import (CellSummary, Observations, Problem,  # noqa: F401
                                          SourceInfo, Summary, as_dict)

__all__ = ["ingest", "IngestStream", "load_run", "Observations", "MeasurementRun", "Problem",
           "CellSummary", "Summary", "SourceInfo", "sniff", "READERS", "as_dict"]


def load_run(path, **identity):
    """Load a measurement run directory; see :func:`goldenal.readers.run.load_run`."""
    from goldenal.readers.run import load_run as _load

    return _load(path, **identity)


def __getattr__(name):
    if name == "MeasurementRun":
        from goldenal.readers.run import MeasurementRun

        return MeasurementRun
    raise AttributeError(f"module 'goldenal.readers' has no attribute {name!r}")

