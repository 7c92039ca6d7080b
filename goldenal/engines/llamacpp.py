"""llama.cpp (``llama-server``): ``--spec-synth-rates P0,...`` replays a schedule as written;
``--spec-synth-len L`` resolves to a geometric one, unlike every other engine's length knob.
Facts: docs/engines.md §5.1."""

import math
import re
from decimal import Decimal, InvalidOperation

from goldenal.engines.base import (EngineAdapter, check_pinned, chosen_k, col_at, env_fragment,
                                   line_at, on_both_paths, on_eval_path, script_text)
from goldenal.core.errors import ParseError, PolicyError
from goldenal.engines.record import Engine

RECORD = Engine(
    name="llamacpp", title="llama.cpp",
    release="ggml-org/llama.cpp as vendored in the llama-cpp-python 0.3.36 sdist",
    value_knob="--spec-synth-len", env_knob="LLAMA_ARG_SPEC_SYNTH_LEN",
    knobs=("--spec-synth-len", "--spec-synth-rates", "LLAMA_ARG_SPEC_SYNTH_LEN",
           "LLAMA_ARG_SPEC_SYNTH_RATES"),
    # llama-server flags and their LLAMA_ARG_* environment names (common/arg.cpp)
    spellings=(("--spec-synth-len", "length", "flag"),
               ("LLAMA_ARG_SPEC_SYNTH_LEN", "length", "env"),
               ("--spec-synth-rates", "rates", "flag"),
               ("LLAMA_ARG_SPEC_SYNTH_RATES", "rates", "env"),
               ("--spec-draft-n-max", "k", "flag"),
               ("LLAMA_ARG_SPEC_DRAFT_N_MAX", "k", "env"),
               ("--spec-type", "method", "flag"),
               ("LLAMA_ARG_SPEC_TYPE", "method", "env"),
               ("--spec-draft-model", "draft", "flag"),
               ("-md", "draft", "flag"),
               ("--model-draft", "draft", "flag"),
               ("LLAMA_ARG_SPEC_DRAFT_MODEL", "draft", "env"),
               ("-m", "model", "flag"),
               ("--model", "model", "flag")),
    k_ranks={"--spec-draft-n-max": 7, "LLAMA_ARG_SPEC_DRAFT_N_MAX": 7},
    launches=(("llama-server", r"(?<![\w.-])llama-server(?![\w.-])"),),
    launch_word="llama-server",
    aliases=("llama.cpp", "llama-cpp"),
    info_endpoints=("/props",),
    metrics={"drafts": "llamacpp:spec_decode_num_drafts",
             "draft_tokens": "llamacpp:spec_decode_num_draft_tokens",
             "accepted": "llamacpp:spec_decode_num_accepted_tokens",
             "per_position": "llamacpp:spec_decode_num_accepted_tokens_per_pos",
             "emitted": "llamacpp:spec_decode_num_emitted_tokens"},
    silent_paths="llama-server started without --spec-synth-len/--spec-synth-rates (or "
                 "LLAMA_ARG_SPEC_SYNTH_* missing from the server's own environment), a draft "
                 "limit reduced below K by the speculative implementation",
    # a completion's "timings": draft tokens and accepted ones of the request
    # (tools/server/server-task.cpp result_timings::to_json)
    count_fields={"drafted": ("draft_n",), "accepted": ("draft_n_accepted",),
                  "timings": ("timings",)},
    # the server log (docs/formats.md §8): the per-task line and its trace per-position
    # companion (tools/server/server-context.cpp:628-651), the statistics line's fields
    # (common/speculative.cpp:2933-2975), the start-up synthetic-acceptance lines
    # (server-context.cpp), and older servers' per-request line (ggml-org/llama.cpp#24536)
    log_lines={"task": ("draft acceptance", "mean len", "acc per pos"),
               "statistics": ("#gen drafts", "#acc tokens", "#gen tokens", "#mean acc len",
                              "#acc rate/pos", "#calls(b,g,a)"),
               "synthetic": ("synthetic acceptance: n_max",
                             "synthetic acceptance draft limit was reduced from"),
               "old": ("mean acceptance length", "acceptance rate per position")},
    # tools/server/server-task.cpp to_metrics: doubles on a default stream
    counter_digits=6,
    per_position_grows=True,
    # get_res_props (server-context.cpp); speculative.* only in releases with --draft-max
    info_keys=("model_path", "total_slots",
               ("default_generation_settings", "params", "speculative.n_max"),
               ("default_generation_settings", "params", "speculative.n_min"),
               ("default_generation_settings", "params", "speculative.p_min")),
    version_key="build_info",
    slots_endpoint="/slots",
    # server_slot::to_json (server-context.cpp): each slot's flag, and its params object,
    # whose "speculative.*" keys are the draft settings (named after the flag)
    slot_fields=("speculative", "params"),
    k_keys=("speculative.n_max", "slots.speculative.n_max"),
    geometric_length=True,
    default_k=3,  # common_params_speculative draft n_max (common/common.h)
    spec_off="refused",  # server-context.cpp: "synthetic acceptance requires ..."
)

