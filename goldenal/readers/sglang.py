"""SGLang: decode-batch log lines, per-request counts, ``/server_info``, bench summaries.

Facts pinned to SGLang 0.5.23 in docs/formats.md §5.  Sources: docs/engines.md §2.7.
:func:`request_counts` is the one reader of per-request counts, ``measure``'s too.
"""

from __future__ import annotations

import json
import math
import re
from typing import NamedTuple

from goldenal.readers import _io
from goldenal.readers._base import Context, number
from goldenal.readers.records import record
from goldenal.core.observation import Observation

_LOG = record("sglang").log_lines
(_DECODE,), (_LEN, _TS_LEN), (_B_LEN, _B_STEPS, _B_QUESTIONS), (_S_LEN, _S_HEAD, _S_BACKEND) = (
    _LOG[key] for key in ("decode", "length", "bench", "serving"))
LOG_MARKERS = (_DECODE.encode(), f"{_B_LEN}:".encode(), f"{_S_LEN}:".encode(),
               f"{_B_STEPS}=".encode())
# bench_serving against an SGLang server: its mean is the server's (/server_info)
_SERVING_SGLANG = re.compile(rf"^{re.escape(_S_BACKEND)}:\s+sglang", re.M)
_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)?\s*([^\]]*)\]")
_ACCEPT = re.compile(rf"\b(?:{re.escape(_LEN)}|{_TS_LEN}):\s*([0-9.]+|nan)\b")
_BENCH = re.compile(rf"\b(?:{re.escape(_B_LEN)}|{re.escape(_S_LEN)}):\s*([0-9.]+)")
_STEPS = re.compile(rf"{_B_STEPS}=(\d+)")
# the per-request count fields, newest name first (the engine record)
_FIELDS = record("sglang").count_fields
META_KEY = _FIELDS["meta"][0]
DRAFT_KEYS = tuple(zip(_FIELDS["accepted"], _FIELDS["proposed"]))
HISTOGRAM_KEYS = _FIELDS["histogram"]
STEPS_KEY = _FIELDS["steps"][0]
_DETAILS = _FIELDS["details"]
_LENGTH = _FIELDS["length"][0]
_STATES, _SERVER_MEAN = _FIELDS["server_mean"]


class InconsistentCounts(ValueError):
    """A request's counts contradict each other (a histogram that does not add up)."""


class RequestCounts(NamedTuple):
    """One request's speculative counts, as SGLang reported them."""

    steps: int
    proposed: int | None
    accepted: int
    per_position: tuple | None      # accepted drafts per position 1..K, None if not given
    approximate: bool               # accepted rebuilt as completion_tokens - steps


def spec_details(answer):
    """The per-request count mapping of one chat completion (or final stream chunk): the
    first choice's, else the details extension's (a list when n > 1)."""
    if not isinstance(answer, dict):
        return None
    choices = answer.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
            and isinstance(choices[0].get(META_KEY), dict) and STEPS_KEY in choices[0][META_KEY]:
        return choices[0][META_KEY]
    ext = answer.get(_DETAILS[0])
    details = ext.get(_DETAILS[1]) if isinstance(ext, dict) else None
    if isinstance(details, list):
        details = details[0] if details else None
    return details if isinstance(details, dict) else None


def request_counts(meta, k=None):
    """A request's counts from SGLang's per-request mapping or its details extension.

    None when there are no steps to count.  The histogram is grown on demand
    (``schedule_batch.py:1566``, where a step's count is added), so its length is
    1 + the most drafts accepted in one step: it is padded to K+1.
    Without an accepted-draft count, accepted is ``completion_tokens - steps``
    (the printed length is ``completion_tokens`` / steps), marked
    approximate, unless the histogram gives it exactly.

    Raises
    ------
    InconsistentCounts
        The histogram does not add up to the steps and accepted drafts, or says
        a step accepted more than K drafts.
    """
    steps = _int(meta, STEPS_KEY)
    if not steps:
        return None
    accepted = proposed = None
    for accepted_key, proposed_key in DRAFT_KEYS:
        if _int(meta, accepted_key) is not None:
            accepted, proposed = _int(meta, accepted_key), _int(meta, proposed_key)
            break
    if k is None and proposed and proposed % steps == 0:
        k = proposed // steps
    hist = next((meta[key] for key in HISTOGRAM_KEYS if key in meta), None)
    if hist is not None and hist != []:
        hist = _histogram(hist, steps, accepted, k)
        accepted = sum(i * h for i, h in enumerate(hist))
    approximate = False
    if accepted is None:
        tokens = _int(meta, "completion_tokens")
        if tokens is None or tokens < steps:
            return None
        accepted, approximate = tokens - steps, True
    if k is not None and accepted > k * steps:
        raise InconsistentCounts(f"{accepted} accepted drafts in {steps} steps of K={k}")
    per_position = None
    if hist and k is not None:
        per_position = tuple(sum(hist[i + 1:]) for i in range(k))
    return RequestCounts(steps, proposed, accepted, per_position, approximate)


