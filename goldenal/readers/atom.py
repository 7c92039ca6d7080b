"""ATOM MTP statistics: log lines and ``/debug/mtp_stats`` (docs/formats.md §7), named by
the engine record.

Cumulative lines are differenced only when a file has no interval lines.
"""

import ast
import json
import re

from goldenal.readers import _io
from goldenal.readers._base import MAX_K, Context, counts_from_rates, survival_from_histogram
from goldenal.readers.records import record
from goldenal.core.observation import Observation

_REC = record("atom")
(_TAG_NAME, _INTERVAL), _LOG = _REC.log_lines["tags"], _REC.log_lines
_PROPOSED, _ACCEPTED, _MEAN, _HIST = (_REC.count_fields[key][0] for key in (
    "proposed", "accepted", "length", "histogram"))
MARKERS = (f"[{_TAG_NAME}".encode(),)
_STAMP = re.compile(r"\[atom (\d\d:\d\d:\d\d)\]")
_TAG = re.compile(rf"\[({re.escape(_INTERVAL)}|{re.escape(_TAG_NAME)})\s*\]")
_TOKS, _AT, _DIST = (re.compile(re.escape(name) + value) for name, value in zip(
    _LOG["fields"], (r":\s*([0-9.]+)", r":\s*(\d+)/(\d+)", r":\s*(\{[^}]*\})")))
_FIRST = re.compile(r"{}:\s*(\d+),\s*{}:\s*(\d+)".format(*map(re.escape, _LOG["first"])))
_DOC = re.compile(r"{}:\s*([0-9.]+).*?{} ([0-9/]+):\s*([0-9./]+)%".format(
    *map(re.escape, _LOG["summary"])))


def sniff_log(head: str) -> bool:
    return f"[{_TAG_NAME}" in head


def sniff_json(head: str) -> bool:
    return f'"{_PROPOSED}"' in head and f'"{_ACCEPTED}"' in head


def _parse_line(text):
    """(kind, fields) of one statistics line; kind in interval/cumulative/first/doc."""
    tag = _TAG.search(text)
    toks, at, dist = _TOKS.search(text), _AT.search(text), _DIST.search(text)
    if tag and at:
        percent = None
        if dist:
            try:
                raw = ast.literal_eval(dist.group(1))
                percent = {int(k): float(str(v).rstrip("%")) for k, v in raw.items()}
            except (ValueError, SyntaxError, TypeError, AttributeError, OverflowError,
                    MemoryError, RecursionError):
                raise ValueError(f"unreadable distribution {dist.group(1)[:60]!r}") from None
        return ("interval" if tag.group(1) == _INTERVAL else "cumulative",
                {"al": float(toks.group(1)) if toks else None, "accepted": int(at.group(1)),
                 "tokens": int(at.group(2)), "percent": percent})
    m = _FIRST.search(text)
    if m:
        return "first", {"tokens": int(m.group(1)), "accepted": int(m.group(2))}
    m = _DOC.search(text)
    if m:
        keys = [int(x) for x in m.group(2).split("/")]
        vals = [float(x) for x in m.group(3).split("/")]
        if len(keys) == len(vals):
            return "doc", {"al": float(m.group(1)), "percent": dict(zip(keys, vals))}
    return None, None


def _window(path, line, fields, ctx, fmt, end=None, extra=None):
    accepted, tokens, percent = fields["accepted"], fields["tokens"], fields.get("percent")
    if tokens == 0:
        return None
    if max(accepted, tokens) > 2 ** 63 - 1:  # no engine counts past 64 bits
        return ctx.refuse(line, f"{_LOG['fields'][1]} past 2^63-1: not counts")
    extra = dict(extra or {})
    k = max(percent) if percent else (fields.get("k") or ctx.k_hint)
    if not k:
        return Observation(path, line, "atom", fmt, None, None, tokens, accepted, None,
                           fields.get("al"), end, None, None, None, extra)
    if k > MAX_K or k < 0:
        return ctx.refuse(line, f"K={k} (largest distribution key) is not a number of draft tokens")
    if tokens % k:
        return ctx.refuse(line, f"draft tokens {tokens} not a multiple of K={k} (largest "
                                "distribution key)")
    steps = tokens // k
    per_pos = None
    if percent:
        hist_pct = [percent.get(j, 0.0) for j in range(k + 1)]
        # survival s_i = sum_{j>i} p_j; the percent strings have two decimals
        surv = [sum(hist_pct[j] for j in range(i + 1, k + 1)) / 100 for i in range(k)]
        per_pos = counts_from_rates(steps, surv, accepted, 0.00005 * (k + 1) + 1e-9)
        if per_pos is None:
            return ctx.refuse(line, f"accepted-tokens distribution disagrees with "
                                    f"{_LOG['fields'][1]}")
    al = fields.get("al")
    if al is not None and abs(1 + accepted / steps - al) > 0.005 + 1e-9:
        return ctx.refuse(line, f"counts contradict the printed mean: 1 + {accepted}/{steps} = "
                                f"{1 + accepted / steps:.4f} vs {_LOG['fields'][0]} {al}")
    return Observation(path, line, "atom", fmt, k, steps, tokens, accepted, per_pos, al, end,
                       None, None, None, extra)


