"""vLLM client-side reports: ``vllm bench serve`` JSON and console (docs/formats.md §3),
the offline example (§1.6) and per-request metrics (§4), named by the engine record.
"""

import json
import math
import os
import re

from goldenal.readers import _io
from goldenal.readers._base import (Context, as_count, balanced, counts_from_rates,
                                    survival_from_histogram)
from goldenal.readers.records import record
from goldenal.core.observation import Observation

_FIELDS, _LOG = record("vllm").count_fields, record("vllm").log_lines
_METRICS, _SPEC = _FIELDS["request"]
_STEPS, _ACCEPTED, _PROPOSED, _K, _HIST, _MEAN = (_FIELDS[key][0] for key in (
    "steps", "accepted", "proposed", "k", "histogram", "length"))
# a bench result's keys, each key's names (its alias second)
_B_STEPS, _B_ACCEPTED, _B_PROPOSED, _B_MEAN, _B_PCT, _B_RATES = (
    _FIELDS["bench_" + key] for key in ("steps", "accepted", "proposed", "length", "rate",
                                        "per_position"))
_B_PREFIX = os.path.commonprefix([names[0] for names in (_B_STEPS, _B_ACCEPTED, _B_MEAN)])
_HEADER, _DRAFTS, _DRAFT_TOKENS, _ACCEPTED_TOKENS, _LENGTH, _PER_POSITION, _POSITION = \
    _LOG["console"]
_O_TOTAL, _O_DRAFTS, _O_TOKENS, _O_ACCEPTED, _O_MEAN, _O_AT = _LOG["offline"]


def sniff_json(head: str) -> bool:
    return f'"{_B_PREFIX}' in head


def sniff_console(head: str) -> bool:
    return _HEADER + "---" in head


def sniff_offline(head: str) -> bool:
    return f"{_O_DRAFTS}:" in head and f"{_O_ACCEPTED}:" in head


def sniff_request(head: str) -> bool:
    return f'"{_SPEC}"' in head or f'"{_STEPS}"' in head


def _get(doc, names):
    return next((doc[name] for name in names if name in doc), None)


def _count(value, what, ctx):
    count = as_count(value)
    return ctx.refuse(None, f"{what} is {value!r}, not a count") if count is None else count


def read_json(path, ctx: Context):
    """The one window of a ``vllm bench serve --save-result`` JSON file."""
    try:
        doc = json.loads(_io.read_text(path))
    except json.JSONDecodeError as exc:
        return ctx.refuse(exc.lineno, f"not valid JSON: {exc.msg} (truncated file?)")
    if not isinstance(doc, dict):
        return ctx.refuse(None, "expected a JSON object (a bench serve result)")
    if _get(doc, _B_STEPS) is None:
        return ctx.refuse(None, f"no {_B_PREFIX}* counts: the server did not speculate, "
                                "or the client could not read /metrics (401 behind --api-key)")
    drafts = _count(doc[_B_STEPS[0]], _B_STEPS[0], ctx)
    accepted = _count(_get(doc, _B_ACCEPTED), _B_ACCEPTED[0], ctx)
    tokens = _get(doc, _B_PROPOSED)
    tokens = None if tokens is None else _count(tokens, _B_PROPOSED[0], ctx)
    if drafts is None or accepted is None:
        return
    if drafts == 0:
        return ctx.refuse(None, f"{_B_STEPS[0]} is 0: nothing measured")
    rates = doc.get(_B_RATES[0])
    mean = doc.get(_B_MEAN[0])
    pct = doc.get(_B_PCT[0])
    k = len(rates) if isinstance(rates, list) and rates else None
    if tokens and k is None and tokens % drafts == 0:
        k = tokens // drafts
    per_pos = None
    if isinstance(rates, list) and rates:
        if not all(isinstance(r, (int, float)) and 0 <= r <= 1 for r in rates):
            return ctx.refuse(None, f"{_B_RATES[0]} must be fractions in [0, 1]")
        # the JSON stores c_i / D as full floats, so rounding recovers c_i exactly
        per_pos = counts_from_rates(drafts, rates, accepted, 1e-6)
        if per_pos is None:
            return ctx.refuse(None, f"per-position rates disagree with {_B_ACCEPTED[0]}")
        if tokens is not None and tokens % drafts == 0 and tokens // drafts != k:
            return ctx.refuse(None, f"per-position list has {k} entries but draft tokens / drafts "
                                    f"= {tokens // drafts}")
    if isinstance(mean, float) and not math.isfinite(mean):
        return ctx.refuse(None, f"{_B_MEAN[0]} is {mean!r}, not a mean")
    if isinstance(mean, (int, float)) and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
        ctx.refuse(None, f"counts contradict the printed mean: 1 + {accepted}/{drafts} = "
                         f"{1 + accepted / drafts:.4f} vs {_B_MEAN[0]} {mean}")
        return
    if isinstance(pct, (int, float)) and tokens and \
            abs(100 * accepted / tokens - pct) > 0.005 + 1e-6:
        return ctx.refuse(None, f"{_B_PCT[0]} {pct} is not the percentage "
                                f"100 x {accepted}/{tokens}")
    extra = {"window": "bench run"}
    for key in ("max_concurrency", "num_prompts", "completed", "date", "model_id"):
        if key in doc:
            extra[key] = doc[key]
    yield Observation(ctx.path, None, "vllm", "vllm-bench-json", k, drafts, tokens, accepted,
                      per_pos, float(mean) if isinstance(mean, (int, float)) else None,
                      None, doc.get("date") if isinstance(doc.get("date"), str) else None,
                      None, None, extra)


