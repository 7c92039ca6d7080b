"""Shell scripts as text: statements, quoting, branches and the values of variables.

The lowest layer of every reading of a launcher, shared by ``inject`` and ``audit``;
nothing is executed: lines and arms (:func:`parse`), words, symbolic expansion
(:func:`expand`), tests (:func:`evaluate_test`) and ``EVAL_ONLY`` sides (:func:`eval_paths`).
"""

import ast
import contextlib
import contextvars
import fnmatch
import functools
import math
import operator
import re

ASSIGN_RE = re.compile(
    r"^(?:(?:export|local|declare(?:\s+-[a-zA-Z]+)*|readonly|typeset)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$")
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+]|##?|%%?)([^}]*))?\}"
                     r"|\$([A-Za-z_][A-Za-z0-9_]*)")
# ``NAME=value`` on a line of its own (``export`` allowed): one word, quotes kept
ASSIGNMENT = re.compile(r"^(?P<lead>[ \t]*(?:export[ \t]+)?)(?P<key>[A-Za-z_][A-Za-z0-9_]*)="
                        r"(?P<raw>\S*)", re.M)


# ------------------------------------------------------------------ remembering

_MEMO = contextvars.ContextVar("goldenal_shell_memo", default=None)


# entries one memo holds at most (then it starts afresh): bounds a long audit's memory
MEMO_LIMIT = 1 << 18


@contextlib.contextmanager
def remembering():
    """Remember pure readings of text while open: branches and templates repeat lines."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def remembered(fn):
    """``fn`` (pure, hashable arguments) answered from the open memo; answers are shared."""
    @functools.wraps(fn)
    def answer(*args):
        memo = _MEMO.get()
        if memo is None:
            return fn(*args)
        key = (fn, args)
        try:
            return memo[key]
        except KeyError:
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            value = memo[key] = fn(*args)
            return value
    return answer


# ------------------------------------------------------------------ the lexer

# Top level and inside ``$(...)`` / backticks: a quoted string nesting no ``$(`` or backtick
# is one token; a double-quoted one that does is read in its own context.
_LEX_CODE = re.compile(r"""
    [ \t\n]+                                # blanks
  | [^\\'"$`()#; \t\n]+                     # a run of ordinary characters
  | '[^']*'                                 # single-quoted
  | "(?:[^"\\$`]|\\.|\$(?!\())*"            # double-quoted, nothing nested
  | \\.?                                    # an escape (a lone final backslash too)
  | \$\(|;;|[$`"'()#;]
