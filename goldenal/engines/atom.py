"""ATOM (ROCm): ``--spec-decode-acceptance-length AL`` or ``-rate`` (AL - 1) / K, server flags
read and rewritten in launch scripts and argument files.  Facts: docs/engines.md §4.1-§4.4."""

import re
import shlex
from decimal import Decimal

from goldenal.engines.base import (EngineAdapter, check_pinned, chosen_k, col_at, env_fragment,
                                   line_at, on_both_paths, on_eval_path, same_number,
                                   script_text)
from goldenal.core.errors import ParseError, PolicyError
from goldenal.engines.record import Engine

RECORD = Engine(
    name="atom", title="ATOM",
    release="ROCm/ATOM ffdf3bb5 (flags as of the merge of ROCm/ATOM#1948, fc318638)",
    value_knob="--spec-decode-acceptance-length",
    knobs=("--spec-decode-acceptance-length", "--spec-decode-acceptance-rate"),
    spellings=(("--spec-decode-acceptance-length", "length", "flag"),
               ("--spec-decode-acceptance-rate", "rate", "flag"),
               ("--num-speculative-tokens", "k", "flag"),
               ("--method", "method", "flag"),
               ("--draft-model", "draft", "flag"),
               ("--model", "model", "flag"),
               ("--dspark-config", "dspark", "flag")),
    k_ranks={"--num-speculative-tokens": 3},
    # EngineArgs.draft_model as config mappings write it (atom/model_engine/arg_utils.py:74);
    # --method switches speculative decoding on
    draft_keys=("draft_model",), spec_words=("--method",),
    launches=(("atom", r"\batom\.entrypoints|-m atom\b|\batom serve\b"),),
    launch_word="atom.entrypoints",
    info_endpoints=("/debug/mtp_stats",),
    metrics={"draft_tokens": "atom:mtp_draft_tokens",
             "accepted": "atom:mtp_accepted_tokens",
             "steps_by_accepted": "atom:mtp_decode_steps"},
    # GET /debug/mtp_stats (atom/model_engine/llm_engine.py:299-345): draft tokens, accepted,
    # the mean and the steps by drafts accepted
    count_fields={"proposed": ("total_draft_tokens",), "accepted": ("total_accepted_tokens",),
                  "length": ("average_tokens_per_forward",), "histogram": ("distribution",),
                  # the label of the steps family naming the drafts accepted
                  # (atom/entrypoints/openai/metrics.py:246-287)
                  "steps_by_accepted": ("accepted_tokens",)},
    # the log's cumulative and interval tags and their fields (atom/model_engine/scheduler.py:
    # 112-138); the first format's fields (scheduler.py@b01ceb89:226); the summary line of
    # ATOM's documentation (docs/formats.md §7)
    log_lines={"tags": ("MTP Stats", "MTP Stats Interval"),
               "fields": ("Average toks/fwd", "Accepted/Total Draft tokens",
                          "Accepted tokens distribution"),
               "first": ("Total draft tokens", "Accepted"), "summary": ("avg toks/fwd", "dist")},
    silent_paths="--spec-decode-acceptance-length without --method/--num-speculative-tokens "
                 "(dropped silently), a DSpark runtime verify length below ceil(AL-1)",
    info_keys=("enabled",), version_key=None,
    # the DSpark path takes no draft_sample_method / rejection_sample_method (docs/engines.md §4.1)
    selects_variant=False,
    file_tokens=("_atom",),
    spec_off="dropped",
    matrix_args=("extra_args", "extra-args", "server_args", "server-args", "serve_args"),
)

KNOB = "--spec-decode-acceptance-length"
RATE_KNOB = "--spec-decode-acceptance-rate"
K_FLAG = "--num-speculative-tokens"


