"""Bash recipe scripts, never executed: the lines are replayed along every combination of
the ``if``/``case`` arms that feed a knob, K, the draft head or ``EVAL_ONLY``, giving one
:class:`~goldenal.auditing.evidence.Config` per distinct outcome."""

import bisect
import functools
import os
import re

from goldenal.auditing import evidence as ev
from goldenal.engines import table as knobs
from goldenal.recipes.shell import (ASSIGN_RE, VAR_RE, Line, Soft, assign, condition_ids,
                                    continues, evaluate_test, expand, parse, remembered,
                                    remembering, unquote, vars_in)

MAX_SCENARIOS = 256
# Conditions nested deeper are replayed in order, not enumerated: real recipes nest a few
# levels, and enumerating hundreds of nested ifs only costs time.
MAX_FORK_DEPTH = 16

# What an expanded line is scanned for: a knob found later on a line (in table order) wins, as
# does the first K kind below.  Engines by how the knob reaches the server: in the environment
# under its own name (SGLang, TensorRT-LLM) or on the command line or in a config (the rest);
# those that refuse to start a knob without speculative settings (record's ``spec_off``).
_ENV_CARRIED = tuple(e for e in ev.ENGINES if ev.record(e).env_knob == ev.record(e).value_knob)
_COMMAND_CARRIED = tuple(e for e in ev.ENGINES if e not in _ENV_CARRIED)
_REFUSING = tuple(e for e in ev.ENGINES if ev.record(e).spec_off == "refused")
_KNOB_ROWS = knobs.spellings(engine=_COMMAND_CARRIED,
                             setting=(knobs.LENGTH, knobs.RATES, knobs.RATE),
                             form=(knobs.KEY, knobs.FLAG))
# a refusing engine's knobs in the environment, read like its flags
_REFUSING_ENV_ROWS = knobs.spellings(engine=_REFUSING, setting=(knobs.LENGTH, knobs.RATES),
                                     form=knobs.ENV)
_REFUSING_KNOB_ROWS = knobs.spellings(engine=_REFUSING, setting=(knobs.LENGTH, knobs.RATES))
# its speculative settings: a type or a draft model switches it on
_REFUSING_SPEC_ROWS = knobs.spellings(engine=_REFUSING,
                                      setting=(knobs.METHOD, knobs.DRAFT, knobs.MODEL))
_ENV_KNOB_ROWS = knobs.spellings(engine=_ENV_CARRIED,
                                 setting=(knobs.LENGTH, knobs.TOKEN_MODE, knobs.ACC_METHOD))
# ``NAME: value`` opening a YAML line, ``NAME=value`` after a blank, quote or ``=``
_YAML_ENV_ROWS = tuple(r for r in _ENV_KNOB_ROWS if r.form == knobs.KEY)
_PREFIX_ENV_ROWS = tuple(r for r in _ENV_KNOB_ROWS if r.form == knobs.ENV)
_PREFIX_LEAD = frozenset(" \t\n\r\f\v\"'=")
_KNOB_ENGINE = {r.name: r.engine for r in ev.VALUE_ROWS}
# the parts of a launcher's file name that name an engine
FILE_TOKENS = tuple((e, tok) for e in ev.ENGINES for tok in ev.record(e).file_tokens)
_ACC_SETTING = {knobs.TOKEN_MODE: "token_mode", knobs.ACC_METHOD: "acc_method"}
_ACC_NAMES = {r.name: _ACC_SETTING[r.setting] for r in knobs.SPELLINGS if r.setting in _ACC_SETTING}
_RECORDS = tuple(ev.record(e) for e in ev.ENGINES)
_NOT_REFUSING = tuple(e for e in ev.ENGINES if e not in _REFUSING)


def _stems(names):
    """``names`` less those holding another: a line holds one of these when it holds a name."""
    names = set(names)
    return tuple(sorted(n for n in names if not any(o != n and o in n for o in names)))


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))


def _k_kind(row):
    """K's precedence (the records' ``k_ranks``, unranked last): one engine's rows of a rank."""
    rank = ev.record(row.engine).k_ranks.get(row.name)
    return rank is None, rank or 0, ev.ENGINES.index(row.engine)


_K_ROWS = sorted(knobs.spellings(engine=ev.ENGINES, setting=knobs.K), key=_k_kind)
_K_KINDS = tuple((kind, tuple(r for r in _K_ROWS if _k_kind(r) == kind))
                 for kind in dict.fromkeys(map(_k_kind, _K_ROWS)))
# YAML keys (an environment-carried engine's, as for its draft and method below)
_K_AT_LINE_START = tuple(kind for kind, rows in _K_KINDS
                         if rows[0].form == knobs.KEY and rows[0].engine not in _COMMAND_CARRIED)
# kinds of an engine with a default K: a K set to a value not known here overrides it
_K_DEFAULTED = tuple(kind for kind, rows in _K_KINDS
                     if ev.record(rows[0].engine).default_k is not None)
