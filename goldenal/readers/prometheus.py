"""Prometheus text exposition: the speculative-decoding families the engine records name.

One scrape gives counts since start, a before/after pair the window between
(docs/formats.md §2.3, §7); only the families' lines reach prometheus_client,
so a scrape of any size is read in one pass.  Which metrics a record names
chooses the reading: counters (summed over all labels but ``position``), a
histogram of steps by accepted tokens, or a gauge alone (mean-only windows).
A restart between the scrapes refuses the window.
"""

import math
import os
import re
from functools import lru_cache

from goldenal.core.errors import CounterReset, ParseError, RoundedCounters
from goldenal.readers import _io
from goldenal.readers._base import MAX_K, Context, survival_from_histogram
from goldenal.readers.records import records
from goldenal.core.observation import Observation

NAME = "prometheus"
_SERIES_HEAD = re.compile(r"(?<!\S)\S[^\s{]*\{")  # matched at 0; linear when searched too


@lru_cache(maxsize=None)
def _families():
    """``(record, family prefix)`` of every engine record that names metrics."""
    out = []
    for rec in records().values():
        names = [*rec.metrics.values(), *rec.old_metrics.values()]
        if names:
            out.append((rec, os.path.commonprefix(names)))
    return tuple(out)


@lru_cache(maxsize=None)
def _sample():
    prefixes = "|".join(re.escape(prefix) for _, prefix in _families())
    return re.compile(rf"^(?:{prefixes})[A-Za-z0-9_:]*(?:\{{.*\}})?\s+"
                      r"(?:\|\s*)?[-+0-9.eEnaNIif]+(?:\s+\d+)?\s*$", re.M)


