"""Read synthetic-acceptance knobs back from launcher shell scripts.

Launchers set the knobs with ``export`` lines, build a speculative-config
JSON in a string (the knob key followed by ``2.49`` or ``%.2f`` filled from a
variable), or pass server flags.  Each engine's adapter reads its own
(:meth:`~goldenal.engines.base.EngineAdapter.read_script`); by default it
finds each knob, the K written nearby and simple ``NAME=value`` variables so
``$VAR`` values can be resolved.  Read-only
(``inject`` rewrites the command lines of the engines that plan them).
"""

import os

from goldenal.engines.knobs import MODULES
from goldenal.recipes.shell import literal_variables
from goldenal.core.files import read_text


def read_shell_settings(path, text=None):
    """Every synthetic-acceptance knob written in a shell script.

    Returns
    -------
    list of SpecSetting
        ``value`` is the value as written (e.g. ``2.99``, ``$SPEC_DECODE_AL``,
        ``%.2f``); ``extra["resolved"]`` holds the literal it resolves to
        through the script's own assignments, when it does.
    """
    path = os.fspath(path)
    if text is None:
        text = read_text(path, universal=True)
    variables = literal_variables(text)
    out = [s for m in MODULES.values() for s in m.ADAPTER.read_script(path, text, variables)]
    out.sort(key=lambda s: (s.line, s.col))
    return out