KNOB = "--spec-synth-len"
RATES_KNOB = "--spec-synth-rates"
ENV_KNOB = "LLAMA_ARG_SPEC_SYNTH_LEN"
ENV_RATES = "LLAMA_ARG_SPEC_SYNTH_RATES"
K_FLAG = "--spec-draft-n-max"
K_ENV = "LLAMA_ARG_SPEC_DRAFT_N_MAX"
TYPE_FLAG = "--spec-type"
TYPE_ENV = "LLAMA_ARG_SPEC_TYPE"
DRAFT_FLAGS = ("--spec-draft-model", "-md", "--model-draft")
DRAFT_ENV = "LLAMA_ARG_SPEC_DRAFT_MODEL"
MODEL_FLAGS = ("-m", "--model")
SERVER = "llama-server"
DEFAULT_K = RECORD.default_k
FLAG_OF_ENV = {ENV_KNOB: KNOB, ENV_RATES: RATES_KNOB}
ENV_OF_FLAG = {KNOB: ENV_KNOB, RATES_KNOB: ENV_RATES}


# -- schedules -----------------------------------------------------------------

def geometric_rates(al, k):
    """The survival llama.cpp realises for ``--spec-synth-len al`` at K = ``k``, as
    ``common_speculative_synth_rates_resolve``: p bisected 32 times on p + ... + p^K = al - 1."""
    length = float(al)
    if not math.isfinite(length) or not 1.0 <= length <= k + 1:
        raise ValueError(f"synthetic acceptance length must be finite and within [1, {k + 1}]")
    if length == k + 1:
        p = 1.0
    elif length > 1.0:
        lo, hi = 0.0, 1.0
        for _ in range(32):
            mid = 0.5 * (lo + hi)
            total, term = 0.0, mid
            for _ in range(k):
                total += term
                term *= mid
            lo, hi = (mid, hi) if total < length - 1.0 else (lo, mid)
        p = 0.5 * (lo + hi)
    else:
        p = 0.0
    return [p ** (i + 1) for i in range(k)]


def min_variance_rates(al_text, k):
    """vLLM's minimum-variance survival ``[1]*f, p, 0...`` as exact decimal strings."""
    from goldenal.core.acceptance import min_variance_schedule

    return [format((Decimal(r.numerator) / Decimal(r.denominator)).normalize(), "f")
            for r in min_variance_schedule(str(al_text), k)]


def rates_text(rates):
    """``P0,P1,...`` as ``--spec-synth-rates`` takes it (no spaces, shortest decimals)."""
    return ",".join(r.strip() if isinstance(r, str)
                    else f"{float(r):.6f}".rstrip("0").rstrip(".") or "0" for r in rates)


def parse_rates(text):
    """A ``--spec-synth-rates`` value split as llama.cpp does; ValueError names a bad entry."""
    values = []
    for raw in str(text).strip().strip("'\"").split(","):
        item = raw.strip()
        try:
            values.append(float(item))
        except ValueError:
            raise ValueError(f"rate {item!r} is not a number") from None
    return values


def rates_problem(rates, k):
    """Why llama.cpp refuses these rates at start-up for K = ``k``, or None."""
    if k is not None and len(rates) != k:
        return f"rates must contain K={k} values (the effective --spec-draft-n-max), got {len(rates)}"
    for i, r in enumerate(rates):
        if not math.isfinite(r) or not 0.0 <= r <= 1.0:
            return f"rate {i} is {r:g}: rates must be finite and within [0, 1]"
        if i and r > rates[i - 1]:
            return (f"rate {i} ({r:g}) exceeds rate {i - 1} ({rates[i - 1]:g}): rates must be "
                    "non-increasing (unconditional survival)")
    return None


