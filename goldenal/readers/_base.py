"""Shared pieces of the readers: the read context and count reconstruction.

Where a format prints rounded ratios instead of counts, ``D`` and the
per-position counts are rebuilt as the integers that reproduce every printed
figure; when none do, the line contradicts itself and is refused.
"""

import math
import re
from functools import lru_cache
from math import ceil, floor

from goldenal.readers.observations import Problem


class Context:
    """Problems and facts of one reader run; ``return ctx.refuse(line, message)`` ends a window."""

    def __init__(self, path, *, k=None):
        self.path = str(path)
        self.k_hint = k
        self.problems = []
        self.facts = {}

    def refuse(self, line, message):
        self.problems.append(Problem(self.path, line, message, True))

    def remark(self, line, message):
        self.problems.append(Problem(self.path, line, message, False))


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf)", re.I)


def number(text):
    """A float from a field value such as ``"38.2%"``, ``"632 tokens"``, ``"nan%"``."""
    match = _NUMBER.match(text.strip())
    if match is None:
        raise ValueError(f"not a number: {text.strip()!r}")
    return float(match.group())


# No engine drafts near this many tokens per step; a larger K read from an input
# is refused rather than sizing lists by it.
MAX_K = 256
# Windows with more drafts than this are solved with bulk moves (see counts_from_rates)
BULK_DRAFTS = 10**7


def as_count(value):
    """A JSON value as a count (int), else None."""
    # json reads NaN and Infinity as floats: neither is a count
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def survival_from_histogram(hist):
    """``a_i = sum_{j>i} h_j`` from a histogram ``h_0..h_K`` (docs/formats.md §0.1)."""
    out = []
    running = sum(hist)
    for h in hist[:-1]:
        running -= h
        out.append(running)
    return tuple(out)


@lru_cache(maxsize=64)  # a handful of distinct values, asked once per solved window
def _decimals(half):
    """``n`` when ``half`` is the rounding of ``n`` printed decimals (``0.5e-n``, +slack)."""
    for n in range(1, 7):
        if abs(half - 0.5 * 10 ** -n) <= 2e-9:
            return n
    return None


def _prints_as(count, drafts, rate, digits):
    # the printer formats the double count/drafts; a tie in decimal is decided
    # by its binary value, so the only exact test is to format it
    return drafts > 0 and count >= 0 and \
        f"{count / drafts:.{digits}f}" == f"{rate:.{digits}f}"


def upper_count(rate, drafts, half):
    """The largest count whose survival ``count / drafts`` prints as ``rate`` (or less)."""
    x = round((rate + half) * drafts, 9)
    h = floor(x)
    digits = _decimals(half)
    if digits and x - h <= 2e-9 * drafts + 1e-9 and not _prints_as(h, drafts, rate, digits):
        h -= 1  # c/D exactly half a digit up prints as the next value, not as r
    return h


def lower_count(rate, drafts, half):
    """The smallest count whose survival prints as ``rate`` (or more); may be negative."""
    x = round((rate - half) * drafts, 9)
    low = ceil(x)
    digits = _decimals(half)
    if digits and low - x <= 2e-9 * drafts + 1e-9 and not _prints_as(low, drafts, rate, digits):
        low += 1
    return low


