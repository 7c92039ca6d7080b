"""Turn resolved configs into findings: the AgentX rules applied to what is served."""

import json
from decimal import Decimal, InvalidOperation

from goldenal.auditing import evidence as ev
from goldenal.auditing.rules import make_finding
from goldenal.engines import adapter, knob_value
from goldenal.engines.knobs import ENGINES, KNOBS, acceptance_rate, carries_golden
from goldenal.engines import table as knobs


# engines with no setting that selects a draft head's sampling variant
NO_VARIANT_ENGINES = tuple(e for e in ENGINES if not ev.record(e).selects_variant)


def variant_siblings(curves, cfg):
    """Curves of the served model, head and method that differ only by sampling variant."""
    from goldenal.golden.policy import draft_matches, method_matches, model_matches

    models = [m for m in cfg.model if m]
    out = [c for c in curves
           if any(model_matches(c, m) for m in models)
           and (not cfg.draft or (c.draft and draft_matches(c, cfg.draft)))
           and method_matches(c, cfg.method)]
    return out if len({tuple(sorted(c.variant.items())) for c in out}) > 1 else []


def match_curve(curves, cfg):
    """``(curve, None)`` or ``(None, (code, text))``; where no setting selects a variant, the
    curve a comment next to the knob cites decides."""
    if cfg.engine in NO_VARIANT_ENGINES and cfg.model:
        siblings = variant_siblings(curves, cfg)
        if siblings:
            ids = {c.id: c for c in siblings}
            cited = [i for i in cfg.extra.get("cited_curves", ()) if i in ids]
            if len(cited) == 1:
                return ids[cited[0]], None
            return None, ("GAL304", f"sampling variant: {cfg.engine} has no setting that "
                                    "selects one and no comment next to the knob cites a "
                                    f"curve; candidates {', '.join(sorted(ids))}")
    from goldenal.core.errors import PolicyError, UnknownCurve
    from goldenal.golden.policy import model_matches, resolve_served, served_sampling

    if not cfg.model:
        return None, ("GAL304", "model (no served model or model prefix in the files)")
    dsm, rsm = served_sampling(cfg)
    models = tuple(m for m in cfg.model if m)
    # an audit resolves the same few configs hundreds of times: one answer per key
    key = (tuple(id(c) for c in curves), models, cfg.draft, cfg.method, dsm, rsm,
           cfg.extra.get("name_hint"))
    if key in _RESOLVED:
        return _RESOLVED[key]
    try:
        curve = resolve_served(curves, models=models, draft=cfg.draft, method=cfg.method,
                               draft_sample_method=dsm, rejection_sample_method=rsm)
        answer = curve, None
    except UnknownCurve as exc:
        hint = cfg.extra.get("name_hint")
        if models == (hint,):
            # a file-name prefix is a hint, never reported as the served model
            why = (f"is only a hint, and {exc}" if any(model_matches(c, hint) for c in curves)
                   else "names no curve")
            answer = None, ("GAL304", f"model (the files name none; the file-name prefix "
                                      f"{hint!r} {why})")
        else:
            answer = None, ("GAL101", str(exc))
    except PolicyError as exc:
        answer = None, ("GAL304", str(exc))
    if len(_RESOLVED) > 4096:
        _RESOLVED.clear()
    _RESOLVED[key] = answer
    return answer


_RESOLVED = {}


def clear_cache():
    """Forget resolved curves (the runner calls this at the start of every audit)."""
    _RESOLVED.clear()


def _dec(text):
    try:
        return Decimal(str(text).strip().strip("'\""))
    except (InvalidOperation, ValueError):
        return None


# what each knob writes, from the engines' spellings: the AL, per-position rates (a JSON
# list in a config key, comma-separated on a command line) or (AL - 1) / K
_VALUE_ROWS = {r.name: r for r in ev.VALUE_ROWS}


