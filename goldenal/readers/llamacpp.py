"""llama.cpp server (``llama-server``) speculative statistics.

From ggml-org/llama.cpp PR #24536 (FORMATS.md section 8): a per-request line
``draft acceptance = r ( a accepted / g generated), mean acceptance length = X,
acceptance rate per position = (s_0, ...)`` (no step count: D is rebuilt from
the survival list as for vLLM) and an aggregate ``statistics`` line with
``#gen drafts`` (D), ``#acc tokens`` (A), ``#gen tokens`` (T),
``#mean acc len`` and ``#acc rate/pos``.  Per-request lines are preferred;
the aggregate lines are used only when a file has none (they would count the
same steps twice).
"""

from __future__ import annotations

import re

from goldenal.readers import _io
from goldenal.readers._base import Context, counts_from_rates, derive_drafts
from goldenal.observation import Observation

MARKERS = (b"acceptance rate per position", b"#gen drafts")
_REQ = re.compile(r"\(\s*(\d+) accepted /\s*(\d+) generated\).*?mean acceptance length =\s*"
                  r"([0-9.]+).*?acceptance rate per position = \(([^)]*)\)")
_TASK = re.compile(r"\btask (\d+)")
_STAT = {"drafts": re.compile(r"#gen drafts =\s*(\d+)"),
         "accepted": re.compile(r"#acc tokens =\s*(\d+)"),
         "tokens": re.compile(r"#gen tokens =\s*(\d+)"),
         "mean": re.compile(r"#mean acc len =\s*([0-9.]+)"),
         "rates": re.compile(r"#acc rate/pos = \(([^)]*)\)")}


def sniff(head: str) -> bool:
    return "acceptance rate per position" in head or "#gen drafts" in head


def _rates(text):
    return [float(x) for x in text.split(",") if x.strip()]


def read(path, ctx: Context):
    stats = []
    requests = 0
    for line, text, terminated in _io.scan(path, MARKERS):
        m = _REQ.search(text)
        if m:
            requests += 1
            accepted, tokens = int(m.group(1)), int(m.group(2))
            try:
                mean, rates = float(m.group(3)), _rates(m.group(4))
            except ValueError:
                ctx.refuse(line, "malformed acceptance rate per position")
                continue
            task = _TASK.search(text)
            derived = derive_drafts(accepted, rates, half=0.0005, mean=mean)
            if derived is None:
                ctx.refuse(line, f"counts contradict the printed mean {mean}")
                continue
            steps, per_pos, how = derived
            yield Observation(ctx.path, line, "llama.cpp", "llamacpp-request", len(rates), steps,
                              tokens, accepted, per_pos, mean, None, None,
                              task.group(1) if task else str(requests), None,
                              {"drafts_from": how})
            continue
        if "#gen drafts" in text:
            fields = {name: rx.search(text) for name, rx in _STAT.items()}
            if fields["drafts"] is None or fields["accepted"] is None:
                ctx.refuse(line, "statistics line without #gen drafts / #acc tokens")
                continue
            stats.append((line, fields))
    if requests:
        return
    for line, f in stats:
        drafts, accepted = int(f["drafts"].group(1)), int(f["accepted"].group(1))
        if drafts == 0:
            continue
        try:
            mean = float(f["mean"].group(1)) if f["mean"] else None
        except ValueError:
            ctx.refuse(line, f"malformed #mean acc len {f['mean'].group(1)!r}")
            continue
        if mean is not None and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
            ctx.refuse(line, f"counts contradict the printed mean: 1 + {accepted}/{drafts} "
                             f"vs #mean acc len {mean}")
            continue
        per_pos, k = None, None
        if f["rates"]:
            try:
                rates = _rates(f["rates"].group(1))
            except ValueError:
                ctx.refuse(line, "malformed #acc rate/pos")
                continue
            k = len(rates)
            per_pos = counts_from_rates(drafts, rates, accepted, 0.0005 + 1e-9)
            if per_pos is None:
                ctx.refuse(line, "#acc rate/pos disagrees with #acc tokens / #gen drafts")
                continue
        yield Observation(ctx.path, line, "llama.cpp", "llamacpp-statistics", k, drafts,
                          int(f["tokens"].group(1)) if f["tokens"] else None, accepted, per_pos,
                          mean, None, None, None, None, {})