# The groups of rows _read_line tries, each only on a line naming one of its rows (a pattern
# starts with its name); a refusing engine's served model alone switches nothing on: in no group.
_TABLE_GROUPS = {
    "refusing": tuple(r for r in _REFUSING_SPEC_ROWS if r.setting != knobs.MODEL) + _REFUSING_ENV_ROWS
    + _REFUSING_KNOB_ROWS,
    "knob": _KNOB_ROWS,
    "env": _PREFIX_ENV_ROWS + _YAML_ENV_ROWS,
    "k": tuple(r for _, rows in _K_KINDS for r in rows),
}
_GROUP_NAMES = tuple(dict.fromkeys(r.name for rows in _TABLE_GROUPS.values() for r in rows))
_NAME_GROUPS = tuple(tuple(group for group, rows in _TABLE_GROUPS.items()
                           if any(r.name == name for r in rows)) for name in _GROUP_NAMES)
_DIGITS = re.compile(r"\d+")
# the method flag of an engine that drops a knob silently without one (ATOM)
_DROPPED_METHOD = knobs.spellings(
    engine=tuple(e for e in ev.ENGINES if ev.record(e).spec_off == "dropped"),
    setting=knobs.METHOD)[0]


def _spec_res(setting, value, quoted_value):
    """``(pattern, quoted key or None)`` per record spelling of ``setting``: a key in a JSON config
    on the command line (vLLM's), a flag, a key opening a YAML line (TensorRT-LLM's)."""
    rows = [r for r in knobs.spellings(engine=_NOT_REFUSING, setting=setting)
            if r != _DROPPED_METHOD]
    json = [r for r in rows if r.form == knobs.KEY and r.engine in _COMMAND_CARRIED]
    return tuple([(re.compile(rf'"{re.escape(r.name)}"\s*:\s*"({quoted_value})"'), f'"{r.name}"')
                  for r in json]
                 + [(re.compile(re.escape(r.name) + rf"(?:\s+|=)[\"']?({value})"), None)
                    for r in rows if r.form == knobs.FLAG]
                 + [(re.compile(rf"^\s*{re.escape(r.name)}\s*:\s*[\"']?({value})"), None)
                    for r in rows if r.form == knobs.KEY and r not in json])


_DRAFT_RES = _spec_res(knobs.DRAFT, r"[^\"'\s$]+", r'[^"$]+')
_METHOD_RES = _spec_res(knobs.METHOD, r"\w+", r"\w+")
_METHOD_NAMES = tuple(r.name for r in knobs.spellings(setting=knobs.METHOD))
# a JSON config's draft counts on a line naming the config's K or its method
_JSON_DRAFT_WITNESSES = tuple(r.name for r in knobs.spellings(
    engine=_COMMAND_CARRIED, setting=knobs.K, form=knobs.KEY)) + tuple(
    quoted for _, quoted in _METHOD_RES if quoted)
_WORD_CHARS = re.compile(r"\w+")
_TOPK_RE = re.compile("|".join(re.escape(r.name) for r in knobs.spellings(setting=knobs.TOPK))
                      + r"(?:\s+|=)[\"']?(\d+)")
# (attribute of _Said, a word every match holds, pattern): the records' sampling-variant keys
_WORD_RES = tuple((attr, key, re.compile(rf"""["']?{re.escape(key)}["']?\s*[:=]\s*["']?(\w+)"""))
                  for rec in _RECORDS for attr, key in zip(("dsm", "rsm"), rec.sample_keys)
                  ) + (("topk", "topk", _TOPK_RE),)
_ONE_MODEL_RE = re.compile("(" + "|".join(re.escape(r.name) for r in knobs.spellings(
    setting=knobs.ONE_MODEL)) + r")\s*:\s*(true|false|True|False)")
# a YAML speculative-config mapping: a key naming a draft under it is the draft head
_SPEC_KEYS = tuple(k for rec in _RECORDS for k in rec.spec_config)
_SPEC_BLOCK_RE = re.compile(rf"^(\s*)[\"']?(?:{_alternatives(_SPEC_KEYS)})[\"']?\s*:\s*$")
_DRAFT_KEYS = tuple(r.name for r in knobs.spellings(setting=knobs.DRAFT, form=knobs.KEY)) + tuple(
    k for rec in _RECORDS for k in rec.draft_keys)
# a word of each draft the patterns read (a flag's, a key's, a nested key's)
_DRAFT_STEMS = _stems(_DRAFT_KEYS + tuple(r.name for r in knobs.spellings(
    engine=_NOT_REFUSING, setting=knobs.DRAFT)))
_NESTED_DRAFT_RE = re.compile(rf"^\s*(?:{_alternatives(_DRAFT_KEYS)})\s*:\s*[\"']?([^\"'\s$#]+)")
# a served model: a flag's value, the positional after a launch taking one (not a flag,
# which is read as such), a key of a config file of flags
_SERVED_ROWS = knobs.spellings(engine=_NOT_REFUSING, setting=(knobs.MODEL, knobs.SERVED),
                               form=knobs.FLAG)
_POSITIONAL = tuple(rec.launch_word for rec in _RECORDS if rec.positional_model)
_SERVED_KEYS = tuple(r.name.lstrip("-") for r in _SERVED_ROWS if ev.record(r.engine).config_file)
_MODEL_RE = re.compile(
    "(?:" + "|".join([_alternatives(r.name for r in _SERVED_ROWS)]
                     + [rf"\b{re.escape(w)}" for w in _POSITIONAL])
    + r""")(?:\s+|=)["']?(?!-)([^"'\s$]+)|^\s*["']?(?:""" + _alternatives(_SERVED_KEYS)
    + r""")["']?\s*:\s*["']?([^"'\s$,]+)""")
