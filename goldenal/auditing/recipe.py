"""srt-slurm recipe YAMLs: each site ``find_sites`` reads (as ``inject`` does) becomes a
:class:`~goldenal.auditing.evidence.Config` per worker role and variant."""

import re

from goldenal.engines import adapter
from goldenal.engines import table as knobs
from goldenal.recipes import spans
from goldenal.engines.locate import ROLES, RolePlaces, find_sites, pd_decode, scenario_facts
from goldenal.auditing import evidence as ev

# a document whose top level is a block sequence (a changelog that merely says
# "backend:" somewhere) is no recipe: known without composing it
_TOP_LEVEL_LIST = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n|---[ \t]*\n|%[^\n]*\n)*-[ \t\n]")

# the companion settings of a knob read from its environment mapping, by the audit's name
_EXTRA = {knobs.TOKEN_MODE: "token_mode", knobs.ACC_METHOD: "acc_method"}


def _text_at(section, *keys):
    return spans.scalar(section.get(*keys))


def _meta(section):
    """Image, model candidates and name of one recipe (variant) section."""
    models = [m for m in (_text_at(section, *path) for path in (
        ("identity", "model", "repo"), ("model", "path"), ("model", "name"))) if m is not None]
    images = (_text_at(section, *path) for path in (("identity", "container", "image"),
                                                    ("model", "container"), ("container",)))
    image = next((v for v in images if v is not None and (":" in v or "/" in v)), None)
    benchmark = {key: _text_at(section, "benchmark", key)
                 for key in ("type", "isl", "osl", "command")}
    return {"image": image, "models": models, "name": _text_at(section, "name"),
            "benchmark": benchmark}


def _line(node):
    return spans.line_of(node) if node is not None else None


def _fields(doc, site):
    """The per-role facts of one site, in the audit's terms."""
    setting = adapter(site.engine).setting(doc, site)
    f = {"engine": site.engine, "k": site.k, "k_line": _line(site.k_node), "draft": site.draft,
         "method": site.method, "variant": {}, "rsm": None, "knob": setting.knob,
         "value": setting.value, "line": setting.line if setting.knob else None,
         "col": setting.col, "extra": {}, "spec": site.spec_on, "spec_line": None,
         "model": None}
    served = spans.get(site.cfg, ("served-model-name",)) if site.cfg is not None else None
    if served is None and site.cfg is not None:
        served = spans.get(site.cfg, "model")
    if spans.is_scalar(served) and spans.scalar(served) is not None:
        f["model"] = spans.scalar(served)
    facts = adapter(site.engine).spec_facts(site)
    if facts is not None:      # a parsed speculative config says it all
        f.update(spec_line=_line(site.spec), **facts)
        if setting.knob is not None:
            f["line"] = setting.line
    elif site.spec_on:
        # where speculative decoding is switched on, and the companions read beside it
        f["spec_line"] = _line(site.on if site.on is not None else site.spec)
        if "eagle_topk" in site.extra:
            f["extra"]["eagle_topk"] = site.extra["eagle_topk"]
        for key in (r.name for r in knobs.spellings(setting=knobs.ONE_MODEL)):
            if key in site.extra:
                f["extra"]["one_model"] = str(site.extra[key]).lower() == "true"
                f["extra"]["one_model_key"] = key
    for row in knobs.spellings(site.engine, setting=tuple(_EXTRA), form=knobs.KEY):
        f["extra"][_EXTRA[row.setting]] = (spans.scalar(spans.get(site.env, row.name))
                                           if site.env is not None else None)
    return f


def recipe_configs(relpath, text, lines, scenario_path=None):
    """The configs of one recipe (a variant equal to the base adds nothing); agentic or not
    from its content, else ``scenario_path``.  ParseError: broken YAML or config JSON."""
    if _TOP_LEVEL_LIST.match(text):
        return []
    doc, sites, _ = find_sites(relpath, text, recipe_only=True, knob_only=True)
    # read only for a recipe with sites (a changelog list naming a backend has none)
    signals = ev.thinking_signals_in(text, lines) if sites else []
    thinking, how = ev.decide_thinking(signals)
    sections = {s.name: s for s in doc.sections or ()}
    names = scenario_facts(doc.root, doc.sections)[2]
    scenario_path = scenario_path or relpath
    eval_only = ev.eval_from_path(relpath)
    metas, disagg_of = {}, {}
    for site in sites:
        if site.section not in metas:
            section = sections[site.section]
            meta = metas[site.section] = _meta(section)
            meta["agentic"] = ev.agentic_of(scenario_path, meta["name"], meta["benchmark"], names)
            meta["eval_only"] = eval_only
            # a PD prefill worker verifies no drafts, whatever the decode worker sets
            disagg_of[site.section] = all(
                spans.is_map(section.get(*places.config)) or spans.is_map(section.get(*places.env))
                for places in (RolePlaces.of(section, site.engine, role) for role in ROLES[1:]))
    configs, seen, promoted = [], set(), []
    for site in sites:
        meta = metas[site.section]
        disagg = disagg_of[site.section]
        fields = _fields(doc, site)
        prefill_of_pair = pd_decode(site, sites, role="prefill")
        if prefill_of_pair:
            # SGLang PD: the decode worker's K picks the cell the prefill carries
            decode = next(s for s in sites if s.section == site.section and pd_decode(s, sites))
            fields.update(k=decode.k, k_line=_line(decode.k_node))
        r, line = fields, fields["line"] or fields["spec_line"] or 1
        cfg = ev.Config(
            path=relpath, line=line, col=r["col"] if r["line"] else 1, engine=r["engine"],
            role=site.role, model=tuple(m for m in [r["model"], *meta["models"]] if m),
            draft=r["draft"], method=r["method"], variant=r["variant"], k=r["k"],
            k_line=r["k_line"], thinking=thinking, thinking_source=how, knob=r["knob"],
            value=r["value"], rejection_sample_method=r["rsm"], image=meta["image"],
            agentic=meta["agentic"], eval_only=meta["eval_only"], spec=r["spec"],
            drafts=not (disagg and site.role == "prefill"),
            source_stated=ev.source_stated(lines, line) if r["knob"] else False,
            extra=r["extra"])
        key = (cfg.role, cfg.line, cfg.knob, cfg.value, cfg.k, cfg.draft, cfg.method,
               cfg.image)
        if key in seen:
            continue
        seen.add(key)
        if cfg.knob is not None and not cfg.drafts and cfg.spec:
            # a PD prefill worker's knob is checked too, as inject writes it: SGLang's
            # against decode's K, TensorRT-LLM's and vLLM's against the worker's own
            # (once: a knob the decode worker shares through an anchor is checked there)
            promoted.append(len(configs))
        configs.append(cfg.with_(branch=f"variant {site.section}") if site.section not in
                       (None, "base") else cfg)
    checked = {(c.line, c.col, c.knob, c.value, c.k) for c in configs if c.drafts}
    for i in promoted:
        cfg = configs[i]
        place = (cfg.line, cfg.col, cfg.knob, cfg.value, cfg.k)
        if place not in checked:
            configs[i] = cfg.with_(drafts=True)
            checked.add(place)
    return configs
