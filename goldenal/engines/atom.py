"""ATOM (ROCm): ``--spec-decode-acceptance-length AL`` or ``--spec-decode-acceptance-rate``.

The length flag takes the AL itself, in [1, K+1] with K =
``--num-speculative-tokens``; the rate flag takes (AL - 1) / K in [0, 1].  The
two are mutually exclusive, and ATOM refuses either together with the DSpark
confidence scheduler (``--dspark-config '{"confidence_schedule": true}'``,
and ``ragged``, which needs it).  Source: ENGINES.md §4 (``atom/config.py``,
``atom/model_engine/arg_utils.py`` as of ROCm/ATOM#1948).

ATOM is configured on the command line, so this adapter reads and rewrites
command lines in shell scripts and argument files where the flags are
written with literal values.
"""

import json
import os
import re
from decimal import Decimal

from goldenal.engines import spans
from goldenal.engines.base import EngineAdapter, Plan, SpecSetting, check_pinned
from goldenal.errors import ParseError, PolicyError

KNOB = "--spec-decode-acceptance-length"
RATE_KNOB = "--spec-decode-acceptance-rate"
K_FLAG = "--num-speculative-tokens"
FORMS = ("length", "rate")

_FLAG = re.compile(r"(?P<flag>--(?:spec-decode-acceptance-length|spec-decode-acceptance-rate|"
                   r"num-speculative-tokens|method|draft-model|model|dspark-config))"
                   r"(?P<sep>=|[ \t]+(?:\\\n[ \t]*)?)(?P<value>'[^']*'|\"[^\"]*\"|[^\s\\]+)")


def acceptance_rate(al_text, k):
    """(AL - 1) / K as a decimal string, exact when it terminates.

    ``acceptance_rate("2.83", 3) == "0.61"``.  A repeating quotient is given
    to 12 decimals, so 1 + K * rate is within 1e-11 of the AL; the length
    form is exact and is the default for that reason.
    """
    if not k or int(k) <= 0:
        raise PolicyError("the rate form needs K (--num-speculative-tokens) > 0")
    q = (Decimal(al_text) - 1) / Decimal(int(k))
    text = format(q.quantize(Decimal("1e-12")), "f").rstrip("0").rstrip(".")
    return text or "0"


def _dspark_confidence(raw):
    if raw is None:
        return False
    text = raw.strip("'\"")
    try:
        config = json.loads(text)
    except ValueError:
        return "confidence_schedule" in text and "true" in text.lower()
    return bool(isinstance(config, dict) and (config.get("confidence_schedule")
                                               or config.get("ragged")))


class AtomAdapter(EngineAdapter):
    """ATOM: a server CLI flag, AL or (AL - 1) / K."""

    name = "atom"
    knob = KNOB

    def convert(self, al_text, *, k=None, form=None):
        if form in (None, "length"):
            return al_text
        if form == "rate":
            return acceptance_rate(al_text, k)
        raise ValueError(f"`form` must be one of {', '.join(FORMS)}, got {form!r}")

    def fragment(self, al_text, *, k, fmt, form=None, dspark_config=None, **options):
        if _dspark_confidence(dspark_config):
            raise PolicyError("ATOM refuses forced acceptance together with the DSpark "
                              "confidence scheduler (confidence_schedule/ragged)")
        flag = RATE_KNOB if form == "rate" else KNOB
        value = self.convert(al_text, k=k, form=form)
        if fmt == "args":
            return f"{flag} {value}"
        if fmt == "shell":
            return f"export SPEC_DECODE_ARGS='{flag} {value}'"
        if fmt == "env":
            return f"SPEC_DECODE_ARGS='{flag} {value}'"
        if fmt == "json":
            # The committed spelling as a bare JSON number (2.50, not 2.5).
            return "{" + json.dumps(flag.lstrip("-").replace("-", "_")) + ": " + value + "}"
        if fmt == "yaml":
            return f"{flag.lstrip('-')}: {value}"
        raise ValueError(f"unknown format {fmt!r}")


def _flags(text):
    """First uncommented occurrence of each flag."""
    found = {}
    for m in _FLAG.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "#" in text[line_start:m.start()]:
            continue
        found.setdefault(m.group("flag"), m)
    return found