def unit(knob):
    """``"length"``, ``"accepted"`` (AL - 1), ``"rate"`` ((AL - 1) / K), ``"rates"``
    (one rate per position, a JSON list) or ``"csv-rates"`` (comma-separated)."""
    row = _VALUE_ROWS.get(knob)
    if row is None or row.setting == knobs.LENGTH:
        offset = KNOBS.get(row.engine, (None, 0))[1] if row else 0
        return "accepted" if offset == -1 else "length"
    if row.setting == knobs.RATE:
        return "rate"
    return "rates" if row.form == knobs.KEY else "csv-rates"


def implied_al(cfg):
    """The acceptance length the knob asks for, as a Decimal, or None."""
    value = cfg.value
    if value is None:
        return None
    kind = unit(cfg.knob)
    if kind == "rates":
        try:
            rates = json.loads(value) if isinstance(value, str) else value
            return 1 + sum(Decimal(str(r)) for r in rates)
        except (ValueError, TypeError, InvalidOperation):
            return None
    if kind == "csv-rates":
        parts = [_dec(x) for x in str(value).strip("'\"").split(",")]
        return None if any(p is None for p in parts) else 1 + sum(parts)
    num = _dec(value)
    if num is None:
        return None
    if kind == "accepted":
        return num + 1
    if kind == "rate":
        return None if cfg.k is None else 1 + num * cfg.k
    return num


def expected_knob(cfg, al_text):
    """The golden AL in the knob's unit and spelling; None when the engine cannot say it."""
    from goldenal.core.errors import PolicyError

    kind = unit(cfg.knob)
    try:
        if kind == "accepted":
            return knob_value(_VALUE_ROWS[cfg.knob].engine, al_text)
        if kind == "rate" and cfg.k:
            return acceptance_rate(al_text, cfg.k)
        if kind == "csv-rates" and cfg.k:
            return adapter(cfg.engine).min_variance_value(al_text, cfg.k)
    except PolicyError:
        return None
    return al_text


def _where(cfg):
    bits = [f"{what} {value}" for what, value in (("role", cfg.role), ("branch", cfg.branch))
            if value]
    return f" [{'; '.join(bits)}]" if bits else ""


def other_cells(curves, al, exclude=None):
    """Every committed cell whose value equals ``al``: ``["curve thinking_on K=3", ...]``."""
    if al.is_nan():
        return []           # equal to nothing (and a signalling NaN cannot be hashed)
    key = ("cells", tuple(id(c) for c in curves))
    index = _RESOLVED.get(key)
    if index is None:
        # every cell by value, in the order the curves list them: built once an audit
        index = {}
        for c in curves:
            for mode, cells in c.cells.items():
                for k, text in sorted(cells.items()):
                    num = _dec(text)
                    if num is not None and not num.is_nan():
                        index.setdefault(num, []).append(((c.id, mode, k),
                                                          f"{c.id} thinking_{mode} K={k}"))
        _RESOLVED[key] = index
    return [label for cell, label in index.get(al, ()) if cell != exclude]


def quiet_expected(cfg, curves):
    """The golden value in the knob's unit when the cell resolves without doubt, else None."""
    if cfg.k is None or cfg.knob is None:
        return None
    curve, problem = match_curve(curves, cfg)
    if curve is None:
        return None
    if cfg.thinking is None and len(_modes(curve)) != 1:
        return None
    cell = _cell(curve, cfg.thinking or default_mode(curve), cfg.k)
    return None if cell is None else expected_knob(cfg, cell)