def _histogram(hist, steps, accepted, k):
    """The histogram as K+1 counts (when K is known), or raise InconsistentCounts."""
    if not isinstance(hist, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in hist):
        raise InconsistentCounts("the acceptance histogram is not a list of counts")
    if k is not None:
        if any(hist[k + 1:]):
            raise InconsistentCounts(f"the acceptance histogram {hist} has steps accepting "
                                     f"more than K={k} drafts")
        hist = hist[:k + 1] + [0] * (k + 1 - len(hist))
    if sum(hist) != steps:
        raise InconsistentCounts(f"the acceptance histogram {hist} counts {sum(hist)} steps, "
                                 f"{STEPS_KEY} {steps}")
    if accepted is not None and sum(i * h for i, h in enumerate(hist)) != accepted:
        raise InconsistentCounts(f"the acceptance histogram {hist} counts "
                                 f"{sum(i * h for i, h in enumerate(hist))} accepted drafts, "
                                 f"the request {accepted}")
    return hist


def sniff_log(head: str) -> bool:
    return (_DECODE in head and (_LEN in head or _TS_LEN in head)) \
        or (f"{_B_QUESTIONS}:" in head and f"{_B_LEN}:" in head) \
        or (_S_HEAD in head and f"{_S_LEN}:" in head and bool(_SERVING_SGLANG.search(head)))


def sniff_json(head: str) -> bool:
    return any(f'"{s}"' in head for s in (STEPS_KEY, _STATES, _SERVER_MEAN))


def read_log(path, ctx: Context):
    """Mean-only windows: one per decode-batch line (or bench summary line)."""
    k = ctx.k_hint
    for line, text, terminated in _io.scan(path, LOG_MARKERS):
        m = _STEPS.search(text)
        if m and _DECODE not in text:
            k = int(m.group(1))  # a bench heading ("EAGLE-3 (...=8):") names K
            continue
        if _DECODE in text:
            m = _ACCEPT.search(text)
            if m is None:
                continue  # speculation off: no mean in the line
            if not terminated and not text.rstrip().endswith(","):
                ctx.refuse(line, "truncated last line")
                continue
            try:
                value = float(m.group(1))
            except ValueError:
                ctx.refuse(line, f"malformed accept length {m.group(1)!r}")
                continue
            if value != value:
                continue
            stamp = _STAMP.search(text)
            extra = {"interval": "decode-log-interval"}
            if stamp and stamp.group(2).strip():
                extra["rank"] = stamp.group(2).strip()
            fmt = "tokenspeed-log" if _TS_LEN in text else "sglang-log"
            yield Observation(ctx.path, line, "sglang", fmt, k, None, None, None, None, value,
                              None, stamp.group(1) if stamp else None, None, None, extra)
            continue
        m = _BENCH.search(text)
        if m:
            try:
                value = float(m.group(1))
            except ValueError:
                ctx.refuse(line, f"malformed acceptance length {m.group(1)!r}")
                continue
            yield Observation(ctx.path, line, "sglang", "sglang-bench", k, None, None, None,
                              None, value, None, None, None, None,
                              {"window": "bench run"})


def _objects(text, ctx):
    """(line, object) for a JSON document, JSON lines, or fragments holding count keys."""
    try:
        yield None, json.loads(text)
        return
    except json.JSONDecodeError:
        pass
    for number_, line in enumerate(text.splitlines(), 1):
        s = line.strip().rstrip(",")
        if s.startswith("{"):
            try:
                yield number_, json.loads(s)
                continue
            except json.JSONDecodeError:
                pass
        if f'"{STEPS_KEY}"' in s:
            # an excerpt of a response: read the flat numeric keys of this line
            pairs = dict(re.findall(r'"(\w+)"\s*:\s*(-?[0-9.eE+]+)', s))
            yield number_, {META_KEY: {key: _number_or_text(v) for key, v in pairs.items()}}


