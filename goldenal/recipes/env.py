"""Environment blocks: a YAML mapping of variables, and ``KEY=value`` files."""

from collections import Counter

from goldenal.recipes import spans
from goldenal.recipes.shell import ASSIGNMENT


def quote_style(env):
    """The quote character most values of an environment mapping use."""
    styles = Counter(v.style for _, v in spans.pairs(env)
                     if spans.is_scalar(v) and v.style in ("'", '"'))
    return styles.most_common(1)[0][0] if styles else '"'


def env_file_values(text):
    """``{KEY: (value, line, start, end, quote)}`` of a ``KEY=value`` file's text."""
    out = {}
    for m in ASSIGNMENT.finditer(text):
        raw = m.group("raw")
        quote = raw[0] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else ""
        value = raw[1:-1] if quote else raw
        line = text.count("\n", 0, m.start()) + 1
        out[m.group("key")] = (value, line, m.start("raw"), m.end("raw"), quote)
    return out