def check_config(cfg, curves):
    """Findings for one resolved config (see the rule catalogue for each code)."""
    out = []

    def add(code, message, **kw):
        if cfg.knob is not None and code not in ("GAL305", "GAL301"):
            kw.setdefault("found", cfg.value)
        if code in ("GAL204", "GAL205", "GAL206") and "expected" not in kw:
            kw["expected"] = quiet_expected(cfg, curves)
        out.append(make_finding(code, cfg.path, kw.pop("line", cfg.line), message + _where(cfg),
                                col=kw.pop("col", cfg.col), **kw))

    if cfg.knob is None:
        what = f"{cfg.engine or 'engine'}, K={cfg.k if cfg.k else '?'}"
        served = cfg.spec and not cfg.eval_only and cfg.drafts
        if served and cfg.agentic:
            add("GAL301", f"agentic spec-decode config ({what}) sets no synthetic-acceptance knob")
        elif served and cfg.agentic is None:
            add("GAL304", f"cannot determine whether this spec-decode config ({what}) "
                          "is agentic or fixed-sequence-length: "
                          "no benchmark type, isl/osl, recipe or variant name, or path says; "
                          "an agentic one needs a synthetic knob")
        return out
    if cfg.eval_only:
        add("GAL303", f"{cfg.said} is active on the EVAL_ONLY path; eval runs "
                      "must keep real verification")
        return out
    if cfg.agentic is False:
        add("GAL302", f"{cfg.said} set on a fixed-sequence-length (non-agentic) "
                      "config, which must measure real acceptance")
        return out
    if cfg.eval_capable:
        add("GAL303", f"{cfg.said} is not guarded by EVAL_ONLY in a file that "
                      "runs evaluations; it stays active on the eval path")
    if not cfg.drafts:
        return out
    _honour(cfg, add)
    if any(f.code == "GAL205" for f in out):
        return out
    rec = ev.record(cfg.engine) if cfg.engine in ENGINES else None
    if rec is not None and rec.spec_off == "refused":
        x = cfg.extra
        refusal = adapter(cfg.engine).start_refusal(
            cfg.said, cfg.value, cfg.k, al=_dec(cfg.value), rates=unit(cfg.knob) == "csv-rates",
            spec_on=bool(x.get("spec_on")), k_default=bool(x.get("k_default")),
            forms=x.get("knob_forms") or {})
        if refusal is not None:
            add(*refusal)
            return out
    undetermined = f"cannot determine the golden cell for {cfg.said}: "
    if cfg.k is None:
        # the engine's own K spellings, every engine's when the engine is not known
        k_names = dict.fromkeys(r.name for r in knobs.spellings(
            cfg.engine if rec is not None else None, setting=knobs.K))
        why = (f"{_named(cfg.engine, knobs.K)} is set, but not to a literal number"
               if rec is not None and rec.default_k is not None else
               "no literal " + " / ".join(k_names))
        add("GAL304", undetermined + f"K ({why} on this path)")
        return out
    al = implied_al(cfg)
    if al is None:
        add("GAL304", f"cannot determine the golden cell for {cfg.knob}: value "
                      f"{cfg.value!r} is not a literal number")
        return out
    kind = unit(cfg.knob)
    if kind == "rate":
        rate = _dec(cfg.value)
        if rate is not None and not (0 <= rate <= 1):
            add("GAL204", f"{cfg.said} is outside [0, 1]")
            return out
    if kind == "accepted" and al - 1 == 0:
        return out   # reported as GAL206 (0 = off)
    if not (1 <= al <= cfg.k + 1):
        add("GAL204", f"{cfg.said} means AL {al.normalize()}, outside "
                      f"[1, {cfg.k + 1}] for K={cfg.k}")
        return out
    context = None
    if cfg.agentic is None and not cfg.extra.get("no_benchmark"):
        # an agentic config must carry the golden value, a fixed-sequence-length one no
        # knob at all (GAL302): which applies is for the files to say, never assumed
        context = ("cannot determine whether the config is agentic or fixed-sequence-"
                   f"length, so {cfg.said} is not checked against a golden cell: nothing "
                   "in the files says; state it by the path (an agentic/ or fixed-seq-len "
                   "folder), the benchmark settings (an agentic client, or isl/osl), or "
                   "the scenario of a master config that runs it")
    curve, problem = match_curve(curves, cfg)
    pool = [curve] if curve is not None else []
    undecided = []          # (in a GAL304 message, in a GAL201 message) per open question
    if context:
        undecided.append((context, "agentic or fixed-sequence-length: the files do not say, "
                                   "and a fixed-sequence-length config takes no knob"))
    if curve is None:
        code, text = problem
        pool = candidate_curves(curves, cfg) if code == "GAL304" else []
        if context and not pool:
            add("GAL304", context)
            return out
        heads = unknown_head_pool(curves, cfg)
        if heads:
            # the registry does not say which head each curve was measured with (said
            # once, at the top): any of them may be the served one
            _undecided(cfg, curves, heads, [(None, "the registry names no draft head for "
                                                   "these curves")], add, quiet=True)
            return out
        if code == "GAL101" and cfg.source_stated:
            return out
        if code == "GAL101":
            add(code, f"{text}; {cfg.said} has no stated source (add a comment "
                      "naming where the value comes from)")
            return out
        if not pool:
            add(code, undetermined + text)
            return out
        undecided.append((undetermined + text, text.split("; candidates ")[0]))
    thinking, how = cfg.thinking, cfg.thinking_source
    if thinking is None and how:    # conflicting signals
        undecided.append((undetermined + f"thinking mode ({how})", f"thinking mode ({how})"))
    if undecided:
        _undecided(cfg, curves, pool, undecided, add)
        return out
    if cfg.engine in NO_VARIANT_ENGINES and cfg.extra.get("cited_curves") and \
            variant_siblings(curves, cfg):
        add("GAL311", f"{cfg.engine} cannot select a sampling variant of {curve.method} "
                      f"{', '.join(curve.draft) or curve.model}; the comment next to the knob "
                      f"cites curve {curve.id}, which decides", found=None)
    if thinking is None:
        thinking = default_mode(curve)
        if len(_modes(curve)) == 1:
            why = f"the curve's only mode thinking_{thinking}"
        else:
            # the upstream runner's THINKING_MODE defaults to thinking_on (docs/policy.md §3)
            why = "thinking_on, the documented default (THINKING_MODE=thinking_on)"
        add("GAL305", f"no thinking-mode signal in the files; assumed {why} for curve "
                      f"{curve.id}")
    cell = _cell(curve, thinking, cfg.k)
    if cell is None:
        have = ", ".join(f"thinking_{m} K={','.join(map(str, sorted(c)))}"
                         for m, c in curve.cells.items() if c)
        add("GAL102", f"curve {curve.id} has no committed cell for thinking_{thinking} "
                      f"K={cfg.k} (it has {have})")
        return out
    golden = Decimal(cell)
    expected = expected_knob(cfg, cell)
    label = f"{curve.id} thinking_{thinking} K={cfg.k}"
    if value_carries(cfg, cell):
        return out
    if kind == "rate":
        rate = _dec(cfg.value)
        for k2 in range(1, 17):
            if k2 != cfg.k and carries_golden(cfg.value, cell, unit="rate", k=k2):
                add("GAL203", f"{cfg.said} is (AL-1)/{k2} for the golden AL "
                              f"{cell} of {label}, but K={cfg.k} is served; it encodes AL "
                              f"{(1 + rate * cfg.k).normalize()}",
                    expected=expected,
                    fix=f"use {KNOBS[_VALUE_ROWS[cfg.knob].engine][0]} {cell}")
                return out
    if kind == "accepted" and _dec(cfg.value) == golden:
        title = ev.record(_VALUE_ROWS[cfg.knob].engine).title
        add("GAL202", f"{cfg.said} is the golden AL itself; {title} takes "
                      f"AL - 1 = {expected} ({label})", expected=expected,
            fix=f"replace {cfg.value} with {expected}")
        return out
    shown = al.normalize() if kind != "length" else None  # rates: the AL they sum to
    msg = cfg.said
    if shown is not None:
        msg += f" (AL {shown:f})"
    msg += f" differs from the golden cell {label}: expected {expected}"
    if shown is not None and str(expected) != cell:
        msg += f" (AL {cell})"  # the engine's own unit, and the AL it stands for
    others = other_cells(curves, al, exclude=(curve.id, thinking, cfg.k))
    # the likeliest mix-ups first: same model, same K
    by_id = {c.id: c for c in curves}
    others.sort(key=lambda h: (by_id[h.split()[0]].model != curve.model,
                               not h.endswith(f"K={cfg.k}")))
    if others:
        served = cfg.draft or "native MTP"
        said = f"{al.normalize():f}" if shown is not None else cfg.value
        msg += (f"; {said} is {' and '.join(others[:3])}, but this config serves "
                f"{served} thinking_{thinking} K={cfg.k}")
    add("GAL201", msg, expected=expected,
        fix=f"replace {cfg.value} with {expected}")
    return out