def _refuse_dspark(raw, **where):
    """ATOM refuses forced acceptance with the DSpark confidence scheduler (or ``ragged``)."""
    import json

    if raw is None:
        return
    text = raw.strip("'\"")
    try:
        config = json.loads(text)
    except ValueError:
        confidence = "confidence_schedule" in text and "true" in text.lower()
    else:
        confidence = isinstance(config, dict) and (config.get("confidence_schedule")
                                                   or config.get("ragged"))
    if confidence:
        raise PolicyError("ATOM refuses forced acceptance together with the DSpark "
                          "confidence scheduler (confidence_schedule/ragged)", **where)


class AtomAdapter(EngineAdapter):
    """ATOM: a server CLI flag, AL or (AL - 1) / K."""

    record = RECORD

    script_name, script_sign = "ATOM", K_FLAG

    def read_script(self, path, text, variables):
        return read_command_settings(path, text)

    def script_claim(self, text, launched):
        return 1            # its flags are read wherever the script writes them

    def plan_script(self, path, text, golden_for, *, k=None, rates_for=None, form=None,
                    force=False, launched=(), known=()):
        settings = read_command_settings(path, text)
        if not settings:
            said = (f"the script starts {RECORD.launch_word} without speculative decoding"
                    if RECORD.name in launched else
                    f"the script starts no server (looked for {', '.join(known)})")
            raise ParseError(f"no ATOM speculative flags found ({K_FLAG}): {said}", path=path)
        return self.plan_commands(plan_command, settings[0], path, text, golden_for, k=k,
                                  form=form, force=force)

    forms = ("length", "rate")
    emit_help = f"{KNOB} AL (--rate: {RATE_KNOB} (AL-1)/K)"
    emit_options = ("dspark_config",)

    def fragment(self, al_text, *, k, fmt, form=None, dspark_config=None, **options):
        import json

        _refuse_dspark(dspark_config)
        flag = RATE_KNOB if form == "rate" else KNOB
        value = self.convert(al_text, k=k, form=form)
        if fmt in ("args", "shell", "env"):
            return env_fragment({"SPEC_DECODE_ARGS": f"{flag} {value}"}, fmt,
                                args=f"{flag} {shlex.quote(value)}")
        if fmt == "json":
            # The committed spelling as a bare JSON number (2.50, not 2.5).
            return "{" + json.dumps(flag.lstrip("-").replace("-", "_")) + ": " + value + "}"
        if fmt == "yaml":
            return f"{flag.lstrip('-')}: {value}"
        raise ValueError(f"unknown format {fmt!r}")


def read_command_settings(path, text=None):
    """ATOM settings written as literal flags in a script or argument file."""
    from goldenal.recipes.shell import literal_variables, resolve
    from goldenal.engines.setting import SpecSetting

    path, text = script_text(path, text)
    flags = {flag: ms[0] for flag, ms in _all_flags(text).items()}     # the first of each
    knob = KNOB if KNOB in flags else (RATE_KNOB if RATE_KNOB in flags else None)
    if knob is None and (K_FLAG not in flags or "atom" not in text.lower()):
        return []
    variables = literal_variables(text)
    value_of = {f: m.group("value").strip("'\"") for f, m in flags.items()}
    at = flags.get(knob) or flags.get(K_FLAG)
    k = _literal_k(value_of[K_FLAG], variables) if K_FLAG in flags else None
    extra = {}
    if knob is not None:
        resolved = resolve(value_of[knob], variables)
        if resolved is not None and resolved != value_of[knob]:
            extra["resolved"] = resolved
    if "--dspark-config" in flags:
        extra["dspark_config"] = value_of["--dspark-config"]
    if KNOB in flags and RATE_KNOB in flags:
        extra[RATE_KNOB] = value_of[RATE_KNOB]
    return [SpecSetting(
        path=path, line=line_at(text, at.start()), col=col_at(text, at.start()), engine="atom",
        knob=knob, value=value_of.get(knob) if knob else None, k=k,
        draft=value_of.get("--draft-model"), method=value_of.get("--method"), extra=extra,
        model=(_resolved(flags["--model"].group("value"), variables) if "--model" in flags
               else None))]


def _resolved(raw, variables):
    """A flag's value, through a ``$VAR`` with one literal assignment; None when unknown."""
    from goldenal.recipes.shell import resolve

    value = raw.strip("'\"")
    return (resolve(raw, variables) if "$" in value else value) or None


