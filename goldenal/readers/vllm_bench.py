"""vLLM client-side reports: ``vllm bench serve`` JSON and console (docs/formats.md §3),
the offline example (§1.6) and per-request ``metrics.speculative_decoding`` (§4).
"""

import json
import math
import re

from goldenal.readers import _io
from goldenal.readers._base import (Context, as_count, balanced, counts_from_rates,
                                    survival_from_histogram)
from goldenal.readers.records import record
from goldenal.core.observation import Observation

# look-alike keys some downstream tools write, the counters' names without their prefix;
# accepted as aliases only
_COUNTERS = record("vllm").metrics
_ALIASES = {"spec_decode_draft_tokens": (_COUNTERS["draft_tokens"].partition(":")[2],),
            "spec_decode_accepted_tokens": (_COUNTERS["accepted"].partition(":")[2],)}


def sniff_json(head: str) -> bool:
    return '"spec_decode_' in head


def sniff_console(head: str) -> bool:
    return "Speculative Decoding---" in head


def sniff_offline(head: str) -> bool:
    return "num_drafts:" in head and "num_accepted_tokens:" in head


def sniff_request(head: str) -> bool:
    return '"speculative_decoding"' in head or '"num_spec_steps"' in head


def _get(doc, key):
    if key in doc:
        return doc[key]
    for alias in _ALIASES.get(key, ()):
        if alias in doc:
            return doc[alias]
    return None


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
    if _get(doc, "spec_decode_num_drafts") is None:
        return ctx.refuse(None, "no spec_decode_* counts: the server did not speculate, or the "
                                "client could not read /metrics (401 behind --api-key)")
    drafts = _count(doc["spec_decode_num_drafts"], "spec_decode_num_drafts", ctx)
    accepted = _count(_get(doc, "spec_decode_accepted_tokens"), "spec_decode_accepted_tokens", ctx)
    tokens = _get(doc, "spec_decode_draft_tokens")
    tokens = None if tokens is None else _count(tokens, "spec_decode_draft_tokens", ctx)
    if drafts is None or accepted is None:
        return
    if drafts == 0:
        return ctx.refuse(None, "spec_decode_num_drafts is 0: nothing measured")
    rates = doc.get("spec_decode_per_position_acceptance_rates")
    mean = doc.get("spec_decode_acceptance_length")
    pct = doc.get("spec_decode_acceptance_rate")
    k = len(rates) if isinstance(rates, list) and rates else None
    if tokens and k is None and tokens % drafts == 0:
        k = tokens // drafts
    per_pos = None
    if isinstance(rates, list) and rates:
        if not all(isinstance(r, (int, float)) and 0 <= r <= 1 for r in rates):
            return ctx.refuse(None, "spec_decode_per_position_acceptance_rates must be fractions "
                                    "in [0, 1]")
        # the JSON stores c_i / D as full floats, so rounding recovers c_i exactly
        per_pos = counts_from_rates(drafts, rates, accepted, 1e-6)
        if per_pos is None:
            return ctx.refuse(None, "per-position rates disagree with spec_decode_accepted_tokens")
        if tokens is not None and tokens % drafts == 0 and tokens // drafts != k:
            return ctx.refuse(None, f"per-position list has {k} entries but draft tokens / drafts "
                                    f"= {tokens // drafts}")
    if isinstance(mean, float) and not math.isfinite(mean):
        return ctx.refuse(None, f"spec_decode_acceptance_length is {mean!r}, not a mean")
    if isinstance(mean, (int, float)) and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
        ctx.refuse(None, f"counts contradict the printed mean: 1 + {accepted}/{drafts} = "
                         f"{1 + accepted / drafts:.4f} vs spec_decode_acceptance_length {mean}")
        return
    if isinstance(pct, (int, float)) and tokens and \
            abs(100 * accepted / tokens - pct) > 0.005 + 1e-6:
        return ctx.refuse(None, f"spec_decode_acceptance_rate {pct} is not the percentage "
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
_POS_ROW = re.compile(r"^\s*Position (\d+):\s+([0-9.]+)\s*$")


def read_console(path, ctx: Context):
    """Windows of ``vllm bench serve`` console output (the Speculative Decoding block)."""
    block, start = None, None

    def flush(end_line):
        return () if block is None else _console_block(block, start, end_line, ctx)

    last = 0
    for number, text, _ in _io.iter_lines(path):
        last = number
        if "Speculative Decoding---" in text:
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
        elif "Per-position acceptance" not in text:
            yield from flush(number - 1)
            block = None
    yield from flush(last)


def _console_block(block, start, end, ctx):
    try:
        drafts = int(block["Drafts"])
        accepted = int(block["Accepted tokens"])
        tokens = int(block["Draft tokens"]) if "Draft tokens" in block else None
    except (KeyError, ValueError):
        return ctx.refuse(start, "Speculative Decoding block without Drafts / Accepted tokens "
                                 "(cut off?)")
    try:
        mean = float(block["Acceptance length"]) if "Acceptance length" in block else None
    except ValueError:
        return ctx.refuse(start, f"malformed Acceptance length {block['Acceptance length']!r}")
    if drafts == 0:
        return ctx.refuse(start, "Drafts is 0: nothing measured")
    positions = block["positions"]
    k = len(positions) or (tokens // drafts if tokens and tokens % drafts == 0 else None)
    per_pos = None
    if positions:
        if sorted(positions) != list(range(len(positions))):
            return ctx.refuse(start, f"position rows {sorted(positions)} are not 0..K-1")
        if tokens is not None and tokens % drafts == 0 and tokens // drafts != k:
            return ctx.refuse(start, f"{k} position rows but Draft tokens / Drafts = "
                                     f"{tokens // drafts}")
        # console rows are percentages with two decimals: +-0.005 %
        per_pos = counts_from_rates(drafts, [positions[i] / 100 for i in range(k)],
                                    accepted, 0.00005 + 1e-9)
        if per_pos is None:
            return ctx.refuse(start, "position rows disagree with Accepted tokens / Drafts")
    if mean is not None and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
        return ctx.refuse(start, f"counts contradict the printed mean: 1 + {accepted}/{drafts} = "
                                 f"{1 + accepted / drafts:.4f} vs Acceptance length {mean}")
    yield Observation(ctx.path, start, "vllm", "vllm-bench-console", k, drafts, tokens,
                      accepted, per_pos, mean, end, None, None, None, {"window": "bench run"})


_OFFLINE = re.compile(r"^\s*(num_drafts|num_draft_tokens|num_accepted_tokens|"
                      r"total_num_output_tokens|mean acceptance length|acceptance at token (\d+))"
                      r":\s*([0-9.]+)\s*$")


def read_offline(path, ctx: Context):
    """Windows of the offline example's printout (one per ``num_drafts`` block)."""
    block, start, last = None, None, 0
    for number, text, _ in _io.iter_lines(path):
        last = number
        m = _OFFLINE.match(text)
        if not m:
            continue
        key, pos, value = m.group(1), m.group(2), m.group(3)
        if key == "total_num_output_tokens" or (key == "num_drafts" and block
                                                and "num_drafts" in block):
            if block and "num_drafts" in block:
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
    if block and "num_drafts" in block:
        yield from _offline_block(block, start, last, ctx)


def _offline_block(block, start, end, ctx):
    try:
        drafts = int(block["num_drafts"])
        tokens = int(block["num_draft_tokens"])
        accepted = int(block["num_accepted_tokens"])
    except (KeyError, ValueError):
        return ctx.refuse(start, "offline example block without num_drafts / num_draft_tokens / "
                                 "num_accepted_tokens")
    if drafts == 0:
        return ctx.refuse(start, "num_drafts is 0: nothing measured")
    try:
        mean = float(block["mean acceptance length"]) if "mean acceptance length" in block else None
    except ValueError:
        return ctx.refuse(start, "malformed mean acceptance length "
                                 f"{block['mean acceptance length']!r}")
    if tokens % drafts:
        return ctx.refuse(start, f"num_draft_tokens {tokens} is not a multiple of num_drafts "
                                 f"{drafts}: K unknown")
    k = tokens // drafts
    rows = block["rows"]
    per_pos = None
    if rows:
        if sorted(rows) != list(range(len(rows))):
            return ctx.refuse(start, f"'acceptance at token' rows {sorted(rows)} are not 0..n-1")
        if len(rows) < k:
            return ctx.refuse(start, f"{len(rows)} 'acceptance at token' rows but K = "
                                     f"num_draft_tokens / num_drafts = {k}")
        if any(rows[i] != 0 for i in range(k, len(rows))):
            return ctx.refuse(start, f"non-zero 'acceptance at token' rows beyond K={k}")
        per_pos = counts_from_rates(drafts, [rows[i] for i in range(k)], accepted, 0.005 + 1e-9)
        if per_pos is None:
            return ctx.refuse(start, "'acceptance at token' rows disagree with num_accepted_tokens")
    if mean is not None and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
        return ctx.refuse(start, f"counts contradict the printed mean: 1 + {accepted}/{drafts} = "
                                 f"{1 + accepted / drafts:.4f} vs {mean}")
    yield Observation(ctx.path, start, "vllm", "vllm-offline", k, drafts, tokens, accepted,
                      per_pos, mean, end, None, None, None, {"window": "whole run"})


def _walk_requests(doc):
    """Every ``speculative_decoding`` mapping in a response (or list of responses)."""
    if isinstance(doc, list):
        for item in doc:
            yield from _walk_requests(item)
    elif isinstance(doc, dict):
        metrics = doc.get("metrics")
        if isinstance(metrics, dict) and "speculative_decoding" in metrics:
            yield doc.get("id"), metrics["speculative_decoding"]
        elif "num_spec_steps" in doc:
            yield doc.get("id"), doc


def read_requests(path, ctx: Context):
    """Per-request windows from responses: JSON, or excerpts holding whole
    ``"speculative_decoding": {...}`` objects."""
    text = _io.read_text(path)
    try:
        found = [(None, rid, spec) for rid, spec in _walk_requests(json.loads(text))]
    except json.JSONDecodeError:
        found = []
        for m in re.finditer(r'"speculative_decoding"\s*:\s*(?=[{n])', text):
            line = text.count("\n", 0, m.start()) + 1
            body = balanced(text, m.end())
            if text.startswith("null", m.end()):
                found.append((line, None, None))
                continue
            try:
                found.append((line, None, json.loads(body or "")))
            except json.JSONDecodeError as exc:
                ctx.refuse(line, f"speculative_decoding object is not valid JSON: {exc.msg}")
    for n, (line, rid, spec) in enumerate(found, 1):
        if spec is None:  # null for n > 1 requests
            ctx.remark(line, "speculative_decoding is null (n > 1 request): skipped")
            continue
        obs = _request(spec, rid or str(n), line, ctx)
        if obs is not None:
            yield obs


def request_metrics(answer):
    """The ``metrics.speculative_decoding`` mapping of an answer or stream chunk, or None."""
    metrics = answer.get("metrics")
    spec = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    return spec if isinstance(spec, dict) else None


def request_counts(spec):
    """``(steps, draft tokens, accepted, per position)`` of one request's
    ``speculative_decoding`` mapping, or None."""
    def count(value):
        return isinstance(value, int) and not isinstance(value, bool)

    if not isinstance(spec, dict):
        return None
    drafts, accepted = spec.get("num_spec_steps"), spec.get("num_accepted_draft_tokens")
    if not count(drafts) or not count(accepted):
        return None
    hist = spec.get("acceptance_histogram")
    per_pos = None
    if isinstance(hist, list) and hist and all(map(count, hist)) and sum(hist) == drafts:
        per_pos = tuple(drafts - sum(hist[:i + 1]) for i in range(len(hist) - 1))
    return drafts, spec.get("num_draft_tokens"), accepted, per_pos


def _request(spec, rid, line, ctx):
    drafts = spec.get("num_spec_steps")
    accepted = spec.get("num_accepted_draft_tokens")
    tokens = spec.get("num_draft_tokens")
    k = spec.get("num_spec_tokens")
    hist = spec.get("acceptance_histogram")
    if not isinstance(drafts, int) or not isinstance(accepted, int) or drafts < 0 \
            or accepted < 0:
        return ctx.refuse(line, f"request {rid}: no num_spec_steps / num_accepted_draft_tokens")
    per_pos = None
    if isinstance(hist, list) and hist:
        if not all(isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in hist):
            return ctx.refuse(line, f"request {rid}: acceptance_histogram holds a non-count")
        if sum(hist) != drafts or sum(j * h for j, h in enumerate(hist)) != accepted:
            ctx.refuse(line, f"request {rid}: acceptance_histogram disagrees with the counts")
            return None
        if isinstance(k, int) and len(hist) != k + 1:
            return ctx.refuse(line, f"request {rid}: histogram has {len(hist)} entries, "
                                    f"num_spec_tokens={k} needs {k + 1}")
        per_pos = survival_from_histogram(hist)
    mean = spec.get("mean_acceptance_length")
    if drafts == 0:
        return None
    if isinstance(mean, (int, float)) and abs(1 + accepted / drafts - mean) > 1e-6:
        return ctx.refuse(line, f"request {rid}: counts contradict mean_acceptance_length {mean}")
    return Observation(ctx.path, line, "vllm", "vllm-request", k if isinstance(k, int) else None,
                       drafts, tokens if isinstance(tokens, int) else None, accepted, per_pos,
                       mean if isinstance(mean, (int, float)) else None, None, None, str(rid),
                       None, {})
