"""Family D windows of a log block, read column-wise from the compiled scan's records.

:func:`~goldenal.readers.vllm_log.fast_counts` on whole columns; a window it
cannot settle goes to the per-line reader, so every window reads the same.
"""

import importlib

import numpy as np

from goldenal.readers._base import lower_count, upper_count
from goldenal.readers.observations import Columns

# by name, as in vllm_log: an extension module is no node of the import graph
_logscan = importlib.import_module("goldenal.readers._logscan")

KMAX = 16  # per-position rates a record holds; longer lines are read per line
(R_LINE, R_START, R_TAG, R_STATUS, R_PID, R_STAMP, R_DP, R_MEAN, R_MEAN_DIGITS, R_ACCEPTED,
 R_DRAFTED, R_PCT, R_K) = range(13)
RATES = _logscan.REC_FIELDS
assert RATES == 13, "the record layout of _logscan.c changed"

HALF = 0.0005 + 1e-9    # vLLM prints survival with three decimals
MAX_SOLVE_STEPS = 10**7  # longer windows (none of 10 s comes close) are solved per line


def read_block(hits, buf, cut, before, number, records, rare_markers):
    """Yield the windows of one block in file order: :class:`Columns` runs and rows.

    ``records``: ``_logscan.scan`` of ``buf[:cut]``; lines mentioning ``peculative``
    or ``rare_markers`` go to ``hits`` (the per-line reader) in their place.
    """
    rec = np.frombuffer(records, np.int64).reshape(-1, RATES + KMAX)
    rare = np.flatnonzero(rec[:, R_STATUS] == 2).tolist()
    first = 0
    for stop in rare + [len(rec)]:
        if stop > first:
            yield from _segment(hits, buf, cut, before, number, rec, first, stop)
        if stop < len(rec):
            r = rec[stop].tolist()
            end = buf.find(b"\n", r[R_START], cut)
            line = bytes(buf[r[R_START]:end if end >= 0 else cut])
            if r[R_TAG] >= 0 or any(m in line for m in rare_markers):
                row = hits.read(buf, cut, before, r[R_TAG] if r[R_TAG] >= 0 else r[R_START],
                                number + r[R_LINE], r[R_START])
                if row is not None:
                    yield row
        first = stop + 1


def _segment(hits, buf, cut, before, number, rec, first, stop):
    """The windows of records ``first:stop``, none of them a rare line."""
    rec = rec[first:stop]
    n = len(rec)
    k = rec[:, R_K]
    ok = (rec[:, R_STATUS] == 0) & (rec[:, R_DP] != -2)
    known = hits.k_known
    if known is not None:
        ok &= k == known
    if ok.all() and (k == k[0]).all():  # the common segment: one K, every line matched
        settled, steps, counts = settle(rec, int(k[0]))
    else:
        settled = np.zeros(n, bool)
        steps = np.zeros(n, np.int64)
        counts = np.zeros((n, KMAX), np.int64)
        for kk in np.unique(k[ok]).tolist():
            idx = np.flatnonzero(ok & (k == kk))
            good, s, c = settle(rec[idx], kk)
            idx = idx[good]
            settled[idx] = True
            steps[idx] = s[good]
            counts[idx, :kk] = c[good]
    for start, stop, vector in _runs(settled, k):
        if vector:
            yield _columns(hits, number, rec, steps, counts, slice(start, stop))
            continue
        for r in rec[start:stop].tolist():
            row = hits.read(buf, cut, before, r[R_TAG], number + r[R_LINE], r[R_START])
            if row is not None:
                yield row


def _runs(settled, k):
    """``(start, stop, settled)`` runs of windows: settled ones of one K, or per-line ones."""
    n = len(settled)
    breaks = np.flatnonzero((settled[1:] != settled[:-1]) | (k[1:] != k[:-1])) + 1
    if not len(breaks):
        return [(0, n, bool(settled[0]))]
    bounds = [0, *breaks.tolist(), n]
    flags = settled[bounds[:-1]].tolist()
    return [(a, b, f) for a, b, f in zip(bounds[:-1], bounds[1:], flags)]


def _columns(hits, number, rec, steps, counts, rows):
    """One :class:`Columns` run of settled windows ``rows`` (a slice of the records)."""
    part = rec[rows]
    k = int(part[0, R_K])
    pid, dp = part[:, R_PID], part[:, R_DP]
    if pid.max() < 1 << 31 and dp.max() < 1 << 31:  # one number per pair: a cheap unique
        key = (pid + 1) << 32 | (dp + 1)
        pairs = np.unique(key[:64])  # a few processes and engines: seen in the first lines
        codes = pairs.searchsorted(key).clip(max=len(pairs) - 1)
        if not (pairs[codes] == key).all():
            pairs = np.unique(key)
            codes = pairs.searchsorted(key)
        pairs = zip(((pairs >> 32) - 1).tolist(), ((pairs & 0xFFFFFFFF) - 1).tolist())
    else:
        pairs, codes = np.unique(np.stack([pid, dp], axis=1), axis=0, return_inverse=True)
        pairs = pairs.tolist()
    extras = tuple(hits.extra(str(p) if p >= 0 else None, str(d) if d >= 0 else None)
                   for p, d in pairs)
    return Columns(hits.source, "vllm", "vllm-log-v1", k, part[:, R_LINE] + number,
                   steps[rows].copy(), part[:, R_DRAFTED].copy(), part[:, R_ACCEPTED].copy(),
                   counts[rows, :k].copy(), part[:, R_MEAN] / 10.0 ** part[:, R_MEAN_DIGITS],
                   part[:, R_STAMP].copy(), codes.reshape(-1), extras)


