"""The exact conversion of a committed AL to an engine's knob value, in decimal strings."""


def add_decimal(text, delta):
    """Add the integer ``delta`` to a decimal string exactly (``"2.83"``, -1: ``"1.83"``)."""
    text = text.strip()
    sign = -1 if text.startswith("-") else 1
    whole, _, frac = text.lstrip("+-").partition(".")
    scale = 10 ** len(frac)
    units = sign * int((whole or "0") + frac) + delta * scale
    magnitude = abs(units)
    out = str(magnitude // scale)
    if frac:
        out += "." + str(magnitude % scale).zfill(len(frac))
    return ("-" if units < 0 else "") + out


def acceptance_rate(al_text, k):
    """(AL - 1) / K as a decimal string: exact when it terminates, else to 12 decimals."""
    from decimal import Decimal
    from goldenal.core.errors import PolicyError

    if isinstance(k, bool) or not k or int(k) <= 0:
        raise PolicyError("the rate form needs K > 0")
    q = (Decimal(al_text) - 1) / Decimal(int(k))
    text = format(q.quantize(Decimal("1e-12")), "f").rstrip("0").rstrip(".")
    return text or "0"


def record_value(rec, al_text, *, k=None, form=None, forms=()):
    """The knob value of record ``rec`` for a committed AL (``form="rate"``: (AL - 1) / K)."""
    if form not in (None, "length"):
        if form != "rate" or form not in forms:
            raise ValueError(f"`form` must be length or rate ({rec.title}: "
                             f"{', '.join(forms) or 'length'}), got {form!r}")
        return acceptance_rate(al_text, k)
    if not rec.offset:
        return al_text
    value = add_decimal(al_text, rec.offset)
    if value.startswith("-") or not value.strip("0."):
        from goldenal.core.errors import PolicyError

        raise PolicyError(f"golden AL {al_text} would need {rec.value_knob}={value}, which "
                          f"{rec.title} reads as 'forcing off'; AL 1.00 cannot be "
                          "expressed on this engine")
    return value


def carries_golden(written, al_text, *, unit="length", k=None):
    """Does a knob's ``written`` value carry the golden AL ``al_text`` at its precision
    (docs/policy.md §2, rule 7: ``0.6633`` carries 2.99 at K=3 as a rate, ``0.6634`` not)?"""
    from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

    try:
        value = Decimal(str(written).strip().strip("'\""))
        golden = Decimal(str(al_text).strip())
    except (InvalidOperation, ValueError):
        return False
    if not value.is_finite() or not golden.is_finite():
        return False
    if unit == "rate":
        if not k or int(k) <= 0:
            return False
        golden = (golden - 1) / Decimal(int(k))
    elif unit == "accepted":
        golden -= 1
    elif unit != "length":
        raise ValueError(f"`unit` must be one of length, rate, accepted, got {unit!r}")
    if value == golden:
        return True
    places = max(0, -value.as_tuple().exponent)
    if places < max(0, -Decimal(str(al_text).strip()).as_tuple().exponent):
        return False        # coarser than the committed cell: 3.0 is not 2.99
    step = Decimal(1).scaleb(-places)
    try:
        return any(golden.quantize(step, rounding=r) == value
                   for r in (ROUND_HALF_UP, ROUND_HALF_EVEN))
    except InvalidOperation:        # more decimals than the context holds: not a rounding
        return False
