"""Read synthetic-acceptance knobs back from launcher shell scripts, each engine's by its adapter."""

import os

from goldenal.engines.knobs import MODULES
from goldenal.recipes.shell import literal_variables
from goldenal.core.files import read_text


def read_shell_settings(path, text=None):
    """Every synthetic-acceptance knob of a shell script (``extra["resolved"]``: its literal)."""
    path = os.fspath(path)
    if text is None:
        text = read_text(path, universal=True)
    variables = literal_variables(text)
    out = [s for m in MODULES.values() for s in m.ADAPTER.read_script(path, text, variables)]
    out.sort(key=lambda s: (s.line, s.col))
    return out