def _all_flags(text):
    """Every uncommented occurrence of each flag, in file order."""
    from goldenal.recipes import knobs

    found = {}
    for row, m in knobs.finditer(text, RECORD.rows()):
        found.setdefault(row.name, []).append(m)
    return found


def _literal_k(raw, variables):
    """K from a flag's value: a literal, or a ``$VAR`` with one literal assignment."""
    value = _resolved(raw, variables)
    return int(value) if value and value.isdigit() else None


def plan_command(path, text, golden_for_k, *, k=None, form=None, force=False):
    """:meth:`~goldenal.engines.base.EngineAdapter.plan_script` for ATOM's flags, by K alone;
    every K flag is a launch path, a knob variable checked through its one assignment."""
    from goldenal.recipes.shell import ASSIGNMENT, eval_paths, unquote
    from goldenal.engines.setting import Plan
    from goldenal.recipes import spans

    flags = _all_flags(text)
    k_flags = flags.get(K_FLAG, [])
    if not k_flags:
        raise ParseError(f"no {K_FLAG} on the command line", path=path)
    variables, assigned = {}, {}
    for m in ASSIGNMENT.finditer(text):
        variables.setdefault(m.group("key"), unquote(m.group("raw")))
        assigned.setdefault(m.group("key"), []).append(m)
    for m in flags.get("--dspark-config", ()):
        _refuse_dspark(m.group("value"), path=path, line=line_at(text, m.start()))
    paths = eval_paths(text)
    guarded = "EVAL_ONLY" in text
    flag = RATE_KNOB if form == "rate" else KNOB
    other = KNOB if flag == RATE_KNOB else RATE_KNOB

    def k_of(m):
        found = _literal_k(m.group("value"), variables)
        return chosen_k(found, k, said=f"{K_FLAG} {found}", path=path,
                        line=line_at(text, m.start()),
                        missing=f"{K_FLAG} {m.group('value')} is not a literal integer (nor a "
                                "variable with one literal assignment)")

    serving = [m for m in k_flags if paths.get(line_at(text, m.start())) is not True]
    if not serving:
        raise PolicyError(f"every {K_FLAG} is on the EVAL_ONLY=true path, which keeps real "
                          "verification; there is no benchmark path to carry the knob",
                          path=path, line=line_at(text, k_flags[0].start()))
    knobs = [(name, m) for name in (KNOB, RATE_KNOB) for m in flags.get(name, [])]
    knobs.sort(key=lambda item: item[1].start())
    for name, m in knobs:
        if paths.get(line_at(text, m.start())) is True:
            raise on_eval_path(name, path=path, line=line_at(text, m.start()))
    edits, changes, targets = [], [], []
    if knobs:
        ks = sorted({k_of(m) for m in serving})
        if len(ks) != 1:
            raise PolicyError(f"the launch paths draft K={', '.join(map(str, ks))} but share "
                              f"one {knobs[0][0]}; give each path its own knob", path=path,
                              line=line_at(text, knobs[0][1].start()))
        (k_value,) = ks
        for name, m in knobs:
            line = line_at(text, m.start())
            al_text = golden_for_k(k_value, line)
            want = ADAPTER.convert(al_text, k=k_value, form="rate" if name == RATE_KNOB
                                   else None)
            if name == other and form is not None:
                # the other spelling of the knob goes; ours replaces it
                _check_same_al(path, text, m, name, al_text, k_value, variables, force)
                start = m.start()
                while start > 0 and text[start - 1] in " \t":
                    start -= 1
                value = ADAPTER.convert(al_text, k=k_value, form=form)
                edits.append(spans.Edit(start, m.end(), f" {flag} {value}"))
                changes += [(line, name, m.group("value"), None), (line, flag, None, value)]
                targets.append((line, k_value, al_text, value))
                continue
            literal = m.group("value").strip("'\"")
            targets.append((line, k_value, al_text, want))
            if literal.startswith("$"):
                edit = _variable_edit(path, text, m, name, al_text, want, k_value, variables,
                                      assigned, force)
                if edit is not None:
                    edits.append(edit[0])
                    changes.append(edit[1])
                continue
            if _carries(name, literal, al_text, k_value):
                continue        # golden at the precision written: stays as written
            check_pinned(name, literal, want, force=force, path=path, line=line)
            if literal != want and not same_number(literal, want):
                edits.append(spans.Edit(m.start("value"), m.end("value"), want))
                changes.append((line, name, literal, want))
        return Plan(edits=tuple(edits), changes=tuple(changes)), targets
    for m in serving:
        line = line_at(text, m.start())
        if paths.get(line) is None and guarded:
            raise on_both_paths(K_FLAG, path=path, line=line)
        k_value = k_of(m)
        al_text = golden_for_k(k_value, line)
        value = ADAPTER.convert(al_text, k=k_value, form=form)
        edits.append(spans.Edit(m.end(), m.end(), f" {flag} {value}"))
        changes.append((line, flag, None, value))
        targets.append((line, k_value, al_text, value))
    return Plan(edits=tuple(edits), changes=tuple(changes)), targets


