"""SGLang: decode-batch log lines, per-request ``meta_info``, ``/server_info``, bench summaries.

Facts (docs/formats.md §5; sgl-project/sglang:python/sglang/srt/managers/
scheduler_metrics_mixin.py@01bb3c807f7e62c19a31de7548837505488c2b64):

* ``Decode batch. ... accept len: X.XX`` is (accepted drafts + one bonus per
  request-step) / request-steps over the last decode-log interval: the AL with
  the bonus **already included**.  The step count is not printed, so each line
  is a mean-only window.  TokenSpeed prints ``avg_accept_len`` the same way.
* ``meta_info``: ``spec_verify_ct`` (D), ``spec_accept_token_num`` (A, late
  2025 on), ``spec_draft_token_num`` (T), ``completion_tokens``;
  ``spec_accept_length = completion_tokens / spec_verify_ct``.  Without A the
  accepted count is rebuilt as ``completion_tokens - spec_verify_ct``, which is
  high by at most one token per request (the prefill token), and marked so.
* ``/server_info`` ``internal_states[*].avg_spec_accept_length``: lifetime
  mean per scheduler (nulls for idle DP ranks): mean-only, never differenced.
* bench scripts: ``Acceptance length: X.XX`` (bonus included), mean-only.
"""

from __future__ import annotations

import json
import math
import re

from goldenal.readers import _io
from goldenal.readers._base import Context, number
from goldenal.observation import Observation

LOG_MARKERS = (b"Decode batch", b"Acceptance length:", b"num_steps=")
_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)?\s*([^\]]*)\]")
_ACCEPT = re.compile(r"\b(?:accept len|avg_accept_len):\s*([0-9.]+|nan)\b")
_BENCH = re.compile(r"\bAcceptance length:\s*([0-9.]+)")
_STEPS = re.compile(r"num_steps=(\d+)")
_META_KEYS = ("spec_verify_ct", "spec_accept_token_num", "spec_draft_token_num",
              "completion_tokens", "spec_accept_length", "spec_num_correct_drafts",
              "spec_num_proposed_drafts")


def sniff_log(head: str) -> bool:
    return ("Decode batch" in head and ("accept len" in head or "avg_accept_len" in head)) \
        or ("#questions:" in head and "Acceptance length:" in head)


def sniff_json(head: str) -> bool:
    return any(s in head for s in ('"spec_verify_ct"', '"internal_states"',
                                   '"avg_spec_accept_length"'))


def read_log(path, ctx: Context):
    """Mean-only windows: one per decode-batch line (or bench summary line)."""
    k = ctx.k_hint
    for line, text, terminated in _io.scan(path, LOG_MARKERS):
        m = _STEPS.search(text)
        if m and "Decode batch" not in text:
            k = int(m.group(1))  # bench heading "EAGLE-3 (num_steps=8):" names K
            continue
        if "Decode batch" in text:
            m = _ACCEPT.search(text)
            if m is None:
                continue  # speculation off: no accept len field
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
            fmt = "tokenspeed-log" if "avg_accept_len" in text else "sglang-log"
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
    """(line, object) for a JSON document, JSON lines, or fragments holding meta_info keys."""
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
        if '"spec_verify_ct"' in s:
            # an excerpt of a response: read the flat numeric keys of this line
            pairs = dict(re.findall(r'"(\w+)"\s*:\s*(-?[0-9.eE+]+)', s))
            yield number_, {"meta_info": {key: number(v) for key, v in pairs.items()}}


def _walk(doc, found):
    if isinstance(doc, dict):
        if "spec_verify_ct" in doc:
            found.append(("request", doc))
            return
        if "internal_states" in doc or "avg_spec_accept_length" in doc:
            found.append(("server_info", doc))
            return
        for value in doc.values():
            _walk(value, found)
    elif isinstance(doc, list):
        for value in doc:
            _walk(value, found)


def read_json(path, ctx: Context):
    """Per-request windows from ``meta_info`` and mean-only windows from ``/server_info``."""
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


def _int(obj, key):
    value = obj.get(key)
    # json reads NaN and Infinity as floats: neither is a count
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value != int(value) or value < 0:
        return None
    return int(value)


def _meta(meta, line, n, ctx):
    drafts = _int(meta, "spec_verify_ct")
    accepted = _int(meta, "spec_accept_token_num")
    if accepted is None:
        accepted = _int(meta, "spec_num_correct_drafts")
    tokens = _int(meta, "spec_draft_token_num")
    if tokens is None:
        tokens = _int(meta, "spec_num_proposed_drafts")
    completion = _int(meta, "completion_tokens")
    printed = meta.get("spec_accept_length")
    rid = meta.get("id") if isinstance(meta.get("id"), str) else str(n)
    if drafts is None:
        ctx.refuse(line, f"request {rid}: spec_verify_ct is not a count")
        return None
    if drafts == 0:
        return None
    extra = {}
    if isinstance(printed, (int, float)) and completion is not None:
        # spec_accept_length is defined as completion_tokens / spec_verify_ct
        if abs(completion / drafts - printed) > 1e-6:
            ctx.refuse(line, f"request {rid}: spec_accept_length {printed} is not "
                             f"completion_tokens / spec_verify_ct = {completion / drafts:.6f}")
            return None
    if accepted is None:
        if completion is None:
            return Observation(ctx.path, line, "sglang", "sglang-request", ctx.k_hint, None,
                               None, None, None, printed, None, None, rid, None, {})
        accepted = max(completion - drafts, 0)
        extra["approximate"] = "accepted = completion_tokens - spec_verify_ct (+1 high if " \
                               "the prefill token is counted)"
    elif completion is not None and not 0 <= completion - drafts - accepted <= 1:
        ctx.remark(line, f"request {rid}: completion_tokens {completion} != spec_verify_ct "
                         f"{drafts} + accepted {accepted} (+1)")
    k = tokens // drafts if tokens and tokens % drafts == 0 else ctx.k_hint
    hist = meta.get("spec_correct_drafts_histogram")
    per_pos = None
    if isinstance(hist, list) and hist and all(isinstance(h, int) for h in hist):
        from goldenal.readers._base import survival_from_histogram

        if sum(hist) == drafts and sum(j * h for j, h in enumerate(hist)) == accepted:
            per_pos = survival_from_histogram(hist)
        else:
            ctx.refuse(line, f"request {rid}: spec_correct_drafts_histogram disagrees with "
                             "the counts")
            return None
    return Observation(ctx.path, line, "sglang", "sglang-request", k, drafts, tokens, accepted,
                       per_pos, float(printed) if isinstance(printed, (int, float)) else None,
                       None, None, rid, None, extra)


def _server_info(doc, line, ctx):
    states = doc.get("internal_states")
    values = []
    if isinstance(states, list):
        values = [(i, s.get("avg_spec_accept_length") if isinstance(s, dict) else s)
                  for i, s in enumerate(states)]
    elif "avg_spec_accept_length" in doc:
        values = [(0, doc["avg_spec_accept_length"])]
    for rank, value in values:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue  # null for DP ranks without traffic
        yield Observation(ctx.path, line, "sglang", "sglang-server-info", ctx.k_hint, None, None,
                          None, None, float(value), None, None, None, None,
                          {"rank": rank, "window": "server lifetime"})
