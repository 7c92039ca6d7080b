"""Prometheus text exposition: vLLM's spec-decode counters (and ATOM's, TRT-LLM's, SGLang's).

One scrape gives counts since each engine started; a before/after pair gives
the window between them (docs/formats.md §2.3).  Samples are parsed with
prometheus_client's ``text_string_to_metric_families``; only the lines of the
speculative-decoding families are handed to it, so a scrape of any size is
read in one streaming pass.

* vLLM V1 (0.8.5+): ``vllm:spec_decode_num_drafts_total`` (D),
  ``..._num_draft_tokens_total`` (T), ``..._num_accepted_tokens_total`` (A),
  ``..._num_accepted_tokens_per_pos_total{position="i"}`` (a_i); summed over
  ``engine`` and every other label but ``position``; K = number of positions.
  Bare names (``LLM.get_metrics()``) are accepted as the same series.
* vLLM 0.8.3-0.8.4: no drafts counter, so steps only with a known K.
* vLLM V0: the counters over-count (vllm/engine/metrics.py@f0afa0c2); only the
  efficiency gauge is usable, as ``efficiency x (K+1)`` when K is known.
* ATOM: ``atom:mtp_draft_tokens_total``, ``atom:mtp_accepted_tokens_total``,
  ``atom:mtp_decode_steps_total{accepted_tokens="k"}`` (a histogram).
* llama.cpp ``llama-server --metrics``: vLLM's four counter names under a
  ``llamacpp:`` prefix, no ``engine`` label (one server, one engine;
  ``tools/server/server-task.cpp`` ``to_metrics``, llama.cpp vendored in
  llama-cpp-python 0.3.36).  The per-position family appears only once a
  request has speculated.
* TensorRT-LLM / SGLang: gauges only (``trtllm_spec_decode_acceptance_length``,
  ``sglang:spec_accept_length``): mean-only windows.

A counter that went down, or a changed ``_created`` time, means a restart
between the scrapes: the window is refused, never differenced into nonsense.
"""

from __future__ import annotations

import math
import re

from goldenal.core.errors import CounterReset, ParseError, RoundedCounters
from goldenal.readers import _io
from goldenal.readers._base import MAX_K, Context, survival_from_histogram
from goldenal.core.observation import Observation

NAME = "prometheus"
_FAMILIES = (b"spec_decode", b"atom:mtp_", b"sglang:spec_accept")
_SERIES_HEAD = re.compile(r"(?<!\S)\S[^\s{]*\{")  # matched at 0; linear when searched too


def ui_row(text):
    r"""``(series, value)`` of a Prometheus web-UI table row ``series{labels} | value``, or None.

    What ``^(\S+\{.*\})\s*\|\s*(\S+)\s*$`` matches in a stripped line, found in
    linear time (the pattern backtracks quadratically on a long line).  The
    value is a tail of the last word; the series ends at the last ``}`` that
    only blanks and one ``|`` separate from it, and starts with a word holding
    a ``{`` (a row is one line).
    """
    if "\n" in text or "|" not in text or not text.strip():
        return None
    last = len(text) - len(text.split()[-1])       # start of the last word
    end = text.rfind("}|", last, len(text) - 1)
    if end < 0:
        before = text[:last].rstrip()               # the words before the last one
        if text[last] == "|" and before.endswith("}") and last + 1 < len(text):
            end, value = len(before) - 1, text[last + 1:]
        elif before.endswith("|") and before[:-1].rstrip().endswith("}"):
            end, value = len(before[:-1].rstrip()) - 1, text[last:]
        else:
            return None
    else:
        value = text[end + 2:]
    head = _SERIES_HEAD.match(text)
    if not head or head.end() > end:
        return None
    return text[:end + 1], value


_SAMPLE = re.compile(r"^(?:vllm|llamacpp|atom|trtllm|sglang)[:_][A-Za-z0-9_:]*(?:\{.*\})?\s+"
                     r"(?:\|\s*)?[-+0-9.eEnaNIif]+(?:\s+\d+)?\s*$", re.M)

