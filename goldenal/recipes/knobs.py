"""How recipe text spells a knob: the one table ``inject`` and ``audit`` match.

Built from the engines' records (:mod:`goldenal.engines.table`); forms and captures are in
docs/architecture.md ("Knobs in text: one table").  A pattern starts with the name (a line
costs a substring search); :meth:`Spelling.start` to ``m.end()`` spans the whole setting.
"""

import re
from dataclasses import dataclass
from functools import cached_property

from goldenal.recipes.shell import lex

# what a spelling carries
LENGTH, RATES, RATE, K = "length", "rates", "rate", "k"
METHOD, DRAFT, MODEL, SERVED, DSPARK = "method", "draft", "model", "served", "dspark"
TOKEN_MODE, ACC_METHOD = "token_mode", "acc_method"
TOPK, ONE_MODEL = "topk", "one_model"
FLAG, ENV, KEY = "flag", "env", "key"

# Value grammars; each has the groups ``q`` and ``value``.
# A scalar: one optional quote around it, ``${...}`` read whole; it stops at
# what ends a JSON or YAML flow value (``,``, ``}``) and at ``;``.  A ``${``
# looks for its ``}`` no further than the next ``$`` (linear on ``${${${...``).
_SCALAR = r"""(?P<q>["']?)(?P<value>(?:\$\{[^}\s$]*\}|[^"'\s,;}])+)(?P=q)?"""
# comma-separated rates after a flag or ``=`` (``1,0.83,0``)
_CSV = r"""(?P<q>["']?)(?P<value>[^"'\s;}]+)(?P=q)?"""
# a JSON/YAML list of rates, as a key's value
_LIST = r"(?P<q>)(?P<value>\[[^\]]*\])"
# a shell word, quotes kept: paths, methods, JSON configs
_WORD = r"""(?P<q>)(?P<value>'[^']*'|"[^"]*"|[^\s\\;|&]+)"""

_FLAG_SEP = r"(?P<sep>=|(?:[ \t]|\\\r?\n)+)"
_VALUES = {LENGTH: _SCALAR, RATE: _SCALAR, K: _SCALAR, TOKEN_MODE: _SCALAR,
           ACC_METHOD: _SCALAR, RATES: _CSV, METHOD: _WORD, DRAFT: _WORD, MODEL: _WORD,
           SERVED: _WORD, DSPARK: _WORD, TOPK: _SCALAR, ONE_MODEL: _SCALAR}


@dataclass(frozen=True)
class Spelling:
    """One knob or spec setting as recipe text spells it."""

    engine: str       # an engine's name, or ``runner``
    name: str         # as written: ``--flag``, ``ENV_NAME``, ``key``
    setting: str      # what it carries: length, rates, rate, k, method, draft, model, ...
    form: str         # flag, env or key
    head_source: str  # the regex of the spelling up to its value
    value_source: str  # the regex of its value

    # Compiled on first use: an audit runs a few of the table's patterns, and
    # compiling all of them costs a CLI run more than reading a recipe tree.
    @cached_property
    def pattern(self):
        """The spelling with its value."""
        return re.compile(self.head_source + self.value_source)

    @cached_property
    def head(self):
        """The spelling up to its value: it is being given one."""
        return re.compile(self.head_source)

    def start(self, m):
        """Where a match starts: a key's opening quote (or ``\\"``) included."""
        at = m.start("name")
        if self.form == KEY and at and m.string[at - 1] in "\"'":
            at -= 1
            if at and m.string[at - 1] == "\\":
                at -= 1
        return at

    def search(self, text, pos=0):
        """The first match at or after ``pos``; None when ``name`` is absent (no regex run)."""
        if self.name not in text:
            return None
        return self.pattern.search(text, pos)