_MODEL_STEMS = _stems(tuple(r.name for r in _SERVED_ROWS) + _POSITIONAL + _SERVED_KEYS)
# words of a line switching speculative decoding on
_SPEC_WORDS = ("speculative",) + tuple(w for rec in _RECORDS for w in rec.spec_words)
# every pattern _read_line looks for holds one of these: a line holding none says nothing
_SCAN_GATE = _stems(_GROUP_NAMES + _METHOD_NAMES + _SPEC_KEYS + _DRAFT_STEMS + _MODEL_STEMS
                    + _SPEC_WORDS + tuple(w for _, w, _ in knobs.LAUNCHES + _WORD_RES)
                    + tuple(r.name for r in knobs.spellings(setting=knobs.ONE_MODEL)))
_GATED_NAMES = _GROUP_NAMES + _SCAN_GATE
_HF_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


# ------------------------------------------------------------------ scanning

def _scan(text, no, found):
    """Record knob and spec-setting evidence from one expanded line into ``found``."""
    flat = text.replace('\\"', '"') if '\\"' in text else text
    said = _read_line(flat)
    if said is not None:
        said.record(no, found)


@remembered
def _read_line(flat):
    """What one expanded line says (a :class:`_Said`), or None; pure, so remembered."""
    named = _groups_named(flat)
    if named is None:
        return None
    said = _Said()
    if "refusing" in named:
        said.refusing = _read_refusing(flat)
    if "knob" in named:
        said.knobs = tuple((row.name, m.group("value"), row.start(m) + 1, _spelling(row, m))
                           for row in _KNOB_ROWS for m in (row.search(flat),) if m)
    if "env" in named:
        # ``NAME=value`` inside a string or as a command's environment prefix
        settings = [(row, m.group("value"), m.start("name") + 1, True)
                    for row in _PREFIX_ENV_ROWS if row.name in flat
                    for m in row.pattern.finditer(flat)
                    if m.start() and flat[m.start() - 1] in _PREFIX_LEAD]
        for row in _YAML_ENV_ROWS:
            m = row.search(flat)
            if m and not flat[:m.start()].strip():
                settings.append((row, m.group("value"), m.start("name") + 1, False))
                break
        said.env_settings = tuple(settings)
    if "k" in named:
        ks = []
        for kind, rows in _K_KINDS:
            k = _k_value(flat, rows, kind in _K_AT_LINE_START)
            if k is not None:
                ks.append((kind, k))
            elif kind in _K_DEFAULTED and any(r.name in flat and r.pattern.search(flat)
                                            for r in rows):
                # a K flag given "$k": K is set, to a value not known here, so the
                # engine's default K does not apply
                said.k_unread = True
        said.ks = tuple(ks)
    if any(w in flat for w in _DRAFT_STEMS):
        for rx, quoted in _DRAFT_RES:
            m = rx.search(flat)
            if m and (not quoted or any(w in flat for w in _JSON_DRAFT_WITNESSES)):
                said.draft = m.group(1)
    if any(name in flat for name in _METHOD_NAMES):
        for rx, _ in _METHOD_RES:
            m = rx.search(flat)
            if m:
                said.method = m.group(1)
        if _DROPPED_METHOD.name in flat:
            m = _DROPPED_METHOD.search(flat)
            m = m and _WORD_CHARS.match(unquote(m.group("value")))
            if m:
                said.atom_method = m.group()
    for attr, word, rx in _WORD_RES:
        m = rx.search(flat) if word in flat else None
        if m:
            setattr(said, attr, m.group(1))
    if "one_model" in flat:
        m = _ONE_MODEL_RE.search(flat)
        if m:
            said.one_model = (m.group(1), m.group(2).lower() == "true")
    # a word every match of a launch holds: str's search skips a long line far faster
    # than the regex's (whose \b alternatives have no literal prefix)
    for engine, word, rx in knobs.LAUNCHES:
        if word in flat and rx.search(flat):
            said.engine = engine
    if any(k in flat for k in _SPEC_KEYS):
        m = _SPEC_BLOCK_RE.match(flat)
        if m:
            said.spec_block = len(m.group(1))
            return said
    said.blank = not flat.strip()
    said.indent = len(flat) - len(flat.lstrip())
    m = _NESTED_DRAFT_RE.match(flat) if any(w in flat for w in _DRAFT_STEMS) else None
    if m:
        said.nested_draft = m.group(1)
    if any(w in flat for w in _MODEL_STEMS):
        m = _MODEL_RE.search(flat)
        if m:
            name = m.group(1) or m.group(2)
            if _HF_ID_RE.match(name):
                said.model = name
    said.spec = any(w in flat for w in _SPEC_WORDS)
    return said


