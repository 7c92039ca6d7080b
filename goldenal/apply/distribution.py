"""Per-position acceptance rates S(i) = AL(i) - AL(i-1) implied by a golden curve (a position's
acceptance does not depend on how many more are drafted), projected onto vLLM's valid rate
lists (docs/engines.md §1.2): clip(PAVA(S) + lambda, 0, 1) summing to AL(K) - 1, 6 decimals.
"""

from decimal import Decimal

from goldenal.core.acceptance import implied_survival, pava_nonincreasing
from goldenal.core.errors import PolicyError

SCALE = 10 ** 6  # rates are written with 6 decimals


def _shift_to_sum(p, total):
    """The lambda with sum(clip(p + lambda, 0, 1)) == total (p non-increasing)."""
    k = len(p)
    if not 0 <= total <= k:
        raise ValueError(f"sum {total} is outside [0, {k}]")
    # Breakpoints of the piecewise-linear sum: where an entry hits 0 or 1.
    points = sorted({-x for x in p} | {1 - x for x in p})

    def g(lam):
        return sum(min(1.0, max(0.0, x + lam)) for x in p)

    lo = points[0]
    for hi in points:
        if g(hi) >= total:
            break
        lo = hi
    else:
        return points[-1]
    g_lo, g_hi = g(lo), g(hi)
    if g_hi == g_lo:
        return hi
    return lo + (total - g_lo) * (hi - lo) / (g_hi - g_lo)


def project_rates(survival, total):
    """Project survivals S(1..K) onto vLLM's valid rate lists summing to ``total`` = AL(K) - 1."""
    k = len(survival)
    if k == 0:
        raise ValueError("`survival` must have at least one entry")
    target_units = int((Decimal(str(total)) * SCALE).to_integral_value())
    target = target_units / SCALE
    fitted = pava_nonincreasing(survival)
    lam = _shift_to_sum(fitted, target)
    x = [min(1.0, max(0.0, v + lam)) for v in fitted]
    units = [int(round(v * SCALE)) for v in x]
    # Rounding is monotone, so units stay non-increasing and inside [0, SCALE].
    residual = target_units - sum(units)
    while residual > 0:
        i = next(j for j, u in enumerate(units) if u < SCALE)
        units[i] += 1
        residual -= 1
    while residual < 0:
        i = max(j for j, u in enumerate(units) if u > 0)
        units[i] -= 1
        residual += 1
    return [u / SCALE for u in units]


def curve_survival(curve, *, k, thinking):
    """Survivals S(1..K) = AL(i) - AL(i-1) of a registry curve and its AL at K."""
    cells = curve.cells.get(thinking, {})
    try:
        survival = implied_survival(cells, int(k))
    except KeyError as exc:
        i = exc.args[0]
        raise PolicyError(f"--distribution needs every cell of curve {curve.id} up to K={k}; "
                          f"thinking {thinking}, K={i} is {cells.get(i) or 'missing'}") from None
    return [float(s) for s in survival], cells[int(k)]


def acceptance_rates(curve, *, k, thinking):
    """The rates knob's value for one cell of a golden curve: 1 + sum is the committed AL."""
    survival, al_text = curve_survival(curve, k=k, thinking=thinking)
    return project_rates(survival, Decimal(al_text) - 1)
