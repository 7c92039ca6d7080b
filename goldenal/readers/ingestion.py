"""Reading measurement files: the reader of each file chosen by its content
(docs/formats.md §9)."""

import os
import re
from operator import itemgetter

from goldenal.core.errors import ParseError
from goldenal.readers import _io
from goldenal.readers._base import Context
from goldenal.readers.observations import _K, _LINE, Columns, Observations, SourceInfo, as_row


def _readers():
    from goldenal.readers import (atom, llamacpp, measured, profile, prometheus, sglang,
                                 trtllm, vllm_bench, vllm_log)

    # name -> (sniff(head) -> bool, read(path_or_pair, ctx), takes a before/after pair)
    return {
        "speculation-profile": (profile.sniff, profile.read, False),
        "measure-requests": (measured.sniff, measured.read, False),
        # decisive vLLM metrics lines beat other engines' markers quoted in a log
        # (a logged request body can hold SGLang's or TensorRT-LLM's count fields)
        "vllm-log!": (vllm_log.sniff_metrics, vllm_log.read, False),
        "vllm-request": (vllm_bench.sniff_request, vllm_bench.read_requests, False),
        trtllm.NAME: (trtllm.sniff, trtllm.read, False),
        "atom-json": (atom.sniff_json, atom.read_pair, True),
        "sglang-json": (sglang.sniff_json, sglang.read_json, False),
        "vllm-bench-json": (vllm_bench.sniff_json, vllm_bench.read_json, False),
        "prometheus": (prometheus.sniff, prometheus.read_pair, True),
        "vllm-bench-console": (vllm_bench.sniff_console, vllm_bench.read_console, False),
        "vllm-offline": (vllm_bench.sniff_offline, vllm_bench.read_offline, False),
        "atom-log": (atom.sniff_log, atom.read_log, False),
        "sglang-log": (sglang.sniff_log, sglang.read_log, False),
        llamacpp.NAME: (llamacpp.sniff, llamacpp.read, False),
        "vllm-log": (vllm_log.sniff, vllm_log.read, False),
    }


READERS = ("vllm-log", "prometheus", "vllm-bench-json", "vllm-bench-console", "vllm-offline",
           "vllm-request", "sglang-log", "sglang-json", "trtllm", "atom-log", "atom-json",
           "llamacpp", "speculation-profile", "measure-requests")

_BENCH_HINTS = ('"request_throughput"', '"max_concurrency"', '"total_output_tokens"')


def sniff(path):
    """The name of the reader for ``path``, chosen by content; ParseError when none."""
    head = _io.decode(_io.read_head(path))
    if not head.strip():
        raise ParseError("empty file", path=path)
    for name, (test, _, _) in _readers().items():
        if test(head):
            return name.rstrip("!")
    if head.lstrip().startswith("{") and any(h in head for h in _BENCH_HINTS):
        return "vllm-bench-json"  # spec_decode_* keys may sit past the sniffed head
    raise ParseError("not a recognised measurement format (no speculative-decoding metrics "
                     "in the first 256 KiB)", path=path)


_PAIR = re.compile(r"(?i)(before|after)")


def _pairs(paths, kinds, in_order=False):
    """Group before/after files of a pairing reader (``in_order``: two files of one, in the
    order given); everything else stays single."""
    if in_order and len(paths) == 2 and kinds[paths[0]] == kinds[paths[1]] \
            and kinds[paths[0]][1]:
        return [(paths[0], paths[1])]
    singles, pending = [], {}
    for path in paths:
        name = os.path.basename(path)
        if kinds[path][1] and _PAIR.search(name):
            key = (os.path.dirname(path), _PAIR.sub("*", name), kinds[path][0])
            which = _PAIR.search(name).group(1).lower()
            pending.setdefault(key, {})[which] = path
        else:
            singles.append((None, path))
    out = list(singles)
    for group in pending.values():
        if "after" in group:
            out.append((group.get("before"), group["after"]))
        else:  # a lone 'before' scrape is still a since-start reading
            out.append((None, group["before"]))
    order = {p: i for i, p in enumerate(paths)}
    return sorted(out, key=lambda pair: order[pair[1]])


def _expand(paths):
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if os.path.isfile(full) and not name.startswith(".") \
                        and not name.endswith((".yaml", ".yml", ".md")):
                    out.append(full)
        elif not os.path.exists(p):
            raise ParseError("no such file", path=p)
        else:
            out.append(p)
    return out


def ingest(paths, *, k=None, reader=None, strict=False, in_order=False):
    """Read measurement files into observations, one per measurement window.

    Parameters
    ----------
    paths : path or iterable of paths
        Files (plain or gzip) or directories (their files, not recursive).
    k : int, optional
        K when the sources do not state it (vLLM 0.8.3-0.8.4 lines, SGLang
        logs); also checked against sources that do.
    reader : str, optional
        Force one reader (see :data:`READERS`) instead of sniffing.
    strict : bool
        Raise on the first refused window instead of recording it.
    in_order : bool
        Two scrapes (or ``/debug/mtp_stats`` reads) given are a before/after
        pair in this order, even when their names do not say so.

    Returns
    -------
    Observations
        ``complete`` is False when any window was refused; ``problems`` says
        which and why, with file and line.

    Raises
    ------
    ParseError
        A file is missing, unreadable or in no known format (or, with
        ``strict``, any window is refused).

    Example
    -------
    >>> obs = ingest(["server_on_mtp3.log"])            # doctest: +SKIP
    >>> round(obs.summary()[0].acceptance_length, 2)      # doctest: +SKIP
    2.83
    """
    stream = IngestStream(paths, k=k, reader=reader, strict=strict, in_order=in_order)
    parts = stream._parts()
    return Observations.from_parts(parts, tuple(stream.problems), tuple(stream.sources))


