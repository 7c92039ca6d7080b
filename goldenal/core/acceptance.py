"""Acceptance arithmetic shared by every layer: survival, schedules, isotonic fits; exact
Fractions of the committed decimals, standard library only.  Notation: docs/formats.md
§0.2, docs/engines.md §0.1-§0.2, docs/policy.md §4."""

import math
from fractions import Fraction


def exact_fraction(value):
    """A number as a Fraction: decimal strings and floats by their decimal spelling."""
    if isinstance(value, bool):
        raise TypeError(f"expected a number, got {value!r}")
    if isinstance(value, (Fraction, int)):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        # the shortest repr is how the value was written (0.83, not 0.8299999...)
        return Fraction(repr(float(value)))
    try:
        return Fraction(str(value).strip())
    except ValueError:
        raise ValueError(f"expected a number, got {value!r}") from None


def min_variance_schedule(al, k):
    """vLLM's minimum-variance rates ``r_1..r_K`` for an AL (``_acceptance_length_to_rates``)."""
    k = positive_k(k)
    length = exact_fraction(al)
    if not 1 <= length <= k + 1:
        raise ValueError(f"`al` must be in [1, {k + 1}] for K={k}, got {al}")
    d = length - 1
    f = math.floor(d)
    rates = [Fraction(1)] * f + [d - f]
    rates += [Fraction(0)] * (k - len(rates))
    return tuple(rates[:k])


def implied_survival(cells, k):
    """``S(i) = AL(i) - AL(i-1)`` from ``{K: AL}``; KeyError for a missing K.  Noise can
    make it increase or go negative (:func:`is_survival`)."""
    k = positive_k(k)
    previous = Fraction(1)
    out = []
    for i in range(1, k + 1):
        text = cells.get(i)
        if text is None or str(text).strip().upper() == "N/A":
            raise KeyError(i)
        value = exact_fraction(text)
        out.append(value - previous)
        previous = value
    return tuple(out)


def conditional_rates(survival):
    """Conditional acceptance ``a_i = S(i) / S(i-1)`` (``S(0) = 1``), None where undefined."""
    return tuple(None if previous <= 0 else s / previous
                 for previous, s in zip((Fraction(1), *survival), survival))


def is_survival(survival):
    """True when the values form a survival function: in [0, 1], non-increasing."""
    return all(0 <= s <= previous for previous, s in zip((1, *survival), survival))


def accepted_drafts_distribution(survival):
    """P(X = j) = S(j) - S(j+1), j = 0..K, for X = accepted drafts in one verification step."""
    values = [exact_fraction(s) for s in survival]
    if not is_survival(values):
        raise ValueError("`survival` must be non-increasing within [0, 1], got "
                         + ", ".join(str(v) for v in values))
    padded = [Fraction(1)] + values + [Fraction(0)]
    return tuple(padded[j] - padded[j + 1] for j in range(len(values) + 1))


def accepted_drafts_variance(survival):
    """Variance of the accepted drafts (and of the tokens, ``X + 1``) per verification step."""
    pmf = accepted_drafts_distribution(survival)
    mean = sum(j * p for j, p in enumerate(pmf))
    return sum(j * j * p for j, p in enumerate(pmf)) - mean * mean


def positive_k(k):
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"`k` must be a positive integer, got {k!r}")
    return k


def pava_nonincreasing(values, weights=None):
    """The nearest non-increasing sequence in weighted squared error (pool adjacent
    violators), keeping the weighted sum."""
    weights = [1.0] * len(values) if weights is None else [float(w) for w in weights]
    blocks = []  # [weighted mean, weight, length]; merge while a later block is higher
    for value, weight in zip(values, weights):
        blocks.append([float(value), weight, 1])
        while len(blocks) > 1 and blocks[-1][0] > blocks[-2][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return [mean for mean, _, n in blocks for _ in range(n)]


def histogram_from_survival(steps, per_position):
    """Lengths histogram from survival counts c_1..c_K given ``D`` = steps (their inverse)."""
    counts = (steps, *per_position)
    return (*(a - b for a, b in zip(counts, counts[1:])), counts[-1])