def _as_al(name, text, k):
    """The AL a knob value means, as a Decimal (None when not a number)."""
    try:
        value = Decimal(text.strip("'\""))
    except (ArithmeticError, ValueError):
        return None
    return value if name == KNOB else 1 + k * value


def _carries(name, written, al_text, k):
    """Does a written length or rate carry the golden AL at its precision (docs/policy.md §2)?"""
    from goldenal.engines.values import carries_golden

    return carries_golden(written, al_text, unit="length" if name == KNOB else "rate", k=k)


def _check_same_al(path, text, m, name, al_text, k, variables, force):
    from goldenal.recipes.shell import resolve

    raw = m.group("value")
    shown = raw.strip("'\"")
    value = resolve(raw, variables) if shown.startswith("$") else shown
    pinned = _as_al(name, value or "", k)
    if pinned is None or (not _carries(name, value, al_text, k) and not force):
        check_pinned(name, shown, al_text if name == KNOB else
                     ADAPTER.convert(al_text, k=k, form="rate"), force=force, path=path,
                     line=line_at(text, m.start()))


def _variable_edit(path, text, m, name, al_text, want, k, variables, assigned, force):
    """A knob given as ``"$VAR"``: None when the variable holds the value, else ``(edit,
    change)``; a computed variable or one assigned more than once is refused."""
    from goldenal.recipes.shell import substitute, unquote
    from goldenal.recipes import spans

    raw = m.group("value").strip("'\"")
    match = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", raw)
    line = line_at(text, m.start())
    holders = assigned.get(match.group(1), []) if match else []
    current = unquote(holders[0].group("raw")) if len(holders) == 1 else None
    pinned = _as_al(name, current, k) if current is not None else None
    computed = False
    if pinned is None and current is not None and current.startswith("$("):
        # $(awk 'BEGIN{print ...}') and the like, evaluated as the audit does
        start = holders[0].start("raw")
        end = text.find("\n", start)
        value = substitute(text[start:end if end >= 0 else len(text)].strip(), variables, 0)
        pinned = _as_al(name, unquote(value), k)
        computed = pinned is not None
    if pinned is None:
        raise PolicyError(f"{name} is {raw}, which is not one literal assignment in the file "
                          "(computed at run time or assigned several times); write the value "
                          f"{want} there by hand", path=path, line=line)
    if _carries(name, unquote(value) if computed else current, al_text, k):
        return None
    if computed:
        raise PolicyError(f"{name} is {raw}, computed at run time as {unquote(value)}, which "
                          f"is not the golden value {want}; fix the computation by hand",
                          path=path, line=line)
    start, end = holders[0].span("raw")
    check_pinned(name, current, want, force=force, path=path, line=line_at(text, start))
    return spans.Edit(start, end, want), (line_at(text, start), name, current, want)


ADAPTER = AtomAdapter()