class _Said:
    """What one line's patterns matched; :meth:`record` adds it to a path's findings."""

    refusing = draft = method = atom_method = rsm = dsm = topk = one_model = engine = None
    spec_block = nested_draft = model = None
    knobs = env_settings = ks = ()
    k_unread = blank = spec = False
    indent = 0

    def record(self, no, found):
        if self.refusing is not None:
            self.refusing.record(no, found)
        for name, value, col, spelling in self.knobs:
            prev = found["knob"]
            if prev is None or prev[:2] != (name, value):
                found["knob"] = (name, value, no, col)
                found["knob_spelling"] = spelling
        for row, value, col, keep_first in self.env_settings:
            _env_setting(found, row, value, no, col, keep_first)
        for kind, k in self.ks:
            found["k"][kind] = (k, no)
        if self.k_unread:
            found["k_unread"] = no
        for key in ("draft", "method", "rsm", "dsm", "topk", "one_model", "engine"):
            value = getattr(self, key)
            if value is not None:
                found[key] = value
        if self.atom_method is not None:
            found["atom_method"] = self.atom_method
            found["method"] = found.get("method") or self.atom_method
        if self.spec_block is not None:
            found["spec_indent"] = self.spec_block
            found["spec"] = True
            _spec_at(found, no)
            return
        indent = found["spec_indent"]
        if indent is not None and not self.blank:
            if self.indent > indent:
                if self.nested_draft is not None:
                    found["draft"] = self.nested_draft
                    return
            else:
                found["spec_indent"] = None
        if self.model is not None:
            found["models"].append(self.model)
        if self.spec:
            found["spec"] = True
            _spec_at(found, no)


def _spec_at(found, no):
    """The first line switching speculative decoding on (a config without a knob is shown there)."""
    if found["spec_line"] is None:
        found["spec_line"] = no


class _RefusingSaid:
    """What a line says of an engine refusing a knob without speculative settings: whether
    they switch speculative decoding on, its knobs set as environment, each form set."""

    __slots__ = ("on", "method", "draft", "model", "env", "forms")

    def record(self, no, found):
        if self.on:
            found["spec_on"] = True
            _spec_at(found, no)
            if self.method is not None:
                found["method"] = self.method
            if self.draft:
                found["draft"] = self.draft
            # the served model is a file path; curves match a local path by its file name
            if self.model and self.model not in found["models"]:
                found["models"].append(self.model)
        for knob, value, col, spelling in self.env:
            found["knob"] = (knob, value, no, col)
            found["knob_spelling"] = spelling
        for setting, name in self.forms:
            # both forms set: the server refuses to start (mutually exclusive)
            found["knob_forms"][setting] = name


def _read_refusing(flat):
    said = _RefusingSaid()
    settings = {}
    for row, m in knobs.finditer(flat, _REFUSING_SPEC_ROWS, comments=True):
        settings.setdefault(row.setting, unquote(m.group("value")))
    said.on = knobs.METHOD in settings or knobs.DRAFT in settings
    said.method = settings.get(knobs.METHOD)
    said.draft, said.model = (v if v and "$" not in v else None
                              for v in (settings.get(knobs.DRAFT), settings.get(knobs.MODEL)))
    said.env = tuple((ev.FLAG_OF_ENV[row.name], m.group("value"), m.start("name") + 1,
                      _spelling(row, m))
                     for row, m in knobs.finditer(flat, _REFUSING_ENV_ROWS, comments=True))
    said.forms = tuple((row.setting, row.name)
                       for row, _ in knobs.finditer(flat, _REFUSING_KNOB_ROWS, comments=True))
    return said


def _spelling(row, m):
    """``(name, separator)`` of a knob as the file writes it: a flag followed by its value
    after ``=`` or after blanks (one space shown); environment variables and keys ``=``."""
    return row.name, " " if row.form == knobs.FLAG and m.group("sep") != "=" else "="


def _env_setting(found, row, value, no, col, keep_first):
    """Record an SGLang/TensorRT-LLM environment setting read on line ``no``, column ``col``."""
    if row.setting in _ACC_SETTING:
        found[_ACC_SETTING[row.setting]] = value
        return
    prev = found["env_knobs"].get(row.name)
    if not keep_first or prev is None or prev[0] != value:    # keep where the value is written
        found["env_knobs"][row.name] = (value, no, col)


def _k_value(flat, rows, at_line_start):
    """The first K written in digits by any of ``rows`` on the line, or None."""
    best = None
    for row in rows:
        if row.name not in flat:
            continue
        for m in row.pattern.finditer(flat):
            if at_line_start and flat[:m.start()].strip():
                break
            digits = _DIGITS.match(m.group("value"))
            if digits:
                if best is None or m.start() < best[0]:
                    best = (m.start(), int(digits.group()))
                break
    return None if best is None else best[1]


def _new_found():
    return {"knob": None, "env_knobs": {}, "k": {}, "draft": None, "method": None,
            "atom_method": None, "rsm": None, "dsm": None, "topk": None, "one_model": None,
            "engine": None, "spec": False, "token_mode": None, "acc_method": None,
            "first": None, "models": [], "spec_on": False,
            "spec_line": None, "k_unread": None, "knob_forms": {}, "knob_spelling": None,
            "spec_indent": None}


class _State:
    """One path through the script: arms chosen so far, variables, evidence found."""

    __slots__ = ("choice", "env", "found", "eval_only")

    def __init__(self, choice, env, found, eval_only=False):
        self.choice, self.env, self.found, self.eval_only = choice, env, found, eval_only

    def fork(self, cid, arm, eval_only=None, extra=None):
        f = dict(self.found)
        f["env_knobs"] = dict(f["env_knobs"])
        f["k"] = dict(f["k"])
        f["models"] = list(f["models"])
        f["knob_forms"] = dict(f["knob_forms"])
        choice = dict(self.choice)
        if cid is not None:
            choice[cid] = arm
        if extra:
            choice.update(extra)
        return _State(choice, dict(self.env), f,
                      self.eval_only if eval_only is None else eval_only)