def counts_from_rates(drafts, rates, accepted, half):
    """Integer per-position counts for survival ``rates`` printed to ``+-half``, or None.

    Each count prints as its rate (``3/200`` is within 0.005 of 0.02 but prints
    as 0.01), the counts never grow with depth and sum to ``accepted``.
    """
    if not all(math.isfinite(r) for r in rates):
        return None  # a NaN or infinite printed rate matches no count
    # the box of each count, tightened to the order: hi_i <= hi_(i-1), lo_i >= lo_(i+1)
    # (one pass each way; this runs for a good share of the lines of a large log)
    lo, hi, top = [], [], drafts
    for r in rates:
        h = upper_count(r, drafts, half)
        if h < top:
            top = h
        hi.append(top)
        low = lower_count(r, drafts, half)
        lo.append(low if low > 0 else 0)
    last = len(lo) - 1
    for i in range(last - 1, -1, -1):
        if lo[i] < lo[i + 1]:
            lo[i] = lo[i + 1]
    counts, prev = [], drafts
    for r, a, b in zip(rates, lo, hi):
        if a > b:
            return None
        c = round(r * drafts)
        c = a if c < a else b if c > b else c
        prev = c if c < prev else prev
        counts.append(prev)
    if not sum(lo) <= accepted <= sum(hi):
        return None
    residual = accepted - sum(counts)
    step = 1 if residual > 0 else -1
    # A line claiming 10^12 drafts must not take 10^9 unit passes: beyond
    # BULK_DRAFTS the farthest count moves in bulk, then unit moves finish exactly.
    slack = 64 * len(rates) if drafts > BULK_DRAFTS else math.inf
    while residual:
        # move one unit where the exact value r*D is farthest in that direction,
        # among the moves that keep the box and the order
        best, gap = None, None
        for i, r in enumerate(rates):
            target = counts[i] + step
            if not lo[i] <= target <= hi[i]:
                continue
            if step > 0 and i > 0 and target > counts[i - 1]:
                continue
            if step < 0 and i < last and target < counts[i + 1]:
                continue
            g = (r * drafts - counts[i]) * step
            if gap is None or g > gap:
                best, gap = i, g
        if best is None:
            return None
        amount = 1
        if abs(residual) > slack:
            if step > 0:
                room = hi[best] - counts[best]
                if best > 0:
                    room = min(room, counts[best - 1] - counts[best])
            else:
                room = counts[best] - lo[best]
                if best < last:
                    room = min(room, counts[best] - counts[best + 1])
            amount = max(1, min(room, abs(residual) - slack))
        counts[best] += step * amount
        residual -= step * amount
    return tuple(counts)


def _nearest(centre, low, high, count):
    """The ``count`` integers of ``[low, high]`` nearest ``centre``, nearest first (ties:
    lower), built outward so a huge range costs no list of its size."""
    if low > high:
        return []
    first = min(max(math.ceil(centre - 0.5), low), high)
    out, left, right = [first], first - 1, first + 1
    while len(out) < count and (left >= low or right <= high):
        if right > high or (left >= low and centre - left <= right - centre):
            out.append(left)
            left -= 1
        else:
            out.append(right)
            right += 1
    return out


def derive_drafts(accepted, rates, *, half, mean=None, mean_half=0.005, drafted=None, k=None):
    """``(drafts, per_position, how)`` of a window not printing ``D``, or None.

    ``D = A / sum_i s_i`` up to rounding (docs/formats.md §1.5), ``drafted / K``
    first when consistent; ``how`` is ``"drafted/k"`` or ``"per-position"``.
    """
    total = sum(rates)
    width = half * len(rates)
    if accepted == 0:
        if drafted and k and drafted % k == 0:
            return drafted // k, tuple(0 for _ in rates), "drafted/k"
        return None
    candidates = []
    if drafted and k and drafted % k == 0:
        candidates.append((drafted // k, "drafted/k"))
    lo, hi = 1.0, math.inf
    if total + width > 0:
        lo = max(lo, accepted / (total + width))
    if total - width > 0:
        hi = min(hi, accepted / (total - width))
    if mean is not None and mean == mean:
        if mean - 1 + mean_half > 0:
            lo = max(lo, accepted / (mean - 1 + mean_half))
        if mean - 1 - mean_half > 0:
            hi = min(hi, accepted / (mean - 1 - mean_half))
    if hi < math.inf and total > 0:
        candidates.extend((d, "per-position")
                          for d in _nearest(accepted / total, math.ceil(lo - 1e-9),
                                            math.floor(hi + 1e-9), 64))
    for drafts, how in candidates:
        if drafts <= 0 or accepted > drafts * len(rates):
            continue
        if mean is not None and mean == mean and \
                abs(1 + accepted / drafts - mean) > mean_half + 1e-9:
            continue
        per_pos = counts_from_rates(drafts, rates, accepted, half + 1e-9)
        if per_pos is not None:
            return drafts, per_pos, how
    return None


def balanced(text, start):
    """The bracketed expression opening at ``text[start]``, or None if it never closes."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    if start >= len(text) or text[start] not in pairs:
        return None
    depth, quote, escape = 0, None, False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in pairs:
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None