def length_note(al_text, k):
    """The one sentence every writer says about the bare length form."""
    geo = ", ".join(f"{r:.3f}" for r in geometric_rates(al_text, k))
    mv = ",".join(min_variance_rates(al_text, k))
    return (f"llama.cpp realises {KNOB} {al_text} at K={k} as a geometric schedule (survival "
            f"[{geo}]), not the minimum-variance one vLLM, SGLang, TensorRT-LLM and ATOM "
            f"realise ([{mv}]); for that distribution use the rates form (emit's default: "
            f"{RATES_KNOB} {mv})")


class LlamaCppAdapter(EngineAdapter):
    """llama.cpp: the AL itself (geometric schedule), or explicit survival rates."""

    record = RECORD

    script_name = script_sign = SERVER

    def read_script(self, path, text, variables):
        return read_command_settings(path, text)

    def script_claim(self, text, launched):
        return 3 if commands(text) else 0

    def plan_script(self, path, text, golden_for, *, k=None, rates_for=None, form=None,
                    force=False, launched=(), known=()):
        found = next((s for s in read_command_settings(path, text)
                      if s.extra.get("speculative")), None)
        return self.plan_commands(plan_command, found, path, text, golden_for, rates_for, k=k,
                                  force=force)

    def start_refusal(self, said, value, k, *, al, rates, spec_on, k_default, forms):
        """llama-server's start-up checks (server-context.cpp), as GAL206, GAL207, GAL204."""
        def flag(setting):
            return next(row[0] for row in RECORD.spellings if row[1:3] == (setting, "flag"))

        refuses = f"{SERVER} refuses to start"
        if not spec_on:
            return "GAL206", (f"{said} on a {SERVER} without speculative decoding (no "
                              f"{flag('method')} / {flag('draft')}): the server refuses to "
                              "start (synthetic acceptance requires an initialized speculative "
                              "decoding context)")
        default = f" (llama.cpp's default, no {flag('k')})" if k_default else ""
        if len(forms) > 1:
            return "GAL207", (f"{forms['length']} and {forms['rates']} are both set: {refuses} "
                              "(synthetic acceptance length and rates are mutually exclusive); "
                              "keep one")
        if rates:
            try:
                problem = rates_problem(parse_rates(value), k)
            except ValueError as exc:
                return "GAL207", f"{said}: {exc}; {refuses}"
            return ("GAL207", f"{said}: {problem}{default}; {refuses}") if problem else None
        if k is not None and al is not None and not 1 <= al <= k + 1:
            return "GAL204", f"{said} is outside [1, {k + 1}] for K={k}{default}; {refuses}"
        return None

    forms = ("length",)
    emit_help = (f"{RATES_KNOB} (env {ENV_RATES}) with the min-variance\n"
                 "schedule [1]*f, p, 0... that the other engines' length knobs realise, so\n"
                 "`goldenal verify` confirms it as it is; --distribution: the curve's own\n"
                 f"per-position profile; --length: {KNOB} AL ({ENV_KNOB}),\n"
                 "which llama.cpp realises as a GEOMETRIC schedule (constant conditional p,\n"
                 "p+...+p^K = AL-1): verify it with --profile geometric")
    default_form = "rates"      # the length flag realises a geometric schedule

    def rates_value(self, rates):
        return rates_text(rates)

    def min_variance_value(self, al_text, k):
        return ",".join(min_variance_rates(al_text, k))

    def emit(self, al_text, *, k, fmt, rates=None, form=None, **options):
        text, knob, value, _ = super().emit(al_text, k=k, fmt=fmt, rates=rates, **options)
        return text, knob, value, (() if rates is not None else (length_note(al_text, k),))

    def fragment(self, al_text, *, k, fmt, rates=None, **options):
        flag, value = ((RATES_KNOB, rates_text(rates)) if rates is not None
                       else (KNOB, self.convert(al_text)))
        return env_fragment({ENV_OF_FLAG[flag]: value}, fmt, args=f"{flag} {value}")


ADAPTER = LlamaCppAdapter()


# -- reading command lines ------------------------------------------------------