_SUBJECT_VAR_RE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _case_bindings(cond, arm):
    """Values a ``case`` arm's pattern pins down (``"${M}:${K}"`` with ``*V4*:2)``: K=2)."""
    pattern = next((t[2] for _, a, t in cond.tests if a == arm and isinstance(t, tuple)), None)
    if pattern is None or "|" in pattern:
        return {}
    subject = cond.subject.rsplit(" in", 1)[0].strip().strip("\"'")
    names = _SUBJECT_VAR_RE.findall(subject)
    seps = [x for x in _SUBJECT_VAR_RE.split(subject)[::2]]
    if len(names) < 1 or any(seps[0:1]) or any(seps[-1:]) or len(seps) != len(names) + 1:
        return {}
    parts, rest = [], pattern
    for sep in seps[1:-1]:
        if not sep or sep not in rest:
            return {}
        head, rest = rest.split(sep, 1)
        parts.append(head)
    parts.append(rest)
    return {name: part for name, part in zip(names, parts)
            if part and not any(ch in part for ch in "*?[")}


def _feasible_arms(cond, env):
    """``[(arm, forget)]`` that can run given ``env``: a test on a default (:class:`Soft`) does
    not prune, but its arm forgets the defaults it contradicts (``${N:-0}``, ``-gt 0``)."""
    arms = []
    earlier_true = False
    soft_before = set()        # soft variables whose defaults made an earlier test true
    tested = {arm: test for _, arm, test in cond.tests}
    for arm in range(len(cond.arms)):
        if earlier_true:
            break
        test = tested.get(arm)
        truth = evaluate_test(test, env) if test is not None else None
        forget = set(soft_before)
        if test is not None and truth is None:
            soft_truth = evaluate_test(test, env, soft_ok=True)
            softs = {v for v in vars_in(test if isinstance(test, str) else test[1])
                     if isinstance(env.get(v), Soft)}
            if soft_truth is False:
                forget |= softs
            elif soft_truth is True:
                soft_before |= softs
        if test is None or truth is not False:
            arms.append((arm, forget))
        if truth is True:
            earlier_true = True
    return arms


def _apply(ln, st):
    """Replay one line on one state: assignments, unsets, and evidence scanning."""
    env, found = st.env, st.found
    if found["first"] is None:
        found["first"] = ln.no
    if ln.heredoc:
        _scan(expand(ln.text, env), ln.no, found)
        return
    for stmt in ln.stmts:
        words = stmt.split(None, 1)
        if words and words[0] in ("echo", "log", "info", "warn"):
            continue
        is_assign = assign(stmt, env)
        if stmt.startswith("unset "):
            for name in stmt.split()[1:]:
                found["env_knobs"].pop(name, None)
            continue
        m = ASSIGN_RE.match(stmt) if is_assign else None
        if m and m.group(1) in ev.ENV_KNOBS:
            found["env_knobs"][m.group(1)] = (env.get(m.group(1)), ln.no,
                                              ln.text.find(m.group(1)) + 1)
        if m and m.group(1) in _ACC_NAMES:
            found[_ACC_NAMES[m.group(1)]] = env.get(m.group(1))
        # a spec config assigned to a variable is found at its assignment
        text = (m.group(1) + "=" + (env.get(m.group(1)) or "")) if m else (
            stmt if is_assign else expand(stmt, env))
        _scan(text, ln.no, found)


def _signature(st):
    # every key of the evidence found, as _new_found lists them
    return (st.eval_only, tuple(sorted((k, v) for k, v in st.env.items() if v is not None)),
            tuple(tuple(sorted(v.items())) if isinstance(v, dict) else
                  tuple(v) if isinstance(v, list) else v for v in st.found.values()))


def _merge_states(states, line, closes):
    """Merge states differing only in arms of closed conditions, keeping the arms they agree on."""
    groups = {}
    for st in states:
        open_choice = tuple(sorted((cid, arm) for cid, arm in st.choice.items()
                                   if closes.get(cid) is None or closes[cid] >= line))
        groups.setdefault((open_choice, _signature(st)), []).append(st)
    if len(groups) == len(states):
        return states
    merged = []
    for members in groups.values():
        first = members[0]
        if len(members) > 1:
            first.choice = {cid: arm for cid, arm in first.choice.items()
                            if all(m.choice.get(cid) == arm for m in members)}
        merged.append(first)
    return merged