""", re.X | re.S)
# inside a double-quoted string that nests ``$(`` or backticks
_LEX_DQ = re.compile(r"""(?:[^"\\$`]|\\.|\$(?!\())+|\\|\$\(|[`"]""", re.S)
_WORD_END = ("blank", ";", ";;", "(")
_LEX_SPECIAL = frozenset("\\'\"$`()#;")      # the first characters of every other token


def lex(text, stack=(), pos=0, closing=False):
    """Tokens of shell ``text``: the one place quoting and nesting are read.

    Returns ``(tokens, stack, end)``; a token is ``(kind, start, end, depth)``, ``depth`` the
    contexts open around it.  Kinds: ``blank``, ``word``, ``esc``, ``sq`` (``sq+`` unclosed,
    ``sq)`` closing an earlier one), ``dq``, ``"`` (a string that nests), ``$(``/``$)``,
    ``` ` ```/```` `) ````, ``(``/``)``, ``;``, ``;;``, ``#``.  ``stack``: the contexts open
    before and after (text spanning lines is read line by line); ``closing``: stop once closed.
    """
    stack = list(stack)
    toks = []
    n = len(text)
    prev = "blank"
    while pos < n:
        top = stack[-1] if stack else None
        depth = len(stack)
        closed = False
        if top == "'":                         # the rest of a string from an earlier line
            j = text.find("'", pos)
            depth -= 1
            if j < 0:
                kind, end = "sq+", n
            else:
                stack.pop()
                kind, end, closed = "sq)", j + 1, True
        elif top == '"':
            m = _LEX_DQ.match(text, pos)
            tok, end = m.group(), m.end()
            if tok == '"':
                stack.pop()
                depth -= 1
                kind, closed = '"', True
            elif tok == "$(" or tok == "`":
                stack.append("$" if tok == "$(" else "`")
                kind = tok
            else:
                kind = "word"
        else:
            m = _LEX_CODE.match(text, pos)
            tok = m.group()
            end = m.end()
            c = tok[0]
            if c in " \t\n":
                kind = "blank"
            elif c not in _LEX_SPECIAL:             # a run of ordinary characters
                kind = "word"
            elif c == "'":
                kind = "sq"
                if len(tok) == 1:                  # unclosed: the rest is quoted
                    stack.append("'")
                    kind, end = "sq+", n
            elif c == '"':
                kind = '"' if len(tok) == 1 else "dq"
                if kind == '"':
                    stack.append('"')
            elif c == "\\":
                kind = "esc"
            elif tok == "$(":
                stack.append("$")
                kind = "$("
            elif c == "`":
                if top == "`":
                    stack.pop()
                    depth -= 1
                    kind, closed = "`)", True
                else:
                    stack.append("`")
                    kind = "`"
            elif c == "(":
                if stack:
                    stack.append("(")
                kind = "("
            elif c == ")":
                kind = ")"
                if top == "$" or top == "(":
                    stack.pop()
                    depth -= 1
                    if top == "$":
                        kind, closed = "$)", True
            elif c == "#" and not stack and prev in _WORD_END:
                j = text.find("\n", pos)
                end = n if j < 0 else j
                kind = "#"
            elif tok == ";" or tok == ";;":
                kind = tok
            else:
                kind = "word"
        toks.append((kind, pos, end, depth))
        pos = end
        # a line continuation reads as the blank :func:`parse` joins the lines with, so the
        # text lexes the same whole or line by line (``\\`` then ``#...`` is a comment)
        prev = "blank" if kind == "esc" and tok == "\\\n" else kind
        if closing and closed and not stack:
            break
    return toks, stack, pos


@remembered
def strip_comment(text):
    """Drop a trailing ``# comment`` that is outside quotes."""
    if "#" not in text:
        return text
    for kind, start, _, _ in lex(text)[0]:
        if kind == "#":
            return text[:start]
    return text


def continues(body):
    """True when a line ends in a ``\\`` that joins the next one (``# old flags \\`` does not)."""
    if not body.endswith("\\") or body.lstrip().startswith("#"):
        return False
    return strip_comment(body).endswith("\\")


# What :func:`lex` reads opening no context: ordinary text, escapes, ``$`` not starting
# ``$(``, closed strings nesting nothing; ``;``/``;;`` and bare parentheses apart.
_FLAT_TOKEN = re.compile(r"""(?:[^\\'"$`()#;]+|\\.|\$(?!\()|'[^']*'"""
                         r"""|"(?:[^"\\$`]|\\.|\$(?!\())*")+|(;;?)|([()])|(.)""", re.S)


def _flat_split_points(text):
    """Split points without a token per word, or None when :func:`lex` must read the line."""
    out, parens = [], 0
    for m in _FLAT_TOKEN.finditer(text):
        if m.group(3) is not None:
            return None
        paren = m.group(2)
        if paren is not None:
            parens = parens + 1 if paren == "(" else max(0, parens - 1)
        elif m.group(1) is not None and parens == 0:
            out.append((m.start(), m.end(), m.group(1)))
    return out


def _lexed_split_points(text):
    """``(start, end, token)`` of each top-level ``;``/``;;`` outside parentheses, by the lexer."""
    out, parens = [], 0
    for kind, start, end, depth in lex(text)[0]:
        if depth:
            continue
        if kind == "(":
            parens += 1
        elif kind == ")":
            parens = max(0, parens - 1)
        elif parens == 0 and (kind == ";" or kind == ";;"):
            out.append((start, end, kind))
    return out


@remembered
def split_statements(text):
    """Split on ``;`` / ``;;`` outside quotes and parentheses; ``;;`` kept as a statement."""
    if ";" not in text:
        return [text] if text else []
    points = _flat_split_points(text)
    if points is None:
        points = _lexed_split_points(text)
    out, begin = [], 0
    for start, end, kind in points:
        out.append(text[begin:start].strip())
        if kind == ";;":
            out.append(";;")
        begin = end
    out.append(text[begin:].strip())
    return [x for x in out if x]


HEREDOC_RE = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?")


def quote_stack(text, stack):
    """The contexts (quotes, ``$(``, backticks) open after ``text``, from those open before."""
    return lex(text, stack)[1]