_ROW = re.compile(r"^\s*([A-Za-z][A-Za-z ()%\-]*?):\s+([0-9.]+)\s*$")
_POS_ROW = re.compile(rf"^\s*{_POSITION} (\d+):\s+([0-9.]+)\s*$")


def read_console(path, ctx: Context):
    """Windows of ``vllm bench serve`` console output (its speculative decoding block)."""
    block, start = None, None

    def flush(end_line):
        return () if block is None else _console_block(block, start, end_line, ctx)

    last = 0
    for number, text, _ in _io.iter_lines(path):
        last = number
        if _HEADER + "---" in text:
            yield from flush(number - 1)
            block, start = {"positions": {}}, number
            continue
        if block is None:
            continue
        if text.startswith("====") or not text.strip() or text.startswith("----"):
            yield from flush(number)
            block = None
            continue
        m = _POS_ROW.match(text)
        if m:
            try:
                block["positions"][int(m.group(1))] = float(m.group(2))
            except ValueError:
                ctx.refuse(number, f"malformed number {m.group(2)!r}")
            continue
        m = _ROW.match(text)
        if m:
            block[m.group(1).strip()] = m.group(2)
        elif _PER_POSITION not in text:
            yield from flush(number - 1)
            block = None
    yield from flush(last)


def _console_block(block, start, end, ctx):
    try:
        drafts = int(block[_DRAFTS])
        accepted = int(block[_ACCEPTED_TOKENS])
        tokens = int(block[_DRAFT_TOKENS]) if _DRAFT_TOKENS in block else None
    except (KeyError, ValueError):
        return ctx.refuse(start, f"{_HEADER} block without {_DRAFTS} / {_ACCEPTED_TOKENS} "
                                 "(cut off?)")
    try:
        mean = float(block[_LENGTH]) if _LENGTH in block else None
    except ValueError:
        return ctx.refuse(start, f"malformed {_LENGTH} {block[_LENGTH]!r}")
    if drafts == 0:
        return ctx.refuse(start, f"{_DRAFTS} is 0: nothing measured")
    positions = block["positions"]
    k = len(positions) or (tokens // drafts if tokens and tokens % drafts == 0 else None)
    per_pos = None
    if positions:
        if sorted(positions) != list(range(len(positions))):
            return ctx.refuse(start, f"position rows {sorted(positions)} are not 0..K-1")
        if tokens is not None and tokens % drafts == 0 and tokens // drafts != k:
            return ctx.refuse(start, f"{k} position rows but {_DRAFT_TOKENS} / {_DRAFTS} = "
                                     f"{tokens // drafts}")
        # console rows are percentages with two decimals: +-0.005 %
        per_pos = counts_from_rates(drafts, [positions[i] / 100 for i in range(k)],
                                    accepted, 0.00005 + 1e-9)
        if per_pos is None:
            return ctx.refuse(start, f"position rows disagree with {_ACCEPTED_TOKENS} / {_DRAFTS}")
    if mean is not None and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
        return ctx.refuse(start, f"counts contradict the printed mean: 1 + {accepted}/{drafts} = "
                                 f"{1 + accepted / drafts:.4f} vs {_LENGTH} {mean}")
    yield Observation(ctx.path, start, "vllm", "vllm-bench-console", k, drafts, tokens,
                      accepted, per_pos, mean, end, None, None, None, {"window": "bench run"})


_OFFLINE = re.compile(r"^\s*(" + "|".join(map(re.escape, _LOG["offline"][:-1]))
                      + rf"|{re.escape(_O_AT)} (\d+)):\s*([0-9.]+)\s*$")


def read_offline(path, ctx: Context):
    """Windows of the offline example's printout (one per block of counts)."""
    block, start, last = None, None, 0
    for number, text, _ in _io.iter_lines(path):
        last = number
        m = _OFFLINE.match(text)
        if not m:
            continue
        key, pos, value = m.group(1), m.group(2), m.group(3)
        if key == _O_TOTAL or (key == _O_DRAFTS and block and _O_DRAFTS in block):
            if block and _O_DRAFTS in block:
                yield from _offline_block(block, start, number - 1, ctx)
            block, start = {"rows": {}}, number
        if block is None:
            block, start = {"rows": {}}, number
        if pos is not None:
            try:
                block["rows"][int(pos)] = float(value)
            except ValueError:
                ctx.refuse(number, f"malformed number {value!r}")
                continue
        else:
            block[key] = value
    if block and _O_DRAFTS in block:
        yield from _offline_block(block, start, last, ctx)


def _offline_block(block, start, end, ctx):
    try:
        drafts = int(block[_O_DRAFTS])
        tokens = int(block[_O_TOKENS])
        accepted = int(block[_O_ACCEPTED])
    except (KeyError, ValueError):
        return ctx.refuse(start, f"offline example block without {_O_DRAFTS} / {_O_TOKENS} / "
                                 f"{_O_ACCEPTED}")
    if drafts == 0:
        return ctx.refuse(start, f"{_O_DRAFTS} is 0: nothing measured")
    try:
        mean = float(block[_O_MEAN]) if _O_MEAN in block else None
    except ValueError:
        return ctx.refuse(start, f"malformed {_O_MEAN} {block[_O_MEAN]!r}")
    if tokens % drafts:
        return ctx.refuse(start, f"{_O_TOKENS} {tokens} is not a multiple of {_O_DRAFTS} "
                                 f"{drafts}: K unknown")
    k = tokens // drafts
    rows = block["rows"]
    per_pos = None
    if rows:
        if sorted(rows) != list(range(len(rows))):
            return ctx.refuse(start, f"'{_O_AT}' rows {sorted(rows)} are not 0..n-1")
        if len(rows) < k:
            return ctx.refuse(start, f"{len(rows)} '{_O_AT}' rows but K = "
                                     f"{_O_TOKENS} / {_O_DRAFTS} = {k}")
        if any(rows[i] != 0 for i in range(k, len(rows))):
            return ctx.refuse(start, f"non-zero '{_O_AT}' rows beyond K={k}")
        per_pos = counts_from_rates(drafts, [rows[i] for i in range(k)], accepted, 0.005 + 1e-9)
        if per_pos is None:
            return ctx.refuse(start, f"'{_O_AT}' rows disagree with {_O_ACCEPTED}")
    if mean is not None and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
        return ctx.refuse(start, f"counts contradict the printed mean: 1 + {accepted}/{drafts} = "
                                 f"{1 + accepted / drafts:.4f} vs {mean}")
    yield Observation(ctx.path, start, "vllm", "vllm-offline", k, drafts, tokens, accepted,
                      per_pos, mean, end, None, None, None, {"window": "whole run"})


def _walk_requests(doc):
    """Every per-request metrics mapping in a response (or list of responses)."""
    if isinstance(doc, list):
        for item in doc:
            yield from _walk_requests(item)
    elif isinstance(doc, dict):
        metrics = doc.get(_METRICS)
        if isinstance(metrics, dict) and _SPEC in metrics:
            yield doc.get("id"), metrics[_SPEC]
        elif _STEPS in doc:
            yield doc.get("id"), doc


def read_requests(path, ctx: Context):
    """Per-request windows from responses: JSON, or excerpts holding whole per-request
    metrics objects."""
    text = _io.read_text(path)
    try:
        found = [(None, rid, spec) for rid, spec in _walk_requests(json.loads(text))]
    except json.JSONDecodeError:
        found = []
        for m in re.finditer(rf'"{_SPEC}"\s*:\s*(?=[{{n])', text):
            line = text.count("\n", 0, m.start()) + 1
            body = balanced(text, m.end())
            if text.startswith("null", m.end()):
                found.append((line, None, None))
                continue
            try:
                found.append((line, None, json.loads(body or "")))
            except json.JSONDecodeError as exc:
                ctx.refuse(line, f"{_SPEC} object is not valid JSON: {exc.msg}")
    for n, (line, rid, spec) in enumerate(found, 1):
        if spec is None:  # null for n > 1 requests
            ctx.remark(line, f"{_SPEC} is null (n > 1 request): skipped")
            continue
        obs = _request(spec, rid or str(n), line, ctx)
        if obs is not None:
            yield obs


def request_metrics(answer):
    """The per-request metrics mapping of an answer or stream chunk, or None."""
    metrics = answer.get(_METRICS)
    spec = metrics.get(_SPEC) if isinstance(metrics, dict) else None
    return spec if isinstance(spec, dict) else None


def request_counts(spec):
    """``(steps, draft tokens, accepted, per position)`` of one request's
    metrics mapping, or None."""
    def count(value):
        return isinstance(value, int) and not isinstance(value, bool)

    if not isinstance(spec, dict):
        return None
    drafts, accepted = spec.get(_STEPS), spec.get(_ACCEPTED)
    if not count(drafts) or not count(accepted):
        return None
    hist = spec.get(_HIST)
    per_pos = None
    if isinstance(hist, list) and hist and all(map(count, hist)) and sum(hist) == drafts:
        per_pos = tuple(drafts - sum(hist[:i + 1]) for i in range(len(hist) - 1))
    return drafts, spec.get(_PROPOSED), accepted, per_pos


def _request(spec, rid, line, ctx):
    drafts, accepted, tokens, k, hist = (spec.get(key) for key in (
        _STEPS, _ACCEPTED, _PROPOSED, _K, _HIST))
    if not isinstance(drafts, int) or not isinstance(accepted, int) or drafts < 0 \
            or accepted < 0:
        return ctx.refuse(line, f"request {rid}: no {_STEPS} / {_ACCEPTED}")
    per_pos = None
    if isinstance(hist, list) and hist:
        if not all(isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in hist):
            return ctx.refuse(line, f"request {rid}: {_HIST} holds a non-count")
        if sum(hist) != drafts or sum(j * h for j, h in enumerate(hist)) != accepted:
            ctx.refuse(line, f"request {rid}: {_HIST} disagrees with the counts")
            return None
        if isinstance(k, int) and len(hist) != k + 1:
            return ctx.refuse(line, f"request {rid}: histogram has {len(hist)} entries, "
                                    f"{_K}={k} needs {k + 1}")
        per_pos = survival_from_histogram(hist)
    mean = spec.get(_MEAN)
    if drafts == 0:
        return None
    if isinstance(mean, (int, float)) and abs(1 + accepted / drafts - mean) > 1e-6:
        return ctx.refuse(line, f"request {rid}: counts contradict {_MEAN} {mean}")
    return Observation(ctx.path, line, "vllm", "vllm-request", k if isinstance(k, int) else None,
                       drafts, tokens if isinstance(tokens, int) else None, accepted, per_pos,
                       mean if isinstance(mean, (int, float)) else None, None, None, str(rid),
                       None, {})