_VLLM = "vllm:spec_decode_"
# engines exposing vLLM's counter family under their own prefix: prefix -> (engine, format)
_VLLM_LIKE = {_VLLM: ("vllm", "vllm-prometheus"),
              "llamacpp:spec_decode_": ("llamacpp", "llamacpp-prometheus")}
_COUNTERS = {"num_drafts": "drafts", "num_draft_tokens": "draft_tokens",
             "num_accepted_tokens": "accepted", "num_accepted_tokens_per_pos": "per_pos",
             "num_emitted_tokens": "emitted"}


def spec_mentions(text: str) -> int:
    """How often ``text`` names a speculative-decoding family: an upper bound of the
    lines :class:`Scrape` parses (a client can refuse a body before paying for them)."""
    return sum(text.count(family.decode()) for family in _FAMILIES)


def sniff(head: str) -> bool:
    """True for a Prometheus text exposition (or a Prometheus-UI table) of spec metrics."""
    if ("# TYPE " in head or "# HELP " in head) and ("spec_decode" in head or "mtp_" in head
                                                     or "spec_accept" in head):
        return True
    return _SAMPLE.search(head) is not None


def _relevant_text(path, text=None):
    """The exposition lines of the spec families, UI table rows rewritten as samples."""
    keep = []
    if text is None:
        lines = (line for _, line, _ in _io.scan(path, _FAMILIES))
    else:
        lines = (line for line in text.splitlines()
                 if any(f.decode() in line for f in _FAMILIES))
    for text in lines:
        text = text.strip()
        row = ui_row(text)
        if row:  # Prometheus web-UI export: 'series | value'
            text = f"{row[0]} {row[1]}"
        keep.append(text)
    return "\n".join(keep) + "\n"


class Scrape:
    """Samples of one scrape: ``{(name, labels): value}`` plus ``_created`` times.

    Read from the file ``path``, or from ``text`` (a scrape held in memory;
    ``path`` then only names it in messages).
    """

    def __init__(self, path, text=None):
        from prometheus_client.parser import text_string_to_metric_families

        self.path = str(path)
        self.values = {}
        self.created = {}
        self.gauges = {}
        self.sample_names = {}
        try:
            families = list(text_string_to_metric_families(_relevant_text(path, text)))
        except (ValueError, IndexError, TypeError) as exc:
            why = str(exc) if len(str(exc)) <= 200 else str(exc)[:200] + "..."  # not a whole line
            raise ParseError(f"not a valid Prometheus text exposition: {why}", path=path) from None
        for family in families:
            for s in family.samples:
                name = s.name
                labels = tuple(sorted(s.labels.items()))
                try:
                    # prometheus_client gives an integer literal as an int: past a float's
                    # range it is as infinite as 1e400, and refused as a count later
                    value = float(s.value)
                except OverflowError:
                    value = math.inf if s.value > 0 else -math.inf
                s = s._replace(value=value)
                if name.endswith("_created"):
                    self.created[(name[:-8], labels)] = s.value
                    continue
                base = name[:-6] if name.endswith("_total") else name
                if family.type == "gauge" or base.endswith(("_rate", "_length", "_efficiency",
                                                            "_per_forward", "_overhead")):
                    self.gauges[(base, labels)] = s.value
                else:
                    self.values[(base, labels)] = s.value
                    self.sample_names[(base, labels)] = name

    def names(self):
        return {name for name, _ in self.values} | {name for name, _ in self.gauges}