# one line whose strings all close, where nothing nests: a backslash escapes the next
# character outside single quotes (in double quotes it matters only before ``"``)
_OUTSIDE = r"""[^'"\\]*(?:\\.[^'"\\]*)*"""
_CLOSED = re.compile(_OUTSIDE + r"""(?:(?:'[^']*'|"[^"\\]*(?:\\.[^"\\]*)*")""" + _OUTSIDE + ")*",
                     re.S)


def open_quote(text):
    """True when ``text`` ends inside a quoted string, a ``$( ... )`` or backticks."""
    if "`" not in text and "$(" not in text and "\n" not in text and _CLOSED.fullmatch(text):
        # nothing nested, every string closed (a comment runs to the line's end, so
        # its quotes close or open nothing either way); no memo: cheaper
        return False
    return bool(quote_stack(text, ()))


# the inside of a ``$( )`` to its ``)`` opening nothing: no quote, backtick, parenthesis, escape
_FLAT_INSIDE = re.compile(r"[^()'\"`\\$]*(?:\$(?!\()[^()'\"`\\$]*)*\)")


def closing_paren(text, start):
    """Index just past the ``)`` closing the ``$(`` whose ``(`` is at ``start - 1``."""
    m = _FLAT_INSIDE.match(text, start)
    return m.end() if m else _lexed_closing_paren(text, start)


@remembered
def _lexed_closing_paren(text, start):
    return lex(text, "$", start, closing=True)[2]


class Line:
    """One logical line: first physical line ``no`` through ``end``."""

    __slots__ = ("no", "end", "text", "path", "heredoc", "stmts")

    def __init__(self, no, text, path, heredoc, end=None):
        self.no, self.text, self.heredoc = no, text, heredoc
        self.path = path if isinstance(path, Path) else Path.of(path)
        self.end = no if end is None else end
        self.stmts = ()


class Cond:
    """An ``if`` or ``case``: per arm its description, tests and EVAL_ONLY polarity."""

    __slots__ = ("id", "kind", "arms", "eval_polarity", "parent", "subject", "tests", "start",
                 "path", "end")

    def __init__(self, id, kind, parent, path):
        self.id, self.kind, self.parent, self.path, self.subject = id, kind, parent, path, ""
        self.start = self.end = None      # end: the line of its fi/esac, None if never closed
        self.tests, self.arms, self.eval_polarity = [], [], []


def eval_polarity(cond_text):
    """For an ``if`` condition: True if it holds when EVAL_ONLY=true, False if not, None."""
    if "EVAL_ONLY" not in cond_text:
        return None
    t = cond_text.replace(" ", "")
    negated = t.startswith("!") or "!=" in t
    truthy = re.search(r"(==?|!=)[\"']?true[\"']?", t) or "-n" in cond_text
    falsy = re.search(r"(==?|!=)[\"']?false[\"']?", t)
    if falsy and not truthy:
        negated = not negated
    return not negated


# the words :func:`parse` reads a statement's place in the branches by
_STATEMENT_WORDS = frozenset({"if", "elif", "else", "then", "do", "fi", "case", "esac"})
KEYWORDS = {"if", "elif", "else", "fi", "case", "esac", "then", "do", "done", "for", "while",
             "until", "function", "{", "}"}


class Path:
    """The ``(condition id, arm)`` steps enclosing a line; sharing its parent's keeps it linear."""

    __slots__ = ("parent", "step", "length", "_among")

    def __init__(self, parent=None, step=None):
        self.parent, self.step = parent, step
        self.length = 0 if parent is None else parent.length + 1
        self._among = None

    def __iter__(self):
        return iter(self.steps())

    def __len__(self):
        return self.length

    def __eq__(self, other):
        return tuple(self) == tuple(other)

    def __hash__(self):
        return hash(self.steps())

    def __repr__(self):
        return f"Path{self.steps()!r}"

    @staticmethod
    def of(steps):
        """The path of ``steps`` (outermost first)."""
        node = ROOT
        for step in steps:
            node = Path(node, tuple(step))
        return node

    def steps(self):
        """The steps as a tuple, outermost first."""
        out, node = [], self
        while node.parent is not None:
            out.append(node.step)
            node = node.parent
        return tuple(reversed(out))

    def among(self, ids):
        """The steps whose condition id is in ``ids``, as a tuple (remembered per ``ids``)."""
        todo, node = [], self
        while node.parent is not None and not (node._among is not None
                                               and node._among[0] is ids):
            todo.append(node)
            node = node.parent
        known = node._among[1] if node.parent is not None else ()
        for node in reversed(todo):
            if node.step[0] in ids:
                known = known + (node.step,)
            node._among = (ids, known)
        return known


