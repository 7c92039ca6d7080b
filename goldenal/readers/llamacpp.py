"""llama.cpp server (``llama-server``) speculative statistics in its log (docs/formats.md §8).

Per-task lines (D rebuilt from the printed figures, else mean-only), the last
cumulative ``statistics`` line when there are none, and the start-up synthetic
acceptance line, kept as a fact for ``verify``.
"""

import math
import re
from collections import namedtuple

from goldenal.readers import _io
from goldenal.readers._base import Context, counts_from_rates, derive_drafts
from goldenal.readers.observations import ServerStart
from goldenal.readers.records import record
from goldenal.core.observation import Observation

NAME = "llamacpp"
_LOG = record(NAME).log_lines
_ACCEPTANCE, _MEAN_LEN, _PER_POS_NAME = _LOG["task"]
_DRAFTS, _ACCEPTED, _TOKENS, _MEAN, _RATES, _CALLS_NAME = _LOG["statistics"]
_SYNTH_NAME, _REDUCED_NAME = _LOG["synthetic"]
_OLD_MEAN, _OLD_RATES = _LOG["old"]
_SERVER = record(NAME).launch_word
_K_FLAG = next(row[0] for row in record(NAME).spellings if row[1:] == ("k", "flag"))
MARKERS = tuple(name.encode() for name in (
    f"{_ACCEPTANCE} =", f"{_PER_POS_NAME} =", _DRAFTS, _SYNTH_NAME.partition(":")[0], _OLD_RATES))
_SLOT = re.compile(r"\bid\s+(\d+) \| task (-?\d+)")
# current (vendored 0.3.36) per-task line and its trace companion
_TASK_LINE = re.compile(rf"{re.escape(_ACCEPTANCE)} =\s*[0-9.naif]+\s*\(\s*(\d+) accepted /"
                        rf"\s*(\d+) generated\),\s*{re.escape(_MEAN_LEN)} =\s*([0-9.]+)\s*$")
_PER_POS = re.compile(rf"{re.escape(_PER_POS_NAME)} = \(([^)]*)\)")
_SYNTH = re.compile(rf"{re.escape(_SYNTH_NAME)} = (\d+), mean length = ([0-9.]+), "
                    r"rates = \[([^\]]*)\]")
_REDUCED = re.compile(rf"{re.escape(_REDUCED_NAME)} (\d+) to (\d+)")
_CALLS = re.compile(rf"statistics\s+(\S+): {re.escape(_CALLS_NAME)} =\s*(\d+)\s+(\d+)\s+(\d+)")
# PR #24536 spelling
_REQ = re.compile(rf"\(\s*(\d+) accepted /\s*(\d+) generated\).*?{re.escape(_OLD_MEAN)} =\s*"
                  rf"([0-9.]+).*?{re.escape(_OLD_RATES)} = \(([^)]*)\)")
_TASK = re.compile(r"\btask (\d+)")
_STAT = {key: re.compile(re.escape(name) + value) for key, name, value in zip(
    ("drafts", "accepted", "tokens", "mean", "rates"), _LOG["statistics"],
    (r" =\s*(\d+)", r" =\s*(\d+)", r" =\s*(\d+)", r" =\s*([0-9.]+)", r" = \(([^)]*)\)"))}


def sniff(head: str) -> bool:
    return (f"{_ACCEPTANCE} =" in head and f"{_MEAN_LEN} =" in head) or \
        _OLD_RATES in head or _DRAFTS in head or _SYNTH_NAME in head


def _rates(text):
    return [float(x) for x in text.split(",") if x.strip()]


def _steps_from_mean(accepted, drafted, mean, k):
    """``(D, how)`` from the printed mean length and the draft tokens (T / K <= D <= T), or None:
    the one D printing the mean, else T / K when it is among several."""
    if drafted <= 0:
        return None
    lo, hi = 1, drafted
    if k:
        lo = max(lo, math.ceil(drafted / k))
    if accepted:
        if mean - 1 + 0.005 > 0:
            lo = max(lo, math.ceil(accepted / (mean - 1 + 0.005) - 1e-9))
        if mean - 1 - 0.005 > 0:
            hi = min(hi, math.floor(accepted / (mean - 1 - 0.005) + 1e-9))
    found = [d for d in range(lo, hi + 1) if f"{1 + accepted / d:.2f}" == f"{mean:.2f}"] \
        if hi - lo < 100000 else []
    if len(found) == 1:
        return found[0], "mean"
    if k and drafted % k == 0 and drafted // k in found:
        return drafted // k, "drafted/k"
    return None


