"""Measurement ingestion: engine output in, :class:`~goldenal.core.observation.Observation` records out.

One reader per source format, chosen per file by its content (a sniffer reads
the first 256 KiB; compression is detected by magic bytes, not by name):

==========================  ===================================================
reader                      source
==========================  ===================================================
``vllm-log``                vLLM server log, every metrics family (V0 .. V1)
``prometheus``              ``/metrics`` scrape(s): vLLM, ATOM, TRT-LLM, SGLang
``vllm-bench-json``         ``vllm bench serve --save-result`` JSON
``vllm-bench-console``      ``vllm bench serve`` console output
``vllm-offline``            ``examples/offline_inference/spec_decode.py`` output
``vllm-request``            per-request ``metrics.speculative_decoding``
``sglang-log``              SGLang decode-batch lines, bench summaries
``sglang-json``             SGLang ``meta_info`` and ``/server_info``
``trtllm``                  TensorRT-LLM iteration stats (``specDecodingStats``)
``atom-log``                ATOM ``[MTP Stats ...]`` lines
``atom-json``               ATOM ``/debug/mtp_stats``
``llamacpp``                llama.cpp server statistics
``measure-requests``        ``goldenal measure`` per-request records
``speculation-profile``     ``speculation_profile.json`` (schema "1.0"; counts
                            only from its histogram, else mean-only)
==========================  ===================================================

Files whose names differ only by ``before``/``after`` (Prometheus scrapes,
``/debug/mtp_stats`` reads) are differenced into one window.

:func:`ingest` returns an immutable :class:`Observations`; :class:`IngestStream`
yields the same records one at a time (constant memory for logs of any
size).  This module imports no pandas or scipy; ``.to_frame()`` imports pandas.
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