def _delta(before, after, ctx):
    """Per-series difference; refuses a reset (decrease, or a changed ``_created``)."""
    out = {}
    for key, value in after.values.items():
        if before is None:
            out[key] = value
            continue
        old = before.values.get(key)
        name, labels = key
        if old is None and name == "llamacpp:spec_decode_num_accepted_tokens_per_pos" \
                and not any(n == name for n, _ in before.values):
            # llama-server prints this family only after its first speculative request
            old = 0
        label_text = ",".join(f'{k}="{v}"' for k, v in labels)
        where = after.sample_names.get(key, name) + "{" + label_text + "}"
        if old is None:
            raise _Reset(f"{where} is absent from the earlier scrape: the server "
                         "(re)started between the scrapes")
        if value < old:
            raise _Reset(f"counter reset between scrapes: {where} went {old:g} -> {value:g} "
                         "(a restart); this window cannot be measured")
        c0, c1 = before.created.get(key), after.created.get(key)
        if c0 is not None and c1 is not None and c0 != c1:
            raise _Reset(f"counter reset between scrapes: {where} was re-created "
                         f"(_created {c0:.3f} -> {c1:.3f}, a restart)")
        out[key] = value - old
    return out


class _Reset(Exception):
    pass


def rounded_counters(scrape):
    """``(series, value)`` of llama.cpp speculative counters the server printed rounded.

    llama-server writes its counters as C++ doubles to a default stream, six
    significant digits (``tools/server/server-task.cpp``, ``to_metrics``:
    ``(double) metrics.n_draft_tokens`` and the other totals; the per-position
    family is ``uint64_t``, printed exactly), so from 1,000,000 on a total
    reads as ``1.23457e+06`` and a difference of two scrapes can be off by
    several tokens.
    """
    return sorted((scrape.sample_names.get(key, key[0]), value)
                  for key, value in scrape.values.items()
                  if key[0].startswith("llamacpp:spec_decode_")
                  and key[0] != "llamacpp:spec_decode_num_accepted_tokens_per_pos"
                  and value >= 1e6)


def rounded_message(rounded):
    """Why a window with :func:`rounded_counters` is not counted, and what to do."""
    name, value = rounded[0]
    return (f"{name} is {value:g}: llama-server prints its counters with six significant "
            "digits, so from 1,000,000 on their differences are rounded; restart the server "
            "(its counters start at zero) to measure from exact counts")


def _inexact(before, after):
    """Why the window between two scrapes is not counted exactly, or None."""
    rounded = rounded_counters(after) + (rounded_counters(before) if before else [])
    return rounded_message(rounded) if rounded else None


def _as_int(value, what, ctx):
    if value != value or math.isinf(value) or value < 0 or value != int(value):
        raise _Reset(f"{what} is {value!r}, not a count")
    return int(value)


def read_pair(before, after, ctx: Context):
    """Observations of one scrape (``before`` None: since start) or a window of two.

    ``before`` and ``after`` are paths or :class:`Scrape` objects.
    """
    after_s = after if isinstance(after, Scrape) else Scrape(after)
    before_s = before if isinstance(before, Scrape) or before is None else Scrape(before)
    ctx.facts["before"] = None if before is None else str(getattr(before, "path", before))
    try:
        inexact = _inexact(before_s, after_s)
        if inexact:
            raise _Reset(inexact)
        deltas = _delta(before_s, after_s, ctx)
        for prefix, (engine, fmt) in _VLLM_LIKE.items():
            yield from _vllm(deltas, after_s, before_s, ctx, prefix, engine, fmt)
        yield from _atom(deltas, ctx, before)
        yield from _gauges(after_s, ctx)
    except _Reset as exc:
        ctx.refuse(None, str(exc))


def _sum_by(deltas, prefix):
    totals, per_pos, series = {}, {}, {}
    for (name, labels), value in deltas.items():
        if not name.startswith(prefix):
            continue
        kind = _COUNTERS.get(name[len(prefix):])
        if kind is None:
            continue
        series[kind] = series.get(kind, 0) + 1
        if kind == "per_pos":
            position = dict(labels).get("position")
            if position is None or not (position.isascii() and position.isdigit()) \
                    or int(position) >= MAX_K:
                raise _Reset(f"per-position sample without a position label of 0..{MAX_K - 1}: "
                             f"{labels}")
            per_pos[int(position)] = per_pos.get(int(position), 0) + value
        else:
            totals[kind] = totals.get(kind, 0) + value
    return totals, per_pos, series