def _line(text, index):
    return text.count("\n", 0, index) + 1


def _col(text, index):
    return index - (text.rfind("\n", 0, index) + 1) + 1


def read_command_settings(path, text=None):
    """ATOM settings written as literal flags in a script or argument file."""
    path = os.fspath(path)
    if text is None:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    flags = _flags(text)
    if K_FLAG not in flags and KNOB not in flags and RATE_KNOB not in flags:
        return []
    if "atom" not in text.lower() and KNOB not in flags and RATE_KNOB not in flags:
        return []
    from goldenal.engines.shell import _ASSIGN, _resolve, _unquote

    variables = {}
    for m in _ASSIGN.finditer(text):
        variables.setdefault(m.group(1), _unquote(m.group(2)))
    value_of = {f: m.group("value").strip("'\"") for f, m in flags.items()}
    knob = KNOB if KNOB in flags else (RATE_KNOB if RATE_KNOB in flags else None)
    at = flags.get(knob) or flags.get(K_FLAG)
    k = value_of.get(K_FLAG)
    if k is not None and not k.isdigit():
        k = _resolve(k, variables)
    extra = {}
    if knob is not None:
        resolved = _resolve(value_of[knob], variables)
        if resolved is not None and resolved != value_of[knob]:
            extra["resolved"] = resolved
    if "--dspark-config" in flags:
        extra["dspark_config"] = value_of["--dspark-config"]
    if KNOB in flags and RATE_KNOB in flags:
        extra[RATE_KNOB] = value_of[RATE_KNOB]
    return [SpecSetting(
        path=path, line=_line(text, at.start()), col=_col(text, at.start()), engine="atom",
        role=None, knob=knob, value=value_of.get(knob) if knob else None,
        k=int(k) if k and k.isdigit() else None, draft=value_of.get("--draft-model"),
        method=value_of.get("--method"), variant={}, model=value_of.get("--model"),
        extra=extra)]


def plan_command(path, text, al_text, *, k=None, form=None, force=False):
    """Edits that make a command line carry the golden AL (length or rate form)."""
    flags = _flags(text)
    if K_FLAG not in flags:
        raise ParseError(f"no literal {K_FLAG} on the command line", path=path)
    raw_k = flags[K_FLAG].group("value").strip("'\"")
    if not raw_k.isdigit():
        raise ParseError(f"{K_FLAG} is {raw_k!r}, not a literal integer", path=path,
                         line=_line(text, flags[K_FLAG].start()))
    if "--dspark-config" in flags and _dspark_confidence(flags["--dspark-config"].group("value")):
        raise PolicyError("ATOM refuses forced acceptance together with the DSpark confidence "
                          "scheduler (confidence_schedule/ragged)", path=path,
                          line=_line(text, flags["--dspark-config"].start()))
    flag = RATE_KNOB if form == "rate" else KNOB
    other = KNOB if flag == RATE_KNOB else RATE_KNOB
    value = ADAPTER.convert(al_text, k=int(raw_k), form=form)
    edits, changes = [], []
    if other in flags:
        m = flags[other]
        old = m.group("value")
        pinned = (Decimal(old.strip("'\"")) if other == KNOB
                  else 1 + int(raw_k) * Decimal(old.strip("'\"")))
        if abs(pinned - Decimal(al_text)) > Decimal("1e-9") and not force:
            check_pinned(other, old, al_text, force=force, path=path,
                         line=_line(text, m.start()))
        start = m.start()
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        edits.append(spans.Edit(start, m.end(), ""))
        changes.append((other, old, None))
    if flag in flags:
        m = flags[flag]
        old = m.group("value").strip("'\"")
        check_pinned(flag, old, value, force=force, path=path, line=_line(text, m.start()))
        if old != value:
            edits.append(spans.Edit(m.start("value"), m.end("value"), value))
            changes.append((flag, old, value))
    else:
        m = flags[K_FLAG]
        edits.append(spans.Edit(m.end(), m.end(), f" {flag} {value}"))
        changes.append((flag, None, value))
    return Plan(edits=tuple(edits), changes=tuple(changes)), int(raw_k)


ADAPTER = AtomAdapter()