# :func:`server_spans` replaces a pattern that retries ``\S*`` from every position of a word
_SERVER_WORD = re.compile(r"llama-server(?![\w.-])")
_WORD_CHAR = re.compile(r"[\w.-]")
_NON_SPACE = re.compile(r"\S*")
_SPACE_BEFORE = re.compile(r"\s")
# a logical line: backslash continuations joined
_LOGICAL_LINE = re.compile(r"(?:[^\n]*\\[ \t]*\n)*[^\n]*")


def server_spans(text):
    r"""``(start, end)`` of every ``llama-server`` command word, path included: what
    ``(?<![\w.-])(?:\S*/)?llama-server(?![\w.-])`` finds, in linear time."""
    found = [m.start() for m in _SERVER_WORD.finditer(text)]
    out, i = [], 0
    while i < len(found):
        start = p = found[i]
        while start > 0 and not _SPACE_BEFORE.match(text, start - 1):
            start -= 1
        end = _NON_SPACE.match(text, p).end()
        word = []
        while i < len(found) and found[i] < end:
            word.append(found[i])
            i += 1
        slashed = [q for q in word if q > start and text[q - 1] == "/"]
        pos = start
        if slashed:
            out.append((start, slashed[-1] + 12))
            pos = slashed[-1] + 12
        out += [(q, q + 12) for q in word
                if q >= pos and (q == start or not _WORD_CHAR.match(text, q - 1))]
    return out


def _unq(text):
    from goldenal.recipes.shell import unquote

    return unquote(text or "")


class Command:
    """One ``llama-server`` command line of a script: its flags and the environment."""

    def __init__(self, text, start, end, flags, env):
        self.start, self.end = start, end
        self.flags = flags              # flag -> [match]
        self.env = env                  # name -> (value, match or None)
        self.line = line_at(text, start)

    def value(self, *flags):
        """The last value of the first of ``flags`` written, or None."""
        found = next((self.flags[f] for f in flags if self.flags.get(f)), None)
        return _unq(found[-1].group("value")) if found else None

    @property
    def speculative(self):
        """Speculative decoding is configured (a type or a draft model)."""
        return bool(self.value(TYPE_FLAG, *DRAFT_FLAGS)
                    or self.env.get(TYPE_ENV) or self.env.get(DRAFT_ENV))

    def knobs(self):
        """``[(name, value as written, match, "flag" or "env")]`` in file order."""
        out = [(flag, m.group("value"), m, "flag") for flag in (KNOB, RATES_KNOB)
               for m in self.flags.get(flag, [])]
        out += [(name, value, m, "env") for name, (value, m) in self.env.items()
                if name in FLAG_OF_ENV]
        out.sort(key=lambda item: item[2].start() if item[2] is not None else -1)
        return out


def commands(text):
    """Every uncommented ``llama-server`` command, with its exported and prefixed environment."""
    from goldenal.recipes import knobs as table

    flag_rows = RECORD.rows(form=table.FLAG)
    env_rows = RECORD.rows(form=table.ENV)
    exported, out, pos = {}, [], 0
    # (start, env match or None, end of the server word), in text order
    events = [(start, None, word_end) for start, word_end in server_spans(text)
              if not table.commented(text, start)]
    events += [(m.start(), m, None) for _, m in table.finditer(text, env_rows)]
    events.sort(key=lambda e: e[0])
    for start, m, word_end in events:
        if start < pos:
            continue
        line_start = text.rfind("\n", 0, start) + 1
        if m is not None:
            before = text[line_start:start].strip()
            if before in ("", "export") or before.startswith("export "):
                exported[m.group("name")] = (_unq(m.group("value")), m)
            continue
        end = _LOGICAL_LINE.match(text, start).end()
        flags = {}
        for _, f in table.finditer(text, flag_rows, word_end, end):
            flags.setdefault(f.group("name"), []).append(f)
        env = dict(exported)
        for _, e in table.finditer(text, env_rows, line_start, start):
            env[e.group("name")] = (_unq(e.group("value")), e)
        out.append(Command(text, start, end, flags, env))
        pos = end
    return out


def _path_value(raw, variables):
    """A model path resolved, else its literal file name (``$MODELS/t.gguf``: ``t.gguf``)."""
    from goldenal.recipes.shell import resolve

    if not raw or "$" not in raw:
        return raw or None
    resolved = resolve(raw, variables)
    if resolved is not None:
        return resolved
    tail = raw.rstrip("/").rsplit("/", 1)[-1]
    return tail if tail and "$" not in tail and tail != raw else None