def window(before, after, *, k=None):
    """The counted window between two scrapes, for a client that scrapes as it goes.

    Parameters
    ----------
    before, after : Scrape or path
        ``before`` may be None (counts since the server started).
    k : int, optional
        K when the scrape does not state it (checked where it does).

    Returns
    -------
    (list of Observation, list of Problem)
        A refused window (no drafts, inconsistent counters) gives no
        observation and a refusing problem that says why.

    Raises
    ------
    CounterReset
        A counter went down, or was re-created, between the scrapes.
    RoundedCounters
        A scrape holds a counter the server printed rounded (llama-server
        from 1,000,000 on): no later window of that server is exact either.
    """
    after = after if isinstance(after, Scrape) else Scrape(after)
    before = before if isinstance(before, Scrape) or before is None else Scrape(before)
    try:
        _delta(before, after, None)
    except _Reset as exc:
        raise CounterReset(str(exc), path=after.path) from None
    inexact = _inexact(before, after)
    if inexact:
        raise RoundedCounters(inexact, path=after.path)
    ctx = Context(after.path, k=k)
    return list(read_pair(before, after, ctx)), list(ctx.problems)


def _vllm(deltas, after, before, ctx, prefix=_VLLM, engine="vllm", fmt="vllm-prometheus"):
    totals, per_pos, _ = _sum_by(deltas, prefix)
    if not totals and not per_pos:
        gauge = {n: v for (n, _), v in after.gauges.items() if n.startswith(prefix)}
        if gauge and prefix == _VLLM:
            yield from _vllm_v0(gauge, ctx)
        return
    if "emitted" in totals and prefix == _VLLM:
        gauge = {n: v for (n, _), v in after.gauges.items() if n.startswith(_VLLM)}
        yield from _vllm_v0(gauge, ctx)
        return
    engines = {dict(labels).get("engine") for (name, labels) in deltas if name.startswith(prefix)}
    engines.discard(None)
    window = "since-start" if before is None else "between scrapes"
    extra = {"window": window, "engines": len(engines) or 1}
    if before is not None:
        extra["before"] = before.path
    drafts = _as_int(totals["drafts"], "drafts", ctx) if "drafts" in totals else None
    if "accepted" not in totals:
        raise _Reset(f"no {prefix}num_accepted_tokens_total samples in the scrape "
                     "(a partial export?): AL needs accepted tokens")
    accepted = _as_int(totals["accepted"], "accepted tokens", ctx)
    tokens = (_as_int(totals["draft_tokens"], "draft tokens", ctx)
              if "draft_tokens" in totals else None)
    k = len(per_pos) or None
    positions = None
    if per_pos:
        if sorted(per_pos) != list(range(len(per_pos))):
            raise _Reset(f"per-position labels {sorted(per_pos)} are not 0..K-1")
        positions = tuple(_as_int(per_pos[i], f"accepted at position {i}", ctx)
                          for i in range(len(per_pos)))
        if sum(positions) != accepted:
            ctx.refuse(None, f"per-position counts sum to {sum(positions)} but accepted is "
                             f"{accepted}: counters from different moments")
            return
    if ctx.k_hint is not None and k is not None and ctx.k_hint != k:
        ctx.refuse(None, f"{k} position labels but K={ctx.k_hint} was expected")
        return
    if k is None:
        k = ctx.k_hint
        if drafts is not None:
            ctx.remark(None, "no per-position counters (vLLM before 0.8.5, or trimmed scrape)",)
    if drafts is None:
        if k and tokens is not None and tokens % k == 0:
            drafts = tokens // k
            extra["drafts_from"] = "draft_tokens/k (assumes every step drafted K tokens)"
            extra["approximate"] = True
        else:
            ctx.remark(None, "no num_drafts counter (vLLM 0.8.3-0.8.4) and K unknown: "
                             "AL cannot be computed")
    if drafts == 0:
        ctx.refuse(None, "no drafts in the window (num_drafts did not move): nothing measured")
        return
    yield Observation(ctx.path, None, engine, fmt, k, drafts, tokens, accepted,
                      positions, None, None, None, None, None, extra)