def _walk(doc, found):
    if isinstance(doc, dict):
        if STEPS_KEY in doc:
            found.append(("request", doc))
            return
        if _STATES in doc or _SERVER_MEAN in doc:
            found.append(("server_info", doc))
            return
        for value in doc.values():
            _walk(value, found)
    elif isinstance(doc, list):
        for value in doc:
            _walk(value, found)


def read_json(path, ctx: Context):
    """Per-request windows from the count mappings and mean-only windows from
    ``/server_info``."""
    n = 0
    for line, doc in _objects(_io.read_text(path), ctx):
        found = []
        _walk(doc, found)
        for kind, obj in found:
            if kind == "server_info":
                yield from _server_info(obj, line, ctx)
                continue
            n += 1
            obs = _meta(obj, line, n, ctx)
            if obs is not None:
                yield obs


def _number_or_text(text):
    """A number of an excerpt's flat key, or the text itself when it is none
    (``+``, ``1e``): the counts' own checks then refuse it."""
    try:
        return number(text)
    except ValueError:
        return text


def _finite(value):
    """A JSON number as a finite float, else None (a bool, a string, an integer past a
    float's range, NaN or an infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _int(obj, key):
    """A count: a non-negative integer that fits 64 bits, else None."""
    value = obj.get(key) if isinstance(obj, dict) else None
    # json reads NaN and Infinity as floats: neither is a count
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value != int(value) or not 0 <= value < 2 ** 63:
        return None
    return int(value)


def _meta(meta, line, n, ctx):
    rid = meta.get("id") if isinstance(meta.get("id"), str) else str(n)
    if _int(meta, STEPS_KEY) is None:
        return ctx.refuse(line, f"request {rid}: {STEPS_KEY} is not a count")
    try:
        counts = request_counts(meta, ctx.k_hint)
    except InconsistentCounts as exc:
        return ctx.refuse(line, f"request {rid}: {exc}")
    printed = _finite(meta.get(_LENGTH))
    completion = _int(meta, "completion_tokens")
    drafts = _int(meta, STEPS_KEY)
    if printed is not None and completion is not None and drafts:
        # the printed length is defined as completion_tokens / steps
        if abs(completion / drafts - printed) > 1e-6:
            ctx.refuse(line, f"request {rid}: {_LENGTH} {printed} is not "
                             f"completion_tokens / {STEPS_KEY} = {completion / drafts:.6f}")
            return None
    if counts is None:
        if drafts and completion is None:
            return Observation(ctx.path, line, "sglang", "sglang-request", ctx.k_hint, None,
                               None, None, None, printed, None, None, rid, None, {})
        return None
    extra = {}
    if counts.approximate:
        extra["approximate"] = f"accepted = completion_tokens - {STEPS_KEY} (+1 high if " \
                               "the prefill token is counted)"
    elif completion is not None and not 0 <= completion - counts.steps - counts.accepted <= 1:
        ctx.remark(line, f"request {rid}: completion_tokens {completion} != {STEPS_KEY} "
                         f"{counts.steps} + accepted {counts.accepted} (+1)")
    k = counts.proposed // counts.steps if counts.proposed \
        and counts.proposed % counts.steps == 0 else ctx.k_hint
    return Observation(ctx.path, line, "sglang", "sglang-request", k, counts.steps,
                       counts.proposed, counts.accepted, counts.per_position, printed,
                       None, None, rid, None, extra)


def _server_info(doc, line, ctx):
    states = doc.get(_STATES)
    values = []
    if isinstance(states, list):
        values = [(i, s.get(_SERVER_MEAN) if isinstance(s, dict) else s)
                  for i, s in enumerate(states)]
    elif _SERVER_MEAN in doc:
        values = [(0, doc[_SERVER_MEAN])]
    for rank, value in values:
        value = _finite(value)
        if value is None:
            continue  # null for DP ranks without traffic
        yield Observation(ctx.path, line, "sglang", "sglang-server-info", ctx.k_hint, None, None,
                          None, None, value, None, None, None, None,
                          {"rank": rank, "window": "server lifetime"})
