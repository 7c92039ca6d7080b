"""Every engine's knob spellings and launch commands, derived from the records (with
:mod:`goldenal.recipes.knobs` re-exported)."""

import re

from goldenal.engines.knobs import MODULES, RUNNER_VARIABLE
from goldenal.recipes.knobs import (  # noqa: F401 (the machinery, re-exported)
    ACC_METHOD, DRAFT, DSPARK, ENV, FLAG, K, KEY, LENGTH, METHOD, MODEL, ONE_MODEL, RATE, RATES,
    SERVED, TOKEN_MODE, TOPK, Spelling, commented, finditer, first_set, lines_naming, row, select)


def _rows():
    records = [m.RECORD for m in MODULES.values()]
    rows = [row(r.name, *spelled) for r in records for spelled in r.spellings]
    # InferenceX's runner: one variable when no engine is named
    return tuple(rows + [row("runner", RUNNER_VARIABLE, LENGTH, form) for form in (ENV, KEY)])


SPELLINGS = _rows()

# The command that starts each engine's server: ``(engine, word, pattern)``; ``word``
# is a substring every match contains (a cheap test before the regex).
LAUNCHES = tuple((m.RECORD.name, word, re.compile(rx))
                 for m in MODULES.values() for word, rx in m.RECORD.launches)


def spellings(engine=None, setting=None, form=None, names=None):
    """The rows of :data:`SPELLINGS` that match every criterion given (:func:`select`)."""
    return select(SPELLINGS, engine, setting, form, names)


def spelling(engine, name, form=None):
    """The first row of ``engine`` spelled ``name`` (in ``form``, when given)."""
    rows = spellings(engine, form=form, names=(name,))
    if not rows:
        raise KeyError(f"no {engine} spelling {name!r}")
    return rows[0]


def launched_engines(text):
    """The engines whose server ``text`` starts outside comments, in order of first launch."""
    found = {}
    for engine, word, pattern in LAUNCHES:
        if word in text:
            at = next((m.start() for m in pattern.finditer(text)
                       if not commented(text, m.start())), None)
            if at is not None:
                found[engine] = min(at, found.get(engine, at))
    return tuple(sorted(found, key=found.get))