def settle(rec, k):
    """``(settled, steps, counts)`` of family D records of one K, as ``fast_counts``;
    windows not ``settled`` are left to the per-line reader."""
    accepted, drafted = rec[:, R_ACCEPTED], rec[:, R_DRAFTED]
    # the printed decimals as doubles: n / 10**d is the correctly rounded value of
    # the decimal, as float() gives, for n < 2**53 (the scan keeps them shorter)
    rates = rec[:, RATES:RATES + k] / 1000.0
    mean = rec[:, R_MEAN] / 10.0 ** rec[:, R_MEAN_DIGITS]
    pct = rec[:, R_PCT] / 10.0
    steps, rest = np.divmod(drafted, k)
    good = (rest == 0) & (drafted > 0)
    safe = np.where(good, steps, 1)
    good &= ~(np.abs(1 + accepted / safe - mean) > 0.005 + 1e-9)
    good &= ~(np.abs(100 * accepted / np.where(good, drafted, 1) - pct) > 0.05 + 1e-9)
    exact = rates * steps[:, None]
    counts = np.rint(exact)
    # the common case: rounding each rate reproduces A, strictly inside the rounding
    prev = np.concatenate([steps[:, None], counts[:, :-1]], axis=1)
    tol = 0.0005 * steps - 1e-6
    plain = good & (counts.sum(axis=1) == accepted) & \
        ((counts <= prev) & (np.abs(counts - exact) < tol[:, None])).all(axis=1)
    counts = counts.astype(np.int64)
    rest = np.flatnonzero(good & ~plain)
    if len(rest):
        solved, solution = solve(steps[rest], rates[rest], exact[rest], accepted[rest])
        counts[rest[solved]] = solution[solved]
        plain[rest[solved]] = True
    return plain, steps, counts


def solve(drafts, rates, exact, accepted):
    """``(solved, counts)``: :func:`~goldenal.readers._base.counts_from_rates` on many windows
    at once; a bound within rounding reach of an integer takes the scalar rule."""
    d = drafts[:, None].astype(float)
    high = (rates + HALF) * d
    low = (rates - HALF) * d
    hi = np.floor(high).astype(np.int64)
    lo = np.ceil(low).astype(np.int64)
    margin = 2e-9 * d + 1e-9 + 1e-6
    for i, j in np.argwhere(np.abs(high - np.rint(high)) <= margin).tolist():
        hi[i, j] = upper_count(float(rates[i, j]), int(drafts[i]), HALF)
    for i, j in np.argwhere(np.abs(low - np.rint(low)) <= margin).tolist():
        lo[i, j] = lower_count(float(rates[i, j]), int(drafts[i]), HALF)
    hi = np.minimum.accumulate(np.minimum(hi, drafts[:, None]), axis=1)
    lo = np.maximum(lo, 0)
    lo = np.maximum.accumulate(lo[:, ::-1], axis=1)[:, ::-1]
    counts = np.clip(np.rint(exact).astype(np.int64), lo, hi)
    counts = np.minimum.accumulate(np.minimum(counts, drafts[:, None]), axis=1)
    alive = (drafts <= MAX_SOLVE_STEPS) & (lo <= hi).all(axis=1) & (lo.sum(axis=1) <= accepted) & \
        (accepted <= hi.sum(axis=1))
    residual = np.where(alive, accepted - counts.sum(axis=1), 0)
    while True:
        rows = np.flatnonzero(residual)
        if not len(rows):
            break
        # move one unit where the exact value is farthest in that direction, among
        # the moves that keep each count in its box and the counts non-increasing
        step = np.sign(residual[rows])
        c = counts[rows]
        target = c + step[:, None]
        ok = (lo[rows] <= target) & (target <= hi[rows])
        up = step > 0
        ok[:, 1:] &= np.where(up[:, None], target[:, 1:] <= c[:, :-1], True)
        ok[:, :-1] &= np.where(up[:, None], True, target[:, :-1] >= c[:, 1:])
        gap = np.where(ok, (exact[rows] - c) * step[:, None], -np.inf)
        best = gap.argmax(axis=1)
        stuck = ~ok.any(axis=1)
        alive[rows[stuck]] = False
        residual[rows[stuck]] = 0
        moving = ~stuck
        counts[rows[moving], best[moving]] += step[moving]
        residual[rows[moving]] -= step[moving]
    return alive, counts