def ui_row(text):
    r"""``(series, value)`` of a Prometheus web-UI table row ``series{labels} | value``, or None.

    What ``^(\S+\{.*\})\s*\|\s*(\S+)\s*$`` matches in a stripped line, in
    linear time (the pattern backtracks quadratically on a long line).
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


def spec_mentions(text: str) -> int:
    """How often ``text`` names a speculative-decoding family: an upper bound of the
    lines :class:`Scrape` parses (a client can refuse a body before paying for them)."""
    return sum(text.count(prefix) for _, prefix in _families())


def sniff(head: str) -> bool:
    """True for a Prometheus text exposition (or a Prometheus-UI table) of spec metrics."""
    if ("# TYPE " in head or "# HELP " in head) and any(p in head for _, p in _families()):
        return True
    return _sample().search(head) is not None


def _relevant_text(path, text=None):
    """The exposition lines of the spec families, UI table rows rewritten as samples."""
    prefixes = [prefix for _, prefix in _families()]
    if text is None:
        lines = (line for _, line, _ in _io.scan(path, [p.encode() for p in prefixes]))
    else:
        lines = (line for line in text.splitlines() if any(p in line for p in prefixes))
    keep = []
    for text in lines:
        text = text.strip()
        row = ui_row(text)
        if row:  # Prometheus web-UI export: 'series | value'
            text = f"{row[0]} {row[1]}"
        keep.append(text)
    return "\n".join(keep) + "\n"


class Scrape:
    """Samples of one scrape (file ``path``, or ``text`` held in memory): ``{(name,
    labels): value}`` plus ``_created`` times."""

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
        if old is None and name in _growing() and not any(n == name for n, _ in before.values):
            old = 0  # a family that appears with the first speculative request
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


@lru_cache(maxsize=None)
def _growing():
    return {rec.metrics["per_position"] for rec in records().values()
            if rec.per_position_grows and "per_position" in rec.metrics}


def rounded_counters(scrape):
    """``(series, value, record)`` of speculative counters the server printed rounded
    (past ``10 ** counter_digits``; the per-position family is printed exactly)."""
    out = []
    for rec in records().values():
        if rec.counter_digits is None:
            continue
        totals = set(rec.metrics.values()) - {rec.metrics.get("per_position")}
        out += [(scrape.sample_names.get(key, key[0]), value, rec)
                for key, value in scrape.values.items()
                if key[0] in totals and value >= 10 ** rec.counter_digits]
    return sorted(out, key=lambda item: item[:2])


def rounded_message(rounded):
    """Why a window with :func:`rounded_counters` is not counted, and what to do."""
    name, value, rec = rounded[0]
    return (f"{name} is {value:g}: {rec.launch_word} prints its counters with "
            f"{rec.counter_digits} significant digits, so from {10 ** rec.counter_digits:,} on "
            "their differences are rounded; restart the server (its counters start at zero) "
            "to measure from exact counts")


def _inexact(before, after):
    """Why the window between two scrapes is not counted exactly, or None."""
    rounded = rounded_counters(after) + (rounded_counters(before) if before else [])
    return rounded_message(rounded) if rounded else None


def _as_int(value, what, ctx):
    if value != value or math.isinf(value) or value < 0 or value != int(value):
        raise _Reset(f"{what} is {value!r}, not a count")
    return int(value)


def read_pair(before, after, ctx: Context):
    """Observations of one scrape (``before`` None: since start) or a window of two
    (paths or :class:`Scrape` objects)."""
    after_s = after if isinstance(after, Scrape) else Scrape(after)
    before_s = before if isinstance(before, Scrape) or before is None else Scrape(before)
    ctx.facts["before"] = None if before is None else str(getattr(before, "path", before))
    try:
        inexact = _inexact(before_s, after_s)
        if inexact:
            raise _Reset(inexact)
        deltas = _delta(before_s, after_s, ctx)
        for rec, prefix in _families():
            if "steps_by_accepted" in rec.metrics:
                yield from _histogram(deltas, ctx, before, rec)
            elif "accepted" in rec.metrics:
                yield from _counters(deltas, after_s, before_s, ctx, rec, prefix)
        yield from _gauges(after_s, ctx)
    except _Reset as exc:
        ctx.refuse(None, str(exc))


def _sum_by(deltas, rec):
    kinds = {name: kind for kind, name in rec.metrics.items()}
    totals, per_pos = {}, {}
    for (name, labels), value in deltas.items():
        kind = kinds.get(name)
        if kind is None:
            continue
        if kind == "per_position":
            position = dict(labels).get("position")
            if position is None or not (position.isascii() and position.isdigit()) \
                    or int(position) >= MAX_K:
                raise _Reset(f"per-position sample without a position label of 0..{MAX_K - 1}: "
                             f"{labels}")
            per_pos[int(position)] = per_pos.get(int(position), 0) + value
        else:
            totals[kind] = totals.get(kind, 0) + value
    return totals, per_pos


def window(before, after, *, k=None):
    """``(observations, problems)`` of the window between two scrapes (``before`` None: since
    start); CounterReset for a restart between them, RoundedCounters for rounded counters."""
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


def _counters(deltas, after, before, ctx, rec, prefix):
    totals, per_pos = _sum_by(deltas, rec)
    efficiency = rec.old_metrics.get("efficiency")
    if efficiency and ("emitted" in totals or not totals and not per_pos):
        # V0 (its emitted counter, or its gauges alone)
        if "emitted" in totals or any(n.startswith(prefix) for n, _ in after.gauges):
            yield from _efficiency(after, ctx, rec)
        return
    if not totals and not per_pos:
        return
    engines = {dict(labels).get("engine") for (name, labels) in deltas if name.startswith(prefix)}
    engines.discard(None)
    window = "since-start" if before is None else "between scrapes"
    extra = {"window": window, "engines": len(engines) or 1}
    if before is not None:
        extra["before"] = before.path
    drafts = _as_int(totals["drafts"], "drafts", ctx) if "drafts" in totals else None
    if "accepted" not in totals:
        raise _Reset(f"no {rec.metrics['accepted']}_total samples in the scrape "
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
            return ctx.refuse(None, f"per-position counts sum to {sum(positions)} but accepted is "
                                    f"{accepted}: counters from different moments")
    if ctx.k_hint is not None and k is not None and ctx.k_hint != k:
        return ctx.refuse(None, f"{k} position labels but K={ctx.k_hint} was expected")
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
            ctx.remark(None, "no drafts counter (vLLM 0.8.3-0.8.4) and K unknown: "
                             "AL cannot be computed")
    if drafts == 0:
        ctx.refuse(None, "no drafts in the window (the drafts counter did not move): "
                         "nothing measured")
        return
    yield Observation(ctx.path, None, rec.name, f"{rec.name}-prometheus", k, drafts, tokens,
                      accepted, positions, None, None, None, None, None, extra)


def _efficiency(after, ctx, rec):
    eff = next((v for (n, _), v in after.gauges.items()
                if n == rec.old_metrics["efficiency"]), None)
    k = ctx.k_hint
    if eff is None or k is None:
        ctx.refuse(None, "V0 spec-decode metrics: the V0 counters over-count, and the "
                         "efficiency gauge needs K (pass k=) to give AL = efficiency x (K+1)")
        return
    yield Observation(ctx.path, None, rec.name, f"{rec.name}-prometheus-v0", k, None, None, None,
                      None, eff * (k + 1), None, None, None, None,
                      {"window": "since-start", "cumulative": True})


def _histogram(deltas, ctx, before, rec):
    steps_name, accepted_name = rec.metrics["steps_by_accepted"], rec.metrics["accepted"]
    tokens_name = rec.metrics.get("draft_tokens")
    label = rec.count_fields["steps_by_accepted"][0]
    hist, totals = {}, {}
    for (name, labels), value in deltas.items():
        if name == steps_name:
            key = dict(labels).get(label, "")
            if not (key.isascii() and key.isdigit()) or int(key) > MAX_K:
                raise _Reset(f"{steps_name} sample without an {label} label "
                             f"of 0..{MAX_K}: {labels}")
            hist[int(key)] = hist.get(int(key), 0) + value
        elif name in (accepted_name, tokens_name):
            totals[name] = totals.get(name, 0) + value
    if not hist:
        return
    width = max(hist) + 1
    h = [_as_int(hist.get(j, 0), f"decode steps with {j} accepted", ctx) for j in range(width)]
    drafts = sum(h)
    accepted = _as_int(totals.get(accepted_name, math.nan), "accepted tokens", ctx)
    tokens = totals.get(tokens_name)
    tokens = None if tokens is None else _as_int(tokens, "draft tokens", ctx)
    if drafts == 0:
        return ctx.refuse(None, "no decode steps in the window")
    k = tokens // drafts if tokens and tokens % drafts == 0 else ctx.k_hint
    if k is not None and k > MAX_K:
        ctx.refuse(None, f"draft tokens / decode steps = {k} is not a number of draft tokens")
        return
    if sum(j * n for j, n in enumerate(h)) != accepted:
        return ctx.refuse(None, f"{steps_name} histogram disagrees with {accepted_name}_total")
    per_pos = survival_from_histogram(h + [0] * max(0, (k or 0) + 1 - len(h)))
    yield Observation(ctx.path, None, rec.name, f"{rec.name}-prometheus", k, drafts, tokens,
                      accepted, per_pos, None, None, None, None, None,
                      {"window": "since-start" if before is None else "between scrapes"})


def _gauges(after, ctx):
    """Mean-only windows from gauge-only engines (one per scrape; TP rank 0 only)."""
    gauges = {rec.metrics["acceptance_length"]: rec for rec, _ in _families()
              if "acceptance_length" in rec.metrics and "accepted" not in rec.metrics}
    for (name, labels), value in sorted(after.gauges.items()):
        labels = dict(labels)
        rec = gauges.get(name)
        if rec is None or labels.get("tp_rank", "0") != "0" or value != value:
            continue
        yield Observation(ctx.path, None, rec.name, f"{rec.name}-prometheus", ctx.k_hint, None,
                          None, None, None, value, None, None, None, None,
                          {"gauge": name, "labels": labels})