def _run(lines, relevant, base_choice, forks_at, eval_split=None):
    """Replay ``lines``, forking at relevant conditions and (``eval_split``) EVAL_ONLY's."""
    with remembering():
        relevant_ids = {c.id for c in relevant}
        closes = {c.id: c.end for c in relevant}
        # a state's choices name only these conditions: each line's test against a
        # state looks at its enclosing conditions among them, not its whole nesting
        chosen = relevant_ids | set(base_choice)
        if eval_split:
            chosen |= set(eval_split[1][False]) | set(eval_split[1][True])
        states = [_State(dict(base_choice), {}, _new_found())]
        split_at = eval_split[0] if eval_split else None
        for ln in lines:
            if split_at is not None and ln.no >= split_at:
                states = [st.fork(None, None, flag, eval_split[1][flag])
                          for st in states for flag in (False, True)]
                split_at = None
            if len(states) > 4 and ln.no in forks_at:
                states = _merge_states(states, ln.no, closes)
            for cond in forks_at.get(ln.no, ()):
                nxt = []
                for st in states:
                    if cond.id in st.choice or cond.id not in relevant_ids or any(
                            st.choice.get(pc, pa) != pa for pc, pa in cond.path):
                        nxt.append(st)
                        continue
                    for arm, forget in _feasible_arms(cond, st.env):
                        new = st.fork(cond.id, arm)
                        for name in forget:
                            new.env[name] = None
                        if cond.kind == "case":
                            new.env.update(_case_bindings(cond, arm))
                        nxt.append(new)
                states = nxt[:MAX_SCENARIOS]
            path = ln.path.among(chosen)
            for st in states:
                choice = st.choice
                if path and any(choice.get(cid, arm) != arm for cid, arm in path):
                    continue
                _apply(ln, st)
        if split_at is not None:    # the EVAL_ONLY tests come after every replayed line
            states = [st.fork(None, None, flag, eval_split[1][flag])
                      for st in states for flag in (False, True)]
        for st in states:
            st.found["env"] = st.env
        return states


def _closure(wanted, new, assigns, near):
    """Add to ``wanted`` the variables that feed the ``new`` ones: all of a plain assignment's;
    on a line that itself carries evidence, only those in value position (``near``, by line)."""
    todo = list(new)
    while todo:
        name = todo.pop()
        for ln in assigns.get(name, ()):
            refs = near.get(id(ln))
            for v in vars_in(ln.text) if refs is None else refs:
                if v not in wanted:
                    wanted.add(v)
                    todo.append(v)


# the words of every line that can hold evidence: a knob, K, the draft head, the method, the
# served model or engine (the records' stems and spellings, on a command line or opening a
# YAML line), thinking; one Aho-Corasick pass over a script finds them all
_INTERESTING_WORDS = ("MODEL_ID=", "MODEL_NAME=", "think", "THINK", "chat-template", "DRAFT",
                      "model:") + _stems(
    [b.decode() for b in ev.KNOB_BYTES] + [rec.launch_word for rec in _RECORDS]
    + [r.name for r in _SERVED_ROWS] + list(_POSITIONAL + _SPEC_WORDS)
    + [r.name for r in knobs.spellings(setting=(knobs.K, knobs.METHOD, knobs.DRAFT,
                                                knobs.ONE_MODEL))
       if r.form != knobs.KEY or r.engine not in _COMMAND_CARRIED])


@functools.cache
def _automaton(words):
    """Built when first asked: finds every occurrence of each word in one pass, overlapping
    ones included, as a ``str.find`` loop per word would."""
    import ahocorasick_rs

    return ahocorasick_rs.AhoCorasick(list(words))


def _word_matches(text):
    """``(index, start, end)`` of every occurrence of every :data:`_INTERESTING_WORDS` word."""
    return _automaton(_INTERESTING_WORDS).find_matches_as_indexes(text, overlapping=True)


def _groups_named(flat):
    """The groups of :data:`_TABLE_GROUPS` one of whose names ``flat`` holds; None when it holds
    no word of :data:`_SCAN_GATE` (each name holds one)."""
    found = _automaton(_GATED_NAMES).find_matches_as_indexes(flat, overlapping=True)
    if not found:
        return None
    return {group for i, _, _ in found if i < len(_NAME_GROUPS) for group in _NAME_GROUPS[i]}


def _hit_lines(text):
    """Physical line numbers holding any of :data:`_INTERESTING_WORDS`."""

    starts = sorted({start for _, start, _ in _word_matches(text)})
    out, line, prev, i = set(), 1, 0, 0
    while i < len(starts):
        pos = starts[i]
        line += text.count("\n", prev, pos)
        prev = pos
        out.add(line)
        end = text.find("\n", pos)
        if end < 0:
            break
        i = bisect.bisect_right(starts, end, i + 1)     # the next hit on a later line
    return out


_NEAR = 48    # characters after an evidence word in which a variable is its value


def _vars_near_words(text):
    """Variables in the value position right after an evidence word (``--flag "$K"``)."""
    ends = [end for _, _, end in _word_matches(text)]
    if not ends:
        return vars_in(text)
    return {m.group(1) or m.group(4) for m in VAR_RE.finditer(text)
            if any(0 <= m.start() - e <= _NEAR for e in ends)}