ROOT = Path()


def condition_ids(paths):
    """The ids of every condition on any of ``paths``; each shared step is visited once."""
    seen, ids = set(), set()
    for node in paths:
        while node.parent is not None and id(node) not in seen:
            seen.add(id(node))
            ids.add(node.step[0])
            node = node.parent
    return ids


def _join_continued(raw, i):
    """The logical line from ``raw[i]`` on and its last index; a commented ``\\`` ends it."""
    pieces = [raw[i][:-1]]
    toks, stack, done = (), (), 0       # the last text lexed, the contexts open after it
    while True:
        i += 1
        piece = raw[i].strip()
        pieces.append(piece)
        if i + 1 >= len(raw) or not piece.endswith("\\"):
            break
        pieces[-1] = piece[:-1]
        if "#" in piece:
            chunk = " ".join(pieces[done:])
            if done:    # after the blank joining the lines, or the escape it completes
                lone_escape = toks and toks[-1][0] == "esc" and toks[-1][2] - toks[-1][1] == 1
                chunk = ("\\ " if lone_escape else " ") + chunk
            toks, stack, _ = lex(chunk, stack)
            done = len(pieces)
            if any(tok[0] == "#" for tok in toks):
                pieces[-1] = piece      # the backslash ends a comment: the next line stands alone
                break
    return " ".join(pieces), i


def parse(text, hits=None):
    """Logical lines with their branch paths, and the conditions seen.

    With ``hits``, lines that cannot change an outcome are dropped on the way."""
    raw = text.split("\n")
    lines, conds, stack = [], [], []     # stack of [Cond, arm index or None, path before it]
    here = ROOT                          # the path of the lines read now

    def push(kind, arm):
        nonlocal here
        cond = Cond(len(conds), kind, stack[-1][0].id if stack else None, here)
        conds.append(cond)
        stack.append([cond, arm, here])
        if arm is not None:
            here = Path(here, (cond.id, arm))
        return cond

    def choose(arm):        # the innermost condition's arm changes
        nonlocal here
        top = stack[-1]
        top[1] = arm
        here = top[2] if arm is None else Path(top[2], (top[0].id, arm))

    i, count = 0, len(raw)
    heredoc_end = None
    while i < count:
        start = i
        body = raw[i]
        if heredoc_end is not None:
            if body.strip() == heredoc_end:
                heredoc_end = None
            elif hits is None or i + 1 in hits:
                lines.append(Line(i + 1, body, here, True))
            i += 1
            continue
        if body.endswith("\\") and i + 1 < count and continues(body):
            body, i = _join_continued(raw, i)
        i += 1
        stripped = body.strip()
        if not stripped or stripped[0] == "#":
            continue
        multiline = False
        if ("'" in body or '"' in body) and open_quote(body):
            # a quoted string spanning lines (e.g. ``python3 -c '...'``) is one word
            open_ctx = quote_stack(body, [])
            pieces = [body]
            while i < count and open_ctx:
                pieces.append(raw[i])
                open_ctx = quote_stack("\n" + raw[i], open_ctx)
                i += 1
            body = "\n".join(pieces)
            stripped = body.strip()
            multiline = True
        if (hits is not None and "=" not in body and ";" not in body and ")" not in body
                and "<<" not in body and stripped.split(None, 1)[0] not in KEYWORDS
                and not stripped.startswith(("unset ", "printf -v"))
                and (i not in hits if i == start + 1
                     else hits.isdisjoint(range(start + 1, i + 1)))):
            continue    # a plain command with no evidence: it cannot change an outcome
        code = strip_comment(body) if "#" in body and not multiline else body
        m = HEREDOC_RE.search(code) if "<<" in code and not multiline else None
        if m and "<<<" not in code:
            heredoc_end = m.group(1)
        stmts = []
        line_path = None      # path of the first statement (``1) X=1 ;;`` ends its arm)
        whole = code.strip()      # (without a ``;``, one statement: split_statements' shortcut)
        for st in split_statements(whole) if ";" in whole else (whole,) if whole else ():
            head = st.split(None, 1)
            word = head[0] if head else ""
            in_patterns = bool(stack) and stack[-1][1] is None and stack[-1][0].kind == "case"
            if word not in _STATEMENT_WORDS and st != ";;" and not in_patterns:
                if line_path is None:       # a command: the common case
                    line_path = here
                stmts.append(st)
                continue
            top = stack[-1][0] if stack else None
            rest = head[1] if len(head) > 1 else ""
            if word == "if":
                c = push("if", 0)
                c.arms.append("if " + rest)
                c.tests.append((start + 1, 0, rest))
                c.eval_polarity.append(eval_polarity(rest))
                continue
            if word == "elif" and top and top.kind == "if":
                top.arms.append("elif " + rest)
                top.tests.append((top.tests[0][0] if top.tests else start + 1,
                                  len(top.arms) - 1, rest))
                top.eval_polarity.append(eval_polarity(rest))
                choose(len(top.arms) - 1)
                continue
            if word == "else" and top and top.kind == "if":
                top.arms.append("else of " + top.arms[0])
                top.eval_polarity.append(_other_side(top.eval_polarity))
                choose(len(top.arms) - 1)
                st = rest
                if not st:
                    continue
                word = st.split(None, 1)[0]
            if word == "then" or word == "do":
                st = rest
                if not st:
                    continue
            if top and (word, top.kind) in (("fi", "if"), ("esac", "case")):
                top.end = start + 1
                here = stack.pop()[2]
                continue
            if word == "case":
                c = push("case", None)
                c.subject, c.start = rest, start + 1
                continue
            if st == ";;" and top and top.kind == "case":
                choose(None)
                continue
            if in_patterns:
                m2 = re.match(r"^\(?([^()]*)\)\s*(.*)$", st)
                if m2:
                    pat = m2.group(1).strip()
                    top.arms.append(f"case {top.subject.replace(' in', '')} {pat})")
                    top.tests.append((top.start, len(top.arms) - 1, ("case", top.subject, pat)))
                    top.eval_polarity.append("true" in pat if "EVAL_ONLY" in top.subject else None)
                    choose(len(top.arms) - 1)
                    st = m2.group(2).strip()
                    if not st:
                        continue
            if line_path is None:
                line_path = here
            stmts.append(st)
        ln = Line(start + 1, code, here if line_path is None else line_path, False, i)
        ln.stmts = tuple(stmts)
        lines.append(ln)
    # arms of an ``if`` without ``else`` can all be skipped: add an implicit arm
    for c in conds:
        if c.kind == "if" and not c.arms[-1].startswith("else"):
            c.arms.append("no arm of " + c.arms[0])
            c.eval_polarity.append(_other_side(c.eval_polarity))
        elif c.kind == "case" and not any(a.rstrip(")").endswith("*") for a in c.arms):
            c.arms.append(f"no pattern of case {c.subject}")
            c.eval_polarity.append(None)
    return lines, conds