def value_carries(cfg, cell):
    """Does the knob carry ``cell`` at the precision written (per-position rates: by their sum)?"""
    kind = unit(cfg.knob)
    if kind in ("rates", "csv-rates"):
        al = implied_al(cfg)
        return al is not None and al == Decimal(cell)
    return carries_golden(cfg.value, cell, unit=kind, k=cfg.k)


def _modes(curve):
    return [m for m in ("on", "off") if curve.cells.get(m)]


def _cell(curve, mode, k):
    """The committed cell of ``mode`` at ``k``, or None (``N/A`` included)."""
    cell = curve.cells.get(mode, {}).get(k)
    return None if cell == "N/A" else cell


def default_mode(curve):
    """The thinking mode assumed without a signal: the curve's only mode, else ``on``."""
    modes = _modes(curve)
    # the upstream runner's THINKING_MODE defaults to thinking_on (docs/policy.md §3)
    return modes[0] if len(modes) == 1 else "on"


def _model_pool(curves, cfg):
    """The curves of the first served model name that has any."""
    from goldenal.golden.policy import model_matches

    for name in (m for m in cfg.model if m):
        pool = [c for c in curves if model_matches(c, name)]
        if pool:
            return pool
    return []


def candidate_curves(curves, cfg):
    """The curves a config may serve when variant or head is left open (or none)."""
    from goldenal.core.errors import GoldenALError
    from goldenal.golden.policy import candidates

    pool = _model_pool(curves, cfg)
    try:
        return candidates(pool, pool[0].model, draft=cfg.draft, method=cfg.method) if pool else []
    except GoldenALError:
        return []