def command_k(cmd, variables):
    """``(K, how)``: ``how`` is "flag", "env" or "default" (llama.cpp's n_max of 3)."""
    from goldenal.recipes.shell import resolve

    raw = cmd.value(K_FLAG)
    how = "flag"
    if raw is None and K_ENV in cmd.env:
        raw, how = cmd.env[K_ENV][0], "env"
    if raw is None:
        return DEFAULT_K, "default"
    value = resolve(raw, variables)
    return (int(value), how) if value is not None and value.isdigit() else (None, how)


def read_command_settings(path, text=None):
    """llama.cpp settings of every ``llama-server`` command in a script or argument file."""
    from goldenal.recipes.shell import literal_variables, resolve
    from goldenal.engines.setting import SpecSetting

    path, text = script_text(path, text)
    if SERVER not in text:
        return []
    variables = literal_variables(text)
    out = []
    for cmd in commands(text):
        knobs = cmd.knobs()
        if not knobs and not cmd.speculative:
            continue
        k, how = command_k(cmd, variables)
        extra = {"speculative": cmd.speculative, "k_from": how}
        knob = value = None
        anchor = cmd.start
        if knobs:
            name, raw, m, where = knobs[-1]
            knob = FLAG_OF_ENV.get(name, name)
            value = _unq(raw)
            resolved = resolve(raw, variables)
            if resolved is not None and resolved != value:
                extra["resolved"] = resolved
            if where == "env":
                extra["env"] = name
            if len(knobs) > 1:
                extra["knobs"] = [FLAG_OF_ENV.get(n, n) for n, *_ in knobs]
            if m is not None:
                anchor = m.start()
        model = cmd.value(*MODEL_FLAGS)
        draft = cmd.value(*DRAFT_FLAGS) or (cmd.env.get(DRAFT_ENV) or (None,))[0]
        method = cmd.value(TYPE_FLAG) or (cmd.env.get(TYPE_ENV) or (None,))[0]
        draft, model = _path_value(draft, variables), _path_value(model, variables)
        out.append(SpecSetting(
            path=path, line=line_at(text, anchor), col=col_at(text, anchor), engine="llamacpp",
            knob=knob, value=value, k=k, draft=draft, method=method, model=model or None,
            extra=extra))
    return out


# -- rewriting command lines ------------------------------------------------------

def _asks_for(name, value, al_text):
    """Does a knob value ask for the AL ``al_text`` (within 1e-6; False when not a number)?"""
    try:
        if FLAG_OF_ENV.get(name, name) == RATES_KNOB:
            pinned = 1 + sum(Decimal(x.strip()) for x in value.split(","))
        else:
            pinned = Decimal(value)
        return abs(pinned - Decimal(al_text)) <= Decimal("1e-6")
    except (InvalidOperation, ValueError):
        return False


def _kept_rates(knobs, al_text, k, variables):
    """The literal rates of the one rates knob when they are valid and realise ``al_text``."""
    from goldenal.recipes.shell import resolve

    if len(knobs) != 1 or FLAG_OF_ENV.get(knobs[0][0], knobs[0][0]) != RATES_KNOB:
        return None
    value = resolve(knobs[0][1], variables)
    try:
        if value is None or value != _unq(knobs[0][1]) or rates_problem(parse_rates(value), k):
            return None
    except ValueError:
        return None
    return value if _asks_for(RATES_KNOB, value, al_text) else None