def _other_side(polarities):
    """An else arm's polarity: the opposite of the first arm that has one."""
    return next((not p for p in polarities if p is not None), None)


# ------------------------------------------------------------------ expansion

def unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def expand(text, env, depth=0):
    """Expand ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and simple ``$(...)`` forms."""
    if depth > 8 or "$" not in text:
        return text

    def var(m):
        name = m.group(1) or m.group(4)
        op = m.group(2)
        have = name in env and env[name] is not None
        if op in ("#", "##", "%", "%%"):
            return _trim(env[name], op, m.group(3) or "") if have else m.group(0)
        if op and op.endswith("+"):
            return expand(unquote(m.group(3) or ""), env, depth + 1) if have and env[name] else ""
        if have and (env[name] != "" or not op):
            return env[name]
        if op and op.endswith(("-", "=")):
            return expand(unquote(m.group(3) or ""), env, depth + 1)
        return m.group(0)

    out = VAR_RE.sub(var, text)
    return substitute(out, env, depth + 1)


def _trim(value, op, pattern):
    """``${VAR#pat}``-style trimming for the glob patterns recipes use (``*/``, ``/*``)."""
    prefix = op[0] == "#"
    cuts = range(len(value) + 1)    # shortest prefix first, or longest suffix first
    for i in cuts if op in ("#", "%%") else reversed(cuts):
        head, tail = value[:i], value[i:]
        if fnmatch.fnmatchcase(head if prefix else tail, pattern):
            return tail if prefix else head
    return value