def candidate_cells(cfg, pool):
    """``[(label, cell)]``: every committed cell at K of the readings left open."""
    cells = []
    for c in pool:
        if cfg.thinking is not None:
            modes = (cfg.thinking,)
        elif cfg.thinking_source:
            modes = ("on", "off")       # the signals disagree: either may be served
        else:
            modes = (default_mode(c),)
        for mode in modes:
            cell = _cell(c, mode, cfg.k)
            if cell is not None:
                cells.append((f"{c.id} thinking_{mode} K={cfg.k}", cell))
    return cells


def unknown_head_pool(curves, cfg):
    """The served model's curves naming no draft head: a config with a head may serve any."""
    from goldenal.golden.curves import head_unknown
    from goldenal.golden.policy import method_matches

    pool = _model_pool(curves, cfg) if cfg.draft else []
    return [c for c in pool if head_unknown(c) and method_matches(c, cfg.method)]


def _undecided(cfg, curves, pool, undecided, add, quiet=False):
    """Undecided cell: GAL201 for a value no candidate carries, else GAL304 (``quiet``: not)."""
    cells = candidate_cells(cfg, pool)
    first = undecided[0][0]
    if not cells:
        if not quiet:
            add("GAL304", first)
        return
    carried = [label for label, cell in cells if value_carries(cfg, cell)]
    if carried:
        if not quiet:
            add("GAL304", f"{first}; {cfg.value} is the golden value of "
                          f"{' and '.join(carried)}")
        return
    why = "; ".join(short for _, short in undecided)
    listed = ", ".join(f"{label} ({expected_knob(cfg, cell)})" for label, cell in cells)
    single = {expected_knob(cfg, cell) for _, cell in cells}
    add("GAL201", f"{cfg.said} matches no candidate cell: {listed}; which applies cannot be "
                  f"decided ({why}), but the value is wrong whichever does",
        expected=single.pop() if len(single) == 1 else None)