# a per-task line waiting for its trace per-position companion
_Pending = namedtuple("_Pending", "line slot accepted drafted mean")


def _task_observation(p, rates, ctx, request, logged_k=None):
    extra = {}
    k = len(rates) if rates is not None else (ctx.k_hint or logged_k)
    if rates is not None:
        derived = derive_drafts(p.accepted, rates, half=0.0005, mean=p.mean,
                                drafted=p.drafted, k=len(rates))
        if derived is None:
            ctx.refuse(p.line, f"counts contradict the printed figures: {p.accepted} accepted, "
                               f"{_MEAN_LEN} {p.mean:.2f}, {_PER_POS_NAME} {rates}")
            return None
        steps, per_pos, how = derived
    else:
        per_pos = None
        found = _steps_from_mean(p.accepted, p.drafted, p.mean, k)
        if found is None:
            extra["ambiguous"] = "no step count reproduces the printed mean uniquely"
            return Observation(ctx.path, p.line, "llamacpp", "llamacpp-task", k, None,
                               p.drafted, p.accepted, None, p.mean, None, None, request, None,
                               extra)
        steps, how = found
        if how == "drafted/k":
            extra["approximate"] = True
    extra["drafts_from"] = how
    return Observation(ctx.path, p.line, "llamacpp", "llamacpp-task", k, steps, p.drafted,
                       p.accepted, per_pos, p.mean, None, None, request, None, extra)


def read(path, ctx: Context):
    stats = []           # PR #24536 statistics lines
    calls = {}           # impl -> (line, text) of its last cumulative statistics line
    requests = 0
    pending = None
    out = []
    logged_k = None      # n_max of the synthetic start-up line: the server's effective K

    def flush(rates=None):
        nonlocal pending
        if pending is not None:
            o = _task_observation(pending, rates, ctx, pending.slot[1] if pending.slot else None,
                                  logged_k)
            if o is not None:
                out.append(o)
        pending = None

    for line, text, terminated in _io.scan(path, MARKERS):
        slot = _SLOT.search(text)
        slot_key = slot.groups() if slot else None
        m = _PER_POS.search(text)
        if m and _PER_POS_NAME in text:
            if pending is not None and pending.slot == slot_key:
                try:
                    rates = _rates(m.group(1))
                except ValueError:
                    ctx.refuse(line, f"malformed {_PER_POS_NAME}")
                    rates = None
                flush(rates)
            continue
        m = _TASK_LINE.search(text)
        if m:
            flush()
            requests += 1
            try:
                mean = float(m.group(3))
            except ValueError:  # the pattern's [0-9.]+ also takes "1.72.001"
                ctx.refuse(line, f"malformed {_MEAN_LEN} {m.group(3)!r}")
                continue
            pending = _Pending(line, slot_key, int(m.group(1)), int(m.group(2)), mean)
            yield from out
            out.clear()
            continue
        m = _SYNTH.search(text)
        if m:
            flush()
            logged_k = int(m.group(1))
            try:
                length, rates = float(m.group(2)), _rates(m.group(3))
                ctx.facts.setdefault("server_start", []).append(ServerStart(
                    line, logged_k, _K_FLAG, synthetic=True, knob=length, pinned=length,
                    stated=f"{_SERVER} resolved its synthetic acceptance to mean length "
                           f"{length:g} (rates {rates})"))
            except ValueError:
                ctx.remark(line, f"malformed {_SYNTH_NAME.partition(':')[0]} start-up line")
            continue
        m = _REDUCED.search(text)
        if m:
            ctx.facts.setdefault("draft_limit_reduced", []).append(
                {"line": line, "from": int(m.group(1)), "to": int(m.group(2))})
            continue
        m = _REQ.search(text)
        if m:
            flush()
            requests += 1
            accepted, tokens = int(m.group(1)), int(m.group(2))
            try:
                mean, rates = float(m.group(3)), _rates(m.group(4))
            except ValueError:
                ctx.refuse(line, f"malformed {_OLD_RATES}")
                continue
            task = _TASK.search(text)
            derived = derive_drafts(accepted, rates, half=0.0005, mean=mean)
            if derived is None:
                ctx.refuse(line, f"counts contradict the printed mean {mean}")
                continue
            steps, per_pos, how = derived
            out.append(Observation(ctx.path, line, "llamacpp", "llamacpp-request", len(rates),
                                   steps, tokens, accepted, per_pos, mean, None, None,
                                   task.group(1) if task else str(requests), None,
                                   {"drafts_from": how}))
            yield from out
            out.clear()
            continue
        if _DRAFTS in text:
            c = _CALLS.search(text)
            if c:
                calls[c.group(1)] = (line, text, c)
                continue
            fields = {name: rx.search(text) for name, rx in _STAT.items()}
            if fields["drafts"] is None or fields["accepted"] is None:
                ctx.refuse(line, f"statistics line without {_DRAFTS} / {_ACCEPTED}")
                continue
            stats.append((line, fields))
    flush()
    yield from out
    if requests:
        return
    for impl, (line, text, c) in calls.items():
        yield from _cumulative(ctx, line, text, impl, int(c.group(4)))
    for line, f in stats:
        drafts, accepted = int(f["drafts"].group(1)), int(f["accepted"].group(1))
        if drafts == 0:
            continue
        try:
            mean = float(f["mean"].group(1)) if f["mean"] else None
        except ValueError:
            ctx.refuse(line, f"malformed {_MEAN} {f['mean'].group(1)!r}")
            continue
        if mean is not None and abs(1 + accepted / drafts - mean) > 0.005 + 1e-9:
            ctx.refuse(line, f"counts contradict the printed mean: 1 + {accepted}/{drafts} "
                             f"vs {_MEAN} {mean}")
            continue
        per_pos, k = None, None
        if f["rates"]:
            try:
                rates = _rates(f["rates"].group(1))
            except ValueError:
                ctx.refuse(line, f"malformed {_RATES}")
                continue
            k = len(rates)
            per_pos = counts_from_rates(drafts, rates, accepted, 0.0005 + 1e-9)
            if per_pos is None:
                ctx.refuse(line, f"{_RATES} disagrees with {_ACCEPTED} / {_DRAFTS}")
                continue
        yield Observation(ctx.path, line, "llamacpp", "llamacpp-statistics", k, drafts,
                          int(f["tokens"].group(1)) if f["tokens"] else None, accepted, per_pos,
                          mean, None, None, None, None, {})