def substitute(text, env, depth):
    """Evaluate ``$(( ))``, ``$(printf ...)`` and ``$(awk 'BEGIN{print ...}')``."""
    if "$(" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        j = text.find("$(", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        k = closing_paren(text, j + 2)
        val = command_value(text[j + 2:k - 1], env, depth)
        out.append(val if val is not None else text[j:k])
        i = k
    return "".join(out)


# Bounds of the arithmetic evaluator: bash's integers are 64-bit, so nothing beyond is what
# the shell computes; 9**9**9**9 is refused at its first oversized step, as is deep nesting.
ARITH_MAX = 2 ** 63
ARITH_MAX_DEPTH = 64
ARITH_MAX_LENGTH = 4096
_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.Mod: math.fmod, ast.Pow: operator.pow}


def _int_div(a, b):
    """Integer division as bash (C) does it: the quotient truncated toward zero."""
    if b == 0:
        raise ValueError("division by 0")
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


# bash's $(( )): integers only, / toward zero, % with the dividend's sign (bash manual,
# "Shell Arithmetic": C semantics); x/0 and a negative exponent are errors
_INT_OPS = {**_ARITH_OPS, ast.Div: _int_div, ast.Mod: lambda a, b: a - b * _int_div(a, b)}


def _arith_node(node, depth, ops, src):
    if depth > ARITH_MAX_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        if ops is _INT_OPS and type(value) is not int:
            raise ValueError("not an integer")
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = node.operand
        while isinstance(inner, ast.UnaryOp):
            inner = inner.operand
        if (ops is _INT_OPS and isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Pow)
                and "(" not in src[node.col_offset + 1:inner.col_offset]):
            # bash binds unary signs tighter than **: -2**2 is (-2)**2 = 4, -(2**2) is -4
            base = ast.UnaryOp(node.op, _with_operand(node.operand, inner.left),
                               col_offset=node.col_offset)
            return _arith_node(ast.BinOp(base, ast.Pow(), inner.right), depth + 1, ops, src)
        value = _arith_node(node.operand, depth + 1, ops, src)
        value = -value if isinstance(node.op, ast.USub) else value
    elif isinstance(node, ast.BinOp) and type(node.op) in ops:
        left = _arith_node(node.left, depth + 1, ops, src)
        right = _arith_node(node.right, depth + 1, ops, src)
        if isinstance(node.op, ast.Pow) and abs(left) > 1 and abs(right) > 64:
            raise ValueError("exponent too large")  # at least 2**65: beyond 64 bits
        if isinstance(node.op, ast.Pow) and ops is _INT_OPS and right < 0:
            raise ValueError("exponent less than 0")
        value = ops[type(node.op)](left, right)
    else:
        raise ValueError("not arithmetic")
    if isinstance(value, complex) or not math.isfinite(value) or abs(value) > ARITH_MAX \
            or (ops is _INT_OPS and value == ARITH_MAX):    # bash's range: [-2**63, 2**63)
        raise ValueError("out of range")
    return value


def _with_operand(chain, operand):
    """A chain of unary signs with its innermost operand replaced."""
    if not isinstance(chain, ast.UnaryOp):
        return operand
    return ast.UnaryOp(chain.op, _with_operand(chain.operand, operand), col_offset=chain.col_offset)


def arith(expr, *, integer=False):
    """Arithmetic on numbers only, else None: as awk, or with ``integer`` as bash's ``$(( ))``.

    Bounded in length, depth and 64-bit values, so ``$(( 9**9**9**9 ))`` is None at once."""
    expr = expr.strip()
    if (not expr or len(expr) > ARITH_MAX_LENGTH
            or not re.fullmatch(r"[0-9.eE+\-*/%() \t]+", expr)):
        return None
    try:
        return _arith_node(ast.parse(expr, mode="eval").body, 0,
                           _INT_OPS if integer else _ARITH_OPS, expr)
    except (SyntaxError, ValueError, TypeError, ArithmeticError, RecursionError, MemoryError):
        return None


# what bash unescapes inside double quotes: \\ \" \$ \`
DQ_ESCAPE = re.compile(r'\\([\\"$`])')
_BLANKS = re.compile(r"[ \t\n]+")


def shell_words(text):
    """Split like the shell: quotes removed, escapes resolved, ``$`` forms (``$(...)`` too) kept."""
    if not any(ch in text for ch in "'\"\\`#"):
        if "$" not in text:
            return text.split()
        if "$(" not in text:        # ``$VAR`` is ordinary text: words end at the lexer's blanks
            return [w for w in _BLANKS.split(text) if w]
    return list(_lexed_words(text))