class IngestStream:
    """Observations yielded as they are read, in constant memory; iterate once.

    ``problems``, ``sources`` and ``complete`` are final after the iteration; every
    file is sniffed first, so an unreadable one fails early.
    """

    def __init__(self, paths, *, k=None, reader=None, strict=False, in_order=False):
        _k_iv(k)
        files = _expand(paths)
        self._table = _readers()
        if reader is not None and reader not in self._table:
            raise ParseError(f"unknown reader {reader!r}; expected one of {', '.join(READERS)}")
        self._kinds = {}
        for path in files:
            name = reader or sniff(path)
            self._kinds[path] = (name, self._table[name][2])
        self._plan = _pairs(files, self._kinds, in_order)
        self._k = k
        self._strict = strict
        self.problems = []
        self.sources = []

    @property
    def complete(self):
        return not any(p.refused for p in self.problems)

    def _files(self, by_parts=False):
        """``(after, name, ctx, records)`` per file, stopping at the first refusal when strict."""
        for before, after in self._plan:
            name = self._kinds[after][0]
            _, read, paired = self._table[name]
            ctx = Context(after, k=self._k)
            if by_parts and name == "vllm-log":  # rows and Columns runs (see _parts)
                from goldenal.readers.vllm_log import read_parts

                records = read_parts(after, ctx)
            else:
                records = read(before, after, ctx) if paired else read(after, ctx)
                records = map(as_row, records) if by_parts else records
            yield after, name, ctx, self._checked(ctx, records)

    def _checked(self, ctx, records):
        seen = 0
        for record in records:
            if self._strict and len(ctx.problems) > seen:
                self._raise_first(ctx)
            seen = len(ctx.problems)
            yield record

    def __iter__(self):
        for after, name, ctx, records in self._files():
            count, spans = 0, {}
            for obs in records:
                count += 1
                _span(spans, obs.k, obs.line)
                yield obs
            self._close(after, name, ctx, count, spans)

    def _parts(self):
        """Every window of every file as parts (row lists and :class:`Columns` runs): what
        iterating gives, without an :class:`Observation` per window."""
        parts = []
        for after, name, ctx, records in self._files(by_parts=True):
            mine, rows = [], None
            for record in records:
                if isinstance(record, Columns):
                    mine.append(record)
                    rows = None
                elif rows is None:
                    rows = [record]
                    mine.append(rows)
                else:
                    rows.append(record)
            spans = {}
            ks = set()
            for part in mine:
                ks.update((part.k,) if isinstance(part, Columns) else map(itemgetter(_K), part))
            ks.discard(None)
            if len(ks) > 1:  # only a mixed file needs the line spans
                for part in mine:
                    if isinstance(part, Columns):
                        _span(spans, part.k, int(part.line.min()))
                        _span(spans, part.k, int(part.line.max()))
                    else:
                        for k, line in map(itemgetter(_K, _LINE), part):
                            _span(spans, k, line)
            self._close(after, name, ctx, sum(map(len, mine)), spans)
            parts.extend(mine)
        return parts

    def _close(self, after, name, ctx, count, spans):
        """A file's end: its no-window refusal, mixed-K remark, problems and source."""
        if not count and not any(p.refused for p in ctx.problems):
            skipped = ctx.facts.get("skipped_empty")
            ctx.refuse(None, "no speculative-decoding measurements found in this file" + (
                f" ({skipped} metrics line(s) with zero drafts skipped: speculation off?)"
                if skipped else ""))
        _note_mixed_k(spans, ctx)
        if self._strict:
            self._raise_first(ctx)
        self.problems.extend(ctx.problems)
        self.sources.append(SourceInfo(str(after), name, count, dict(ctx.facts)))

    @staticmethod
    def _raise_first(ctx):
        bad = next((p for p in ctx.problems if p.refused), None)
        if bad is not None:
            raise ParseError(bad.message, path=bad.path, line=bad.line)


def _k_iv(k):
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"`k` must be a positive integer, got {k!r}")


def _span(spans, k, line):
    if k is None:
        return
    lo, hi = spans.get(k, (None, None))
    if line is not None:
        lo = line if lo is None else min(lo, line)
        hi = line if hi is None else max(hi, line)
    spans[k] = (lo, hi)


def _note_mixed_k(spans, ctx):
    if len(spans) > 1:
        parts = ", ".join(f"K={k}" + (f" (lines {lo}-{hi})" if lo is not None else "")
                          for k, (lo, hi) in sorted(spans.items()))
        ctx.remark(None, f"metrics of {len(spans)} different K in one file: {parts}; "
                         "split into separate cells")
