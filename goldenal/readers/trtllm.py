"""TensorRT-LLM iteration statistics (docs/formats.md §6), their fields named by its record.

One JSON array, JSON lines, or records with trailing commas; null ones are counted.
"""

import json

from goldenal.readers import _io
from goldenal.readers._base import Context, as_count
from goldenal.readers.records import record
from goldenal.core.observation import Observation

NAME = "trtllm"
_STATS, _STEPS, _ACCEPTED, _PROPOSED, _LENGTH = (record(NAME).count_fields[key][0] for key in (
    "stats", "steps", "accepted", "proposed", "length"))


def sniff(head: str) -> bool:
    return f'"{_STATS}"' in head or all(f'"{name}"' in head
                                        for name in record(NAME).count_fields["iteration"])


def _records(path, ctx):
    text = _io.read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if doc is not None:
        for rec in doc if isinstance(doc, list) else [doc]:
            yield None, rec
        return
    for line, raw in enumerate(text.splitlines(), 1):
        s = raw.strip().rstrip(",").lstrip("[").rstrip("]").strip()
        if not s:
            continue
        try:
            yield line, json.loads(s)
        except json.JSONDecodeError as exc:
            ctx.refuse(line, f"iteration record is not valid JSON ({exc.msg}); cut off?")


def read(path, ctx: Context):
    """One window per iteration with non-null speculative statistics."""
    skipped = 0
    for line, rec in _records(path, ctx):
        if not isinstance(rec, dict):
            continue
        stats = rec.get(_STATS)
        if not isinstance(stats, dict):
            skipped += 1
            continue
        drafts = as_count(stats.get(_STEPS))
        accepted = as_count(stats.get(_ACCEPTED))
        tokens = as_count(stats.get(_PROPOSED))
        if drafts is None or accepted is None:
            ctx.refuse(line, f"iteration {rec.get('iter')}: {_STATS} without "
                             f"{_STEPS} / {_ACCEPTED} counts")
            continue
        if drafts == 0:
            skipped += 1
            continue
        mean = stats.get(_LENGTH)
        if isinstance(mean, bool) or not isinstance(mean, (int, float)):
            mean = None
        else:
            mean = float(mean)
        if mean is not None and abs(1 + accepted / drafts - mean) > 1e-3:
            ctx.refuse(line, f"iteration {rec.get('iter')}: counts contradict {_LENGTH} "
                             f"{mean} (1 + {accepted}/{drafts} = {1 + accepted / drafts:.4f})")
            continue
        if tokens is not None and accepted > tokens:
            ctx.refuse(line, f"iteration {rec.get('iter')}: more accepted than drafted tokens")
            continue
        k = ctx.k_hint
        if k is None and tokens and tokens % drafts == 0:
            k = tokens // drafts
        yield Observation(ctx.path, line, "trtllm", "trtllm-iteration", k, drafts, tokens,
                          accepted, None, mean, None,
                          rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
                          None, None, {"iter": rec.get("iter")})
    if skipped:
        ctx.facts["skipped_iterations"] = skipped
        ctx.remark(None, f"{skipped} iteration(s) without speculative stats skipped "
                         f"({_STATS} null: speculation off, or a one-model flow "
                         "before TensorRT-LLM PR #9855)")