def read_log(path, ctx: Context):
    """Interval windows; cumulative lines are differenced only when no interval line exists."""
    cumulative = []
    saw_interval = False
    for line, text, terminated in _io.scan(path, MARKERS):
        try:
            kind, fields = _parse_line(text)
        except ValueError as exc:
            ctx.refuse(line, str(exc))
            continue
        if kind is None:
            continue
        if not terminated and kind in ("interval", "cumulative") and fields["percent"] is None:
            ctx.refuse(line, "truncated last line")
            continue
        stamp = _STAMP.search(text)
        if kind == "interval":
            saw_interval = True
            obs = _window(ctx.path, line, fields, ctx, "atom-log")
            if obs is not None:
                yield _stamped(obs, stamp)
        elif kind == "cumulative":
            cumulative.append((line, fields, stamp))
        elif kind == "first":
            yield Observation(ctx.path, line, "atom", "atom-log-first", ctx.k_hint, None,
                              fields["tokens"], fields["accepted"], None, None, None,
                              stamp.group(1) if stamp else None, None, None, {})
        else:  # the documentation's one-line summary: a mean with a distribution
            yield Observation(ctx.path, line, "atom", "atom-log-summary",
                              max(fields["percent"]), None, None, None, None, fields["al"],
                              None, None, None, None, {"distribution_percent": fields["percent"]})
    if saw_interval or not cumulative:
        return
    prev = None
    for line, fields, stamp in cumulative:
        if prev is not None and (fields["tokens"] < prev[1]["tokens"]
                                 or fields["accepted"] < prev[1]["accepted"]):
            ctx.remark(line, "cumulative MTP counters went down: a restart; counting anew")
            prev = None
        if prev is None:
            win = dict(fields)
            obs = _window(ctx.path, line, win, ctx, "atom-log-cumulative",
                          extra={"window": "since-start", "cumulative": True})
        else:
            win = _difference(prev[1], fields)
            obs = _window(ctx.path, prev[0], win, ctx, "atom-log-cumulative", end=line,
                          extra={"cumulative": True})
        prev = (line, fields)
        if obs is not None:
            yield _stamped(obs, stamp)


def _difference(a, b):
    """Window between two cumulative lines, without the per-position profile (two
    rounded percentage tables do not difference into counts)."""
    return {"accepted": b["accepted"] - a["accepted"], "tokens": b["tokens"] - a["tokens"],
            "al": None, "percent": None,
            "k": max(b["percent"]) if b.get("percent") else None}


def _stamped(obs, stamp):
    if stamp is None:
        return obs
    from dataclasses import replace

    return replace(obs, timestamp=stamp.group(1))


def _snapshot(path, ctx):
    try:
        doc = json.loads(_io.read_text(path))
    except json.JSONDecodeError as exc:
        return ctx.refuse(exc.lineno, f"not valid JSON: {exc.msg}")
    if not isinstance(doc, dict) or _PROPOSED not in doc:
        return ctx.refuse(None, "not an ATOM /debug/mtp_stats response")
    if doc.get(_REC.info_keys[0]) is False:
        return ctx.refuse(None, "MTP statistics are disabled on this server")
    dist = doc.get(_HIST) or {}
    try:
        hist = {int(k): int(v) for k, v in dist.items()}
        return {"tokens": int(doc[_PROPOSED]), "accepted": int(doc[_ACCEPTED]), "hist": hist,
                "al": doc.get(_MEAN)}
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity
        return ctx.refuse(None, "non-integer counts in /debug/mtp_stats")


def read_pair(before, after, ctx: Context):
    """One ``/debug/mtp_stats`` read (since start) or the window between two reads."""
    b = _snapshot(after, ctx)
    a = _snapshot(before, ctx) if before is not None else None
    if b is None or (before is not None and a is None):
        return
    extra = {"window": "since-start" if a is None else "between reads"}
    hist, tokens, accepted = dict(b["hist"]), b["tokens"], b["accepted"]
    if a is not None:
        extra["before"] = str(before)
        if tokens < a["tokens"] or accepted < a["accepted"] or any(
                hist.get(j, 0) < n for j, n in a["hist"].items()):
            ctx.refuse(None, "counter reset between the two /debug/mtp_stats reads (a restart)")
            return
        tokens -= a["tokens"]
        accepted -= a["accepted"]
        hist = {j: hist.get(j, 0) - a["hist"].get(j, 0) for j in set(hist) | set(a["hist"])}
    steps = sum(hist.values())
    if steps == 0:
        return ctx.refuse(None, "no decode steps in the window")
    if sum(j * n for j, n in hist.items()) != accepted:
        return ctx.refuse(None, f"{_HIST} disagrees with {_ACCEPTED}")
    if tokens % steps:
        ctx.refuse(None, f"{_PROPOSED} {tokens} is not a multiple of the {steps} steps "
                         f"in the {_HIST}: K unknown")
        return
    k = tokens // steps
    if k > MAX_K:
        return ctx.refuse(None, f"{_PROPOSED} / steps = {k} is not a number of draft tokens")
    if max(hist) > k or min(hist) < 0:
        return ctx.refuse(None, f"distribution key {max(hist)} exceeds K={k}")
    per_pos = survival_from_histogram([hist.get(j, 0) for j in range(k + 1)])
    al = b["al"] if a is None and isinstance(b["al"], (int, float)) else None
    if al is not None and abs(1 + accepted / steps - al) > 0.00005 + 1e-9:
        return ctx.refuse(None, f"counts contradict {_MEAN} {al}")
    yield Observation(ctx.path, None, "atom", "atom-mtp-stats", k, steps, tokens, accepted,
                      per_pos, al, None, None, None, None, extra)