def _named(engine, setting, form=None):
    """The engine's spelling of a setting (the first of the table, or of ``form``)."""
    return knobs.spellings(engine, setting=setting, form=form)[0].name


def _release_problem(cfg, rec, settings, version):
    """The message of a setting the image's release does not read, or None."""
    for names, since, until, message in rec.releases:
        for setting in settings:
            if setting in names and (since and version < _release(since)
                                     or until and version >= _release(until)):
                name = cfg.knob if setting == settings[0] else _named(cfg.engine, setting)
                return message.format(name=name, image=cfg.image)
    return None


def _release(text):
    return tuple(int(part) for part in text.split("."))


def _honour(cfg, add):
    """GAL205/GAL206: knobs the served engine ignores, rejects or reads differently."""
    rec = ev.record(cfg.engine) if cfg.engine in ENGINES else None
    if rec is None:
        return
    x = cfg.extra
    row = _VALUE_ROWS.get(cfg.knob)
    setting = row.setting if row is not None and row.engine == cfg.engine else None
    verifier = adapter(cfg.engine).verifier
    num = _dec(cfg.value)
    topk = x.get("eagle_topk")
    if verifier and setting and cfg.rejection_sample_method != verifier:
        rsm = cfg.rejection_sample_method
        add("GAL205", f"{cfg.knob} is set but rejection_sample_method is "
                      f"{repr(rsm) if rsm else 'absent'}, not '{verifier}': nothing is "
                      "simulated",
            fix=f"add \"rejection_sample_method\": \"{verifier}\"")
    elif rec.unit == "accepted" and num is not None and num == 0:
        add("GAL206", f"{cfg.knob}=0 turns forcing off: real acceptance is measured")
    elif rec.unit == "accepted" and num is not None and num != num.to_integral_value() \
            and x.get("one_model") is False:
        add("GAL206", f"fractional {cfg.said} on the two-model path "
                      f"({x['one_model_key']}: false) is parsed as an integer and becomes 0: "
                      "forcing is off")
    elif x.get("token_mode") == "real-draft-token" and topk not in (None, "1", 1) and \
            knobs.spellings(cfg.engine, setting=knobs.TOKEN_MODE):
        add("GAL206", f"{_named(cfg.engine, knobs.TOKEN_MODE)}=real-draft-token requires "
                      f"{_named(cfg.engine, knobs.TOPK).lstrip('-')} 1, got {topk}: the server "
                      "refuses to start")
    elif x.get("acc_method") not in (None, "match-expected") and \
            knobs.spellings(cfg.engine, setting=knobs.ACC_METHOD):
        # default and recommended is match-expected; multinomial draws a rounded,
        # clamped Normal(L, 1) whose mean drifts near 1 and K+1 (docs/engines.md §2.1-§2.2)
        add("GAL206", f"{_named(cfg.engine, knobs.ACC_METHOD)}={x.get('acc_method')} does not "
                      "reproduce the golden AL's two-point distribution (and can miss its "
                      "mean); use match-expected")
    elif rec.spec_off == "dropped" and not x.get("atom_method"):
        add("GAL206", f"{cfg.knob} without {_named(cfg.engine, knobs.METHOD)}: {rec.title} "
                      "drops the acceptance flags silently and measures real acceptance")
    else:
        version = ev.image_version(cfg.image)
        settings = (setting,) + tuple(s for s in (knobs.TOKEN_MODE,) if x.get("token_mode"))
        problem = version and _release_problem(cfg, rec, settings, version)
        if problem:
            add("GAL206", problem)
