"""Read synthetic-acceptance knobs back from launcher shell scripts, each engine's by its
adapter."""

from goldenal.engines.base import script_text
from goldenal.engines.knobs import MODULES
from goldenal.recipes.shell import literal_variables


def read_shell_settings(path, text=None):
    """Every synthetic-acceptance knob of a shell script (``extra["resolved"]``: its literal)."""
    path, text = script_text(path, text)
    variables = literal_variables(text)
    out = [s for m in MODULES.values() for s in m.ADAPTER.read_script(path, text, variables)]
    out.sort(key=lambda s: (s.line, s.col))
    return out