def plan_command(path, text, golden_for_k, *, k=None, rates_for=None, force=False):
    """:meth:`~goldenal.engines.base.EngineAdapter.plan_script` for ``llama-server`` commands:
    a written knob updated in place, the other form replaced when ``rates_for`` switches."""
    from goldenal.recipes.shell import eval_paths, literal_variables, resolve
    from goldenal.engines.setting import Plan
    from goldenal.recipes import spans

    cmds = commands(text)
    if not cmds:
        raise ParseError(f"no {SERVER} command found", path=path)
    variables = literal_variables(text)
    paths = eval_paths(text)
    guarded = "EVAL_ONLY" in text
    edits, changes, targets, warnings = [], [], [], []
    env_done, serving = {}, 0
    for cmd in cmds:
        line = cmd.line
        where = paths.get(line)
        knobs = cmd.knobs()
        if where is True:
            for name, _, m, kind in knobs:
                if kind == "flag" or (m is not None and paths.get(line_at(text, m.start())) is True):
                    raise on_eval_path(name, path=path, line=line_at(text, m.start()))
            continue
        if not cmd.speculative:
            if knobs:
                raise PolicyError(f"{knobs[-1][0]} on a {SERVER} without speculative decoding "
                                  f"({TYPE_FLAG} / {DRAFT_FLAGS[0]}): the server refuses to "
                                  "start", path=path, line=line)
            continue
        serving += 1
        if where is None and guarded and not knobs:
            raise on_both_paths(SERVER, path=path, line=line)
        site_k, how = command_k(cmd, variables)
        site_k = chosen_k(site_k, k, path=path, line=line,
                          said=(f"{K_FLAG} {site_k}" if how != "default" else
                                f"no {K_FLAG}, so llama.cpp drafts its default K={DEFAULT_K}"),
                          missing=f"{K_FLAG} is not a literal integer (nor a variable with one "
                                  "literal assignment)")
        if how == "default":
            warnings.append(f"{path}:{line}: warning: no {K_FLAG}: the value is for "
                            f"llama.cpp's default K={DEFAULT_K}")
        al_text = golden_for_k(site_k, line)
        kept = _kept_rates(knobs, al_text, site_k, variables) if rates_for is None else None
        if rates_for is not None:
            want_flag, want = RATES_KNOB, rates_text(rates_for(site_k, al_text))
        elif kept is not None:
            # rates already realising the golden AL stay (as vLLM's rates do): the
            # per-position profile was chosen on purpose
            want_flag, want = RATES_KNOB, kept
        else:
            want_flag, want = KNOB, ADAPTER.convert(al_text)
            warnings.append(f"{path}:{line}: note: {length_note(al_text, site_k)}")
        targets.append((line, site_k, al_text, want))
        if not knobs:
            anchor = (cmd.flags.get(K_FLAG) or cmd.flags.get(TYPE_FLAG)
                      or next((cmd.flags[f] for f in DRAFT_FLAGS if f in cmd.flags), None))
            at = anchor[-1].end() if anchor else cmd.end
            edits.append(spans.Edit(at, at, f" {want_flag} {want}"))
            changes.append((line, want_flag, None, want))
            continue
        for name, raw, m, kind in knobs:
            flag = FLAG_OF_ENV.get(name, name)
            shown = _unq(raw)
            kline = line_at(text, m.start()) if m is not None else line
            if kind == "env" and id(m) in env_done:
                if env_done[id(m)] != want:
                    raise PolicyError(f"{name} (line {kline}) is shared by {SERVER} commands "
                                      "that need different values; give each its own",
                                      path=path, line=line)
                continue
            value = shown if "$" not in shown else resolve(raw, variables)
            same_al = value is not None and _asks_for(flag, value, al_text)
            if flag == want_flag:
                if "$" in shown:
                    if value != want:
                        raise PolicyError(f"{name} is {shown}, which is not one literal "
                                          f"assignment holding {want}; write the value there "
                                          "by hand", path=path, line=kline)
                    continue
                if value != want:
                    check_pinned(name, value, want, force=force or same_al, path=path,
                                 line=kline)
                    edits.append(spans.Edit(m.start("value"), m.end("value"), want))
                    changes.append((kline, name, value, want))
            else:
                # the other form of the knob: replaced by ours
                check_pinned(name, value or shown, want, force=force or same_al, path=path,
                             line=kline)
                new_name = want_flag if kind == "flag" else ENV_OF_FLAG[want_flag]
                edits.append(spans.Edit(m.start(), m.end(), f"{new_name}={want}"
                                        if kind == "env" or m.group(0)[len(name)] == "=" else
                                        f"{new_name} {want}"))
                changes += [(kline, name, value or shown, None), (kline, new_name, None, want)]
            if kind == "env":
                env_done[id(m)] = want
    if not serving:
        raise PolicyError(f"no {SERVER} command with speculative decoding ({TYPE_FLAG} / "
                          f"{DRAFT_FLAGS[0]}) off the EVAL_ONLY=true path: there is nothing "
                          "to carry the knob", path=path, line=cmds[0].line)
    return Plan(edits=tuple(edits), changes=tuple(changes), warnings=tuple(warnings)), targets