def _cumulative(ctx, line, text, impl, steps):
    """The last cumulative statistics line of one implementation: since server start."""
    f = {name: rx.search(text) for name, rx in _STAT.items()}
    if f["accepted"] is None:
        return ctx.refuse(line, f"statistics line without {_ACCEPTED}")
    accepted = int(f["accepted"].group(1))
    if steps == 0:
        return
    try:
        mean = float(f["mean"].group(1)) if f["mean"] else None
        rates = _rates(f["rates"].group(1)) if f["rates"] else None
    except ValueError:
        return ctx.refuse(line, f"malformed {_MEAN} or {_RATES}")
    if mean is not None and f"{1 + accepted / steps:.2f}" != f"{mean:.2f}":
        return ctx.refuse(line, f"counts contradict the printed mean: 1 + {accepted}/{steps} vs "
                                f"{_MEAN} {mean}")
    per_pos, k = None, ctx.k_hint
    tokens = int(f["tokens"].group(1)) if f["tokens"] else None
    drafts = int(f["drafts"].group(1)) if f["drafts"] else None
    if k is None and tokens and drafts:
        # each draft holds at most K tokens; exact when most are full
        k = math.ceil(tokens / drafts)
    if rates is not None:
        # the list grows only to the deepest position ever accepted: pad to K
        if k is not None and len(rates) < k:
            rates += [0.0] * (k - len(rates))
        k = len(rates)
        per_pos = counts_from_rates(steps, rates, accepted, 0.0005 + 1e-9)
        if per_pos is None:
            return ctx.refuse(line, f"{_RATES} disagrees with {_ACCEPTED} / #calls")
    extra = {"implementation": impl, "window": "since-start"}
    if ctx.k_hint is None:
        extra["k_from"] = f"ceil({_TOKENS} / {_DRAFTS})"
    yield Observation(ctx.path, line, "llamacpp", "llamacpp-statistics", k, steps, tokens,
                      accepted, per_pos, mean, None, None, None, None, extra)