@remembered
def _lexed_words(text):
    """:func:`shell_words` by the lexer, as a tuple."""
    toks = lex(text)[0]
    words, cur, has = [], [], False
    level = 0                   # 1 inside a double-quoted string that nests
    i, n = 0, len(toks)
    while i < n:
        kind, start, end, depth = toks[i]
        i += 1
        if kind == "$(" or kind == "`":          # kept verbatim, to its closer
            closer = "$)" if kind == "$(" else "`)"
            while i < n and not (toks[i][3] == depth and toks[i][0] == closer):
                i += 1
            end = toks[i][2] if i < n else len(text)
            cur.append(text[start:end])
            i += 1
        elif kind == '"':
            level, has = 1 - level, True
        elif level or kind == "dq":     # inside a nesting string every token is text
            piece = text[start:end] if level else text[start + 1:end - 1]
            cur.append(DQ_ESCAPE.sub(r"\1", piece) if "\\" in piece else piece)
            has = True
        elif kind == "blank" or kind == "#":
            if cur or has:
                words.append("".join(cur))
            cur, has = [], False
            if kind == "#":
                break
        elif kind == "sq" or kind == "sq+":
            cur.append(text[start + 1:end - 1] if kind == "sq" else text[start + 1:end])
            has = True
        elif kind == "esc":
            cur.append(text[start + 1:end])
        else:
            cur.append(text[start:end])
    if cur or has:
        words.append("".join(cur))
    return tuple(words)


def printf(fmt, args):
    """Format like bash ``printf`` for %s, %d, %f, %.Nf, %g; None when unsure."""
    fmt = fmt.replace("\\n", "").replace('\\"', '"')
    args = list(args)

    def one(m):
        spec = m.group(0)
        if spec == "%%":
            return "%"
        arg = args.pop(0) if args else ""
        if "$" in arg or spec[-1] == "s":
            return arg    # an unresolved reference stays, so it reads as not a number
        try:
            return spec % (int(float(arg)) if spec[-1] in "di" else float(arg))
        except (ValueError, TypeError, OverflowError):
            raise ValueError(spec)

    try:
        return re.sub(r"%%|%[-+ 0#]*\d*(?:\.\d+)?[sdifgeE]", one, fmt)
    except ValueError:
        return None


def command_value(inner, env, depth=0):
    if depth > 8:
        return None
    inner = inner.strip()
    if inner.startswith("(") and inner.endswith(")"):
        # $(( )) reads bare names as variables
        body = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: env.get(m.group(0)) or m.group(0),
                      inner[1:-1])
        val = arith(expand(body, env, depth + 1), integer=True)
        return None if val is None else str(val)
    expanded = expand(inner, env, depth + 1)
    words = shell_words(expanded)
    if not words:
        return None
    if words[0] == "printf" and len(words) >= 2:
        return printf(words[1], words[2:])
    if "$" in expanded:
        return None
    if words[0] == "awk":
        prog = next((w for w in words[1:] if "BEGIN" in w), None)
        m = re.search(r"BEGIN\s*\{\s*print\s+(.*?)\s*;?\s*\}", prog or "")
        if m:
            val = arith(m.group(1))
            if val is not None:
                return "%.6g" % val     # awk's default OFMT
    if words[0] == "echo" and len(words) == 2:
        return words[1]
    return None


def assign(stmt, env):
    """Apply one assignment/unset/printf -v statement to ``env``; True when it was one."""
    said = _assignment(stmt)
    if said is None:
        return False
    kind = said[0]
    if kind == "unset":
        for name in said[1]:
            env[name] = None
    elif kind == "printf":
        words = said[1]
        if len(words) >= 4:
            env[words[2]] = printf(expand(words[3], env), [expand(w, env) for w in words[4:]])
    elif kind == "=":
        _, name, plus, value, names = said
        text = expand(value, env)
        text = (env.get(name) or "") + " " + text if plus else text
        # a value resting on the environment (``${X:-d}``, X unset) is a default tests must not use
        if any(env.get(v) is None or isinstance(env.get(v), Soft) for v in names):
            text = Soft(text)
        env[name] = text
    return True