def _relevant(lines, conds, hits):
    """``(conditions worth enumerating, lines worth replaying)``: those holding evidence or
    feeding it or the conditions' tests, transitively."""
    assigns = {}
    assigned = []       # per line, the names its ``NAME=value`` statements assign
    for ln in lines:
        names = ()
        for st in ln.stmts:
            m = ASSIGN_RE.match(st) if "=" in st else None
            if m:
                names += (m.group(1),)
                assigns.setdefault(m.group(1), []).append(ln)
            elif st.startswith(("printf -v ", "unset ")):
                w = st.split()
                for name in (w[2:3] if w[0] == "printf" else w[1:]):
                    assigns.setdefault(name, []).append(ln)
        assigned.append(names)
    flags = [ln.no in hits or (ln.end > ln.no and not hits.isdisjoint(range(ln.no, ln.end + 1)))
             for ln in lines]
    near = {id(ln): _vars_near_words(ln.text) for ln, flag in zip(lines, flags) if flag}
    wanted = set()
    for ln, names, flag in zip(lines, assigned, flags):
        if flag:
            wanted |= near[id(ln)]
            wanted.update(names)     # an assignment that itself carries evidence
    _closure(wanted, list(wanted), assigns, near)

    def touched_lines():
        return [flag or not wanted.isdisjoint(names) for flag, names in zip(flags, assigned)]

    touched = touched_lines()
    keep = condition_ids(ln.path for ln, t in zip(lines, touched) if t)
    relevant = [c for c in conds if c.id in keep and all(p is None for p in c.eval_polarity)
                and len(c.path) < MAX_FORK_DEPTH]
    test_lines, tested = set(), set()
    for c in relevant:
        for no, _, test in c.tests:
            test_lines.add(no)
            tested |= vars_in(test if isinstance(test, str) else test[1])
    new = tested - wanted
    if new:     # wanted is closed already: only what feeds the new names joins it
        wanted |= new
        _closure(wanted, new, assigns, near)
        touched = touched_lines()
    replay = [ln for ln, t in zip(lines, touched) if t or ln.no in test_lines]
    return relevant, replay


def _model_candidates(relpath, env, found_models):
    """Served model names: flags, model variables, then the file-name prefix as a last hint."""
    names = list(found_models)
    for var in ("HF_MODEL_ID", "MODEL_ID", "MODEL_NAME", "MODEL", "SERVED_MODEL_NAME",
                "MODEL_PATH", "MODEL_DIR"):
        v = env.get(var)
        if not v or "$" in v:
            continue
        v = str(v).strip("'\"")
        if _HF_ID_RE.match(v) or (var in ("MODEL_PATH", "MODEL_DIR") and v.startswith("/")
                                  and v.rstrip("/").rsplit("/", 1)[-1]):
            names.append(v)
    prefix = name_hint(relpath)
    if prefix:
        names.append(prefix)       # last: tried only when no named model has a curve
    return tuple(dict.fromkeys(names))


def name_hint(relpath):
    """``glm5.2`` of ``glm5.2_fp4_...sh``: a hint, never reported as a model."""
    base = os.path.basename(relpath)
    if base.lower().endswith((".md", ".markdown")):
        return None
    prefix = base.split("_", 1)[0]
    return prefix if prefix and prefix != base else None


def script_configs(relpath, text, lines, scenario_path=None, context=None):
    """One config per distinct branch outcome; agentic or not where no branch says: the
    client run, else ``context`` (a Markdown block's headings), else the path."""
    hits = _hit_lines(text)
    parsed, conds = parse(text, hits)
    relevant, replay = _relevant(parsed, conds, hits)
    has_eval = "EVAL_ONLY" in text
    # the benchmark client the script runs first, its path last
    agentic = ev.agentic_from_client(text)
    if agentic is None:
        agentic = context
    if agentic is None:
        agentic = ev.agentic_from_path(scenario_path or relpath)
    signals = ev.thinking_signals_in(text, lines)
    starts = [ln.no for ln in parsed]

    def line_at(no):
        """The logical line holding physical line ``no``, or None."""
        i = bisect.bisect_right(starts, no) - 1
        return parsed[i] if i >= 0 and parsed[i].end >= no else None

    holders = {no: ln for no in {sg[0] for sg in signals} if (ln := line_at(no)) is not None}
    conds_by_id = {c.id: c for c in conds}
    forks_at = {}
    for c in relevant:
        if c.tests:
            forks_at.setdefault(c.tests[0][0], []).append(c)
    eval_conds = [c for c in conds if any(p is not None for p in c.eval_polarity)]
    outcomes = {}
    split = None
    if has_eval:
        # per EVAL_ONLY value, each eval condition's arm for it (else its last)
        picks = {flag: {c.id: next((i for i, p in enumerate(c.eval_polarity) if p is flag),
                                   len(c.arms) - 1) for c in eval_conds}
                 for flag in (False, True)}
        first = min((c.tests[0][0] if c.tests else (c.start or 0) for c in eval_conds),
                    default=0)
        split = (first, picks)
    for st in _run(replay, relevant, {}, forks_at, split):
        st.found["choice"] = st.choice
        cfg = _to_config(relpath, st.found, lines, agentic, st.eval_only, signals, holders)
        if cfg is None:
            continue
        gate = _agentic_gate(line_at(cfg.line), conds_by_id, st.choice)
        if gate is not None:
            cfg = cfg.with_(agentic=gate)
        # a draft named by HF id or by its local copy is the same head
        head = cfg.draft.rstrip("/").rsplit("/", 1)[-1].lower() if cfg.draft else None
        key = (cfg.line, cfg.knob, cfg.value, cfg.k, head, cfg.eval_only, cfg.method)
        desc = {c.id: c.arms[st.choice[c.id]] for c in relevant if c.id in st.choice}
        if key in outcomes:
            prev = outcomes[key][1]
            outcomes[key] = (outcomes[key][0],
                             {k: v for k, v in prev.items() if desc.get(k) == v})
        else:
            outcomes[key] = (cfg, desc)
    out = []
    distinct_noneval = {k for k in outcomes if not k[5]}
    for key, (cfg, desc) in outcomes.items():
        branch = "; ".join(desc.values()) if desc and len(distinct_noneval) > 1 else None
        if cfg.eval_only:
            branch = "EVAL_ONLY=true"
        out.append(cfg.with_(branch=branch))
    out.sort(key=lambda c: (c.line, c.eval_only, c.branch or ""))
    return out