def _vllm_v0(gauge, ctx):
    eff = gauge.get(_VLLM + "efficiency")
    k = ctx.k_hint
    if eff is None or k is None:
        ctx.refuse(None, "V0 spec-decode metrics: the V0 counters over-count, and the "
                         "efficiency gauge needs K (pass k=) to give AL = efficiency x (K+1)")
        return
    yield Observation(ctx.path, None, "vllm", "vllm-prometheus-v0", k, None, None, None,
                      None, eff * (k + 1), None, None, None, None,
                      {"window": "since-start", "cumulative": True})


def _atom(deltas, ctx, before):
    hist, totals = {}, {}
    for (name, labels), value in deltas.items():
        if not name.startswith("atom:mtp_"):
            continue
        if name == "atom:mtp_decode_steps":
            key = dict(labels).get("accepted_tokens", "")
            if not (key.isascii() and key.isdigit()) or int(key) > MAX_K:
                raise _Reset(f"atom:mtp_decode_steps sample without an accepted_tokens label "
                             f"of 0..{MAX_K}: {labels}")
            hist[int(key)] = hist.get(int(key), 0) + value
        elif name in ("atom:mtp_draft_tokens", "atom:mtp_accepted_tokens"):
            totals[name] = totals.get(name, 0) + value
    if not hist:
        return
    width = max(hist) + 1
    h = [_as_int(hist.get(j, 0), f"decode steps with {j} accepted", ctx) for j in range(width)]
    drafts = sum(h)
    accepted = _as_int(totals.get("atom:mtp_accepted_tokens", math.nan), "accepted tokens", ctx)
    tokens = totals.get("atom:mtp_draft_tokens")
    tokens = None if tokens is None else _as_int(tokens, "draft tokens", ctx)
    if drafts == 0:
        ctx.refuse(None, "no decode steps in the window")
        return
    k = tokens // drafts if tokens and tokens % drafts == 0 else ctx.k_hint
    if k is not None and k > MAX_K:
        ctx.refuse(None, f"draft tokens / decode steps = {k} is not a number of draft tokens")
        return
    if sum(j * n for j, n in enumerate(h)) != accepted:
        ctx.refuse(None, "atom:mtp_decode_steps histogram disagrees with "
                         "atom:mtp_accepted_tokens_total")
        return
    per_pos = survival_from_histogram(h + [0] * max(0, (k or 0) + 1 - len(h)))
    yield Observation(ctx.path, None, "atom", "atom-prometheus", k, drafts, tokens, accepted,
                      per_pos, None, None, None, None, None,
                      {"window": "since-start" if before is None else "between scrapes"})


def _gauges(after, ctx):
    """Mean-only windows from gauge-only engines (one per scrape; TP rank 0 only)."""
    for (name, labels), value in sorted(after.gauges.items()):
        labels = dict(labels)
        if name == "trtllm_spec_decode_acceptance_length":
            engine, fmt = "trtllm", "trtllm-prometheus"
        elif name == "sglang:spec_accept_length":
            if labels.get("tp_rank", "0") != "0":
                continue
            engine, fmt = "sglang", "sglang-prometheus"
        else:
            continue
        if value != value:
            continue
        yield Observation(ctx.path, None, engine, fmt, ctx.k_hint, None, None, None, None,
                          value, None, None, None, None, {"gauge": name, "labels": labels})