@remembered
def _assignment(stmt):
    """What a statement assigns (``unset``, ``printf -v``, ``=``, ``declare``), read once."""
    if stmt.startswith("unset "):
        return "unset", tuple(name for name in stmt.split()[1:] if not name.startswith("-"))
    if stmt.startswith("printf -v "):
        return "printf", tuple(shell_words(stmt))
    m = ASSIGN_RE.match(stmt)
    if not m:
        return ("declare",) if stmt.startswith(("export ", "declare ")) else None
    name, plus, value = m.groups()
    value = value.strip()
    if value.startswith("(") and not value.startswith("$("):
        value = value[1:].rstrip(")")
    return "=", name, plus, dequote_all(value), tuple(vars_in(value))


class Soft(str):
    """A variable's value taken from a default the environment may override."""

    __slots__ = ()


def dequote_all(value):
    """Shell-unquote a single word value, keeping ``$`` forms for expansion."""
    words = shell_words(value)
    return words[0] if len(words) == 1 else value.strip()


_TEST_RE = re.compile(r"^\[\[?\s+(.*?)\s+\]\]?$")
_TEST_OPS = {"=": operator.eq, "==": operator.eq, "!=": operator.ne, "-eq": operator.eq,
             "-ne": operator.ne, "-gt": operator.gt, "-ge": operator.ge, "-lt": operator.lt,
             "-le": operator.le}


def evaluate_test(test, env, soft_ok=False):
    """Truth of a ``[ a OP b ]`` test or ``case`` pattern; None if unknown (or Soft)."""
    if any(env.get(v) is None or (isinstance(env.get(v), Soft) and not soft_ok)
           for v in vars_in(test if isinstance(test, str) else test[1])):
        return None     # decided by the run's environment, not by the file
    if isinstance(test, tuple):
        _, subject, pattern = test
        word = shell_words(expand(subject.rsplit(" in", 1)[0], env))
        if len(word) != 1 or "$" in word[0]:
            return None
        return any(fnmatch.fnmatchcase(word[0], p.strip()) for p in pattern.split("|"))
    text = test.strip()
    negate = text.startswith("! ")
    if negate:
        text = text[2:].strip()
    m = _TEST_RE.match(text)
    if not m or "&&" in m.group(1) or "||" in m.group(1) or " -a " in m.group(1):
        return None
    words = shell_words(expand(m.group(1), env))
    if any("$" in w for w in words):
        return None
    if len(words) == 2 and words[0] in ("-n", "-z"):
        result = bool(words[1]) == (words[0] == "-n")
    elif len(words) == 3 and words[1] in _TEST_OPS:
        a, op, b = words
        if op[0] == "-":
            try:
                a, b = int(a), int(b)
            except ValueError:
                return None
        result = _TEST_OPS[op](a, b)
    else:
        return None
    return not result if negate else result


def vars_in(text):
    return {m.group(1) or m.group(4) for m in VAR_RE.finditer(text)}


def eval_paths(text):
    """Per line: True only on the EVAL_ONLY=true path, False only off it, None on both."""
    lines, conds = parse(text)
    arm_polarity = {}
    for c in conds:
        if c.kind != "if" or not c.tests or c.end == c.tests[0][0]:
            continue
        first = eval_polarity(c.tests[0][2])
        for arm, label in enumerate(c.arms):
            if arm == 0:
                pol = first
            elif first is not None:
                pol = not first
            elif label.startswith("elif "):
                pol = eval_polarity(label)
            else:
                pol = None
            arm_polarity[c.id, arm] = pol
    out, status, number = {}, None, 1
    deciding = {cid for (cid, _), pol in arm_polarity.items() if pol is not None}
    for ln in lines:
        while number < ln.no:           # blank and comment lines: as the line before
            out[number] = status
            number += 1
        arms = [arm_polarity.get(step) for step in ln.path.among(deciding)]
        status = True if True in arms else (False if False in arms else None)
        for number in range(ln.no, ln.end + 1):
            out[number] = status
        number = ln.end + 1
    for number in range(number, text.count("\n") + 2):
        out[number] = status
    return out


def resolve(raw, variables):
    """``$NAME`` / ``${NAME}`` through the script's literal assignments, else None."""
    text = unquote(raw)
    m = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", text)
    if m:
        return variables.get(m.group(1))
    return None if "$" in text or "%" in text else text


def literal_variables(text):
    """``{NAME: value}`` of a script's line-level assignments, unquoted; the first one wins."""
    variables = {}
    for m in ASSIGNMENT.finditer(text):
        variables.setdefault(m.group("key"), unquote(m.group("raw")))
    return variables