def _agentic_gate(ln, conds, choice):
    """True/False when ``ln`` runs only on an agentic / non-agentic ``IS_AGENTIC`` branch."""
    if ln is None:
        return None
    for cid, arm in ln.path:
        cond = conds.get(cid)
        if cond is None or cond.kind != "if" or "AGENTIC" not in cond.arms[0].upper():
            continue
        first = cond.arms[0]
        negated = "!=" in first or first.startswith("if !") or "== \"0\"" in first
        return (arm == 0) != negated
    return None


def _to_config(relpath, f, lines, agentic, eval_only, signals=(), holders=None):
    knob = value = spelling = None
    line, col = None, 1
    if f["knob"]:
        knob, value, line, col = f["knob"]
        spelling = f["knob_spelling"]
    engine = f["engine"]
    name = next((n for n in ev.ENV_KNOBS if f["env_knobs"].get(n, (None,))[0] is not None), None)
    if name is not None:
        value, line, col = f["env_knobs"][name]
        knob, spelling = name, None
    if knob and 0 < line <= len(lines):
        # report the physical line of a continued command that names the knob
        needle = knob.lstrip("-")
        j = line - 1
        while j < len(lines):
            raw_col = lines[j].find(needle)
            if raw_col >= 0:
                line = j + 1
                col = raw_col + 1 - (2 if knob.startswith("--") and raw_col >= 2 else 0)
                break
            if not continues(lines[j].rstrip()):
                break
            j += 1
    if _KNOB_ENGINE.get(knob, "runner") != "runner":     # the runner's variable names none
        engine = _KNOB_ENGINE[knob]
    if engine is None:
        base = os.path.basename(relpath).lower()
        engine = next((e for e, tok in FILE_TOKENS if tok in base), None)
    rec = ev.record(engine) if engine in ev.ENGINES else None
    k, k_line = next((f["k"][kind] for kind, _ in _K_KINDS if kind in f["k"]), (None, None))
    k_default = False
    if rec is not None and rec.default_k is not None and k is None and \
            f["k_unread"] is None and (f["spec_on"] or knob):
        k, k_default = rec.default_k, True
    # a launch script: it starts an engine, or sets K; other scripts that merely
    # mention speculative settings (patch helpers, docs generators) are not configs
    spec = (k is not None and not k_default) or (f["spec"] and f["engine"] is not None) \
        or f["spec_on"]
    if not spec and knob is None:
        return None
    draft = f["draft"]
    if draft is None:
        d = f["env"].get("DRAFT_MODEL") or f["env"].get("DRAFT_MODEL_ID")
        if d and _HF_ID_RE.match(d):
            draft = d
    if draft and "$" in draft:
        draft = None
    if line is None:
        line = k_line or f["spec_line"] or f["first"] or 1
    # a signal counts when the logical line holding it runs on this path
    choice = f.get("choice", {})
    thinking, how = ev.decide_thinking([
        s for s in signals
        if s[0] not in holders or all(choice.get(c, a) == a for c, a in holders[s[0]].path)])
    extra = {"eagle_topk": f["topk"], "token_mode": f["token_mode"],
             "acc_method": f["acc_method"], "atom_method": f["atom_method"]}
    if rec is not None and rec.spec_off == "refused":
        extra.update(spec_on=f["spec_on"], k_default=k_default, knob_forms=dict(f["knob_forms"]))
    if f["one_model"] is not None:
        extra["one_model_key"], extra["one_model"] = f["one_model"]
    variant = {"draft_sample_method": f["dsm"]} if f["dsm"] else {}
    if knob == ev.RUNNER_LENGTH and engine is None:
        engine = "runner"
    return ev.Config(
        path=relpath, line=line, col=col, engine=engine,
        model=_model_candidates(relpath, f["env"], f["models"]), draft=draft, method=f["method"],
        variant=variant, k=k, k_line=k_line, thinking=thinking, thinking_source=how,
        knob=knob, value=value, spelling=spelling, rejection_sample_method=f["rsm"],
        agentic=agentic, eval_only=eval_only, spec=spec,
        source_stated=ev.source_stated(lines, line) if knob else False,
        extra={**extra, "name_hint": name_hint(relpath)})


def text_configs(relpath, text, lines, literal_only=False, scenario_path=None):
    """Knobs in a config file of no known layout, read like a heredoc."""
    if literal_only and not knobs.first_set(text, ev.VALUE_ROWS, number=True):
        return []
    parsed = [Line(i + 1, t, (), True) for i, t in enumerate(lines)
              if t.strip() and not t.strip().startswith(("#", "//"))]
    f = _run(parsed, [], {}, {})[0].found
    cfg = _to_config(relpath, f, lines, ev.agentic_from_path(scenario_path or relpath), False,
                     ev.thinking_signals(lines), {})
    return [cfg] if cfg is not None and cfg.knob else []