def _head(name, form, key_seps=":"):
    # The name comes first, so a search runs at the speed of a substring search;
    # the lookbehind after it checks the character before it.
    quoted = re.escape(name)
    head = rf"(?P<name>{quoted})(?<![\w-]{quoted})"
    if form == FLAG:
        return head + _FLAG_SEP
    if form == ENV:
        return head + "(?P<sep>=)"
    return head + rf"(?![\w-])(?:\\?[\"'])?[ \t]*(?P<sep>[{key_seps}])[ \t]*"


def row(engine, name, setting, form, key_seps=":"):
    """The :class:`Spelling` of one row of an engine record's ``spellings``."""
    value = _LIST if (setting == RATES and form == KEY) else _VALUES[setting]
    return Spelling(engine, name, setting, form, _head(name, form, key_seps), value)


def select(rows, engine=None, setting=None, form=None, names=None):
    """The ``rows`` matching every criterion, ordered by ``names`` (remembered)."""
    key = (id(rows), engine, setting, form, names)
    try:
        hit = _SELECTED.get(key)
    except TypeError:       # a criterion that cannot be hashed: answered afresh
        hit = key = None
    if hit is not None and hit[0] is rows:
        return hit[1]

    def ok(value, wanted):
        return wanted is None or value == wanted or (isinstance(wanted, tuple)
                                                     and value in wanted)

    out = [s for s in rows if ok(s.engine, engine) and ok(s.setting, setting)
           and ok(s.form, form)]
    if names is not None:
        out = [s for n in names for s in out if s.name == n]
    out = tuple(out)
    if key is not None and isinstance(rows, tuple) and len(_SELECTED) < 4096:
        _SELECTED[key] = rows, out      # the rows kept: their id is never another's
    return out


_SELECTED = {}


def _comment_start(text, line_start):
    """Where the ``#`` comment of the line starting at ``line_start`` begins (its end if none)."""
    end = text.find("\n", line_start)
    end = len(text) if end < 0 else end
    if "#" in text[line_start:end]:
        for kind, start, _, _ in lex(text[line_start:end])[0]:
            if kind == "#":
                return line_start + start
    return end


def commented(text, index):
    """True when ``index`` sits in a ``#`` comment, as the shell lexer reads its line."""
    return index >= _comment_start(text, text.rfind("\n", 0, index) + 1)


def finditer(text, rows, pos=0, endpos=None, *, comments=False):
    """``(row, match)`` of each match in ``text``, in file order; each line is lexed once."""
    endpos = len(text) if endpos is None else endpos
    found = []
    for row in rows:
        if row.name in text:
            found.extend((m.start(), row, m) for m in row.pattern.finditer(text, pos, endpos))
    found.sort(key=lambda item: item[0])
    if comments or not found:
        return [(row, m) for _, row, m in found]
    out = []
    line_start = text.rfind("\n", 0, found[0][0]) + 1
    line_end = text.find("\n", line_start)
    comment = None
    for at, row, m in found:
        if line_end >= 0 and at > line_end:       # a later line: move forward to it
            line_start = text.rfind("\n", line_end, at) + 1
            line_end = text.find("\n", line_start)
            comment = None
        if comment is None:
            comment = _comment_start(text, line_start)
        if at < comment:
            out.append((row, m))
    return out


def first_set(text, rows, *, number=False):
    """``(row, match)`` where ``text`` first gives one of ``rows`` a value, or None."""
    best = None
    for row in rows:
        if row.name not in text:
            continue
        for m in (row.pattern if number else row.head).finditer(text):
            if number and not m.group("value").lstrip("[")[:1].isdigit():
                continue
            if best is None or m.start("name") < best[1].start("name"):
                best = (row, m)
            break
    return best


def lines_naming(lines, names, text=None):
    """Indexes of the lines holding one of ``names``, searching the joined text (``text``)."""
    text = "\n".join(lines) if text is None else text
    found = set()
    for name in names:
        row, prev = 0, 0
        at = text.find(name)
        while at >= 0:
            row += text.count("\n", prev, at)
            found.add(row)
            prev = text.find("\n", at)
            if prev < 0:
                break
            at = text.find(name, prev)
    return sorted(found)
