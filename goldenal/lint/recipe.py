"""srt-slurm recipe YAMLs: per-role spec settings, knobs, image and thinking signals.

The YAML is composed (not round-tripped) with PyYAML's C loader, so anchors,
aliases and ``<<`` merges resolve the way srt-slurm sees them while every
scalar keeps the line it was written on: a knob inherited through
``decode_environment: *server_environment`` is reported at its definition.

All engine spellings are read in :func:`read_serve_roles`, the one place that
maps a recipe to per-role settings.
"""

import json
import re

import yaml

from goldenal.lint import evidence as ev

try:  # the C parser is an order of magnitude faster; fall back for pure-Python builds
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):
        def __init__(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)


class _Loader(_Parser, yaml.resolver.BaseResolver):
    """Compose-only loader: no implicit tag resolution (scalars stay strings).

    Tags are never needed here, and skipping the regex-based resolver halves
    the cost of a compose.
    """

    def __init__(self, stream):
        _Parser.__init__(self, stream)
        yaml.resolver.BaseResolver.__init__(self)

    def resolve(self, kind, value, implicit):
        return _TAGS[kind]

    def descend_resolver(self, current_node, current_index):
        pass

    def ascend_resolver(self):
        pass


_TAGS = {yaml.ScalarNode: "tag:yaml.org,2002:str", yaml.SequenceNode: "tag:yaml.org,2002:seq",
         yaml.MappingNode: "tag:yaml.org,2002:map"}

ROLES = ("aggregated", "prefill", "decode")


class Node(dict):
    """A mapping that remembers the (line, col) of each key's value."""

    __slots__ = ("pos", "line")


def _build(node, depth=0, memo=None):
    """Plain mappings/lists from composed nodes.

    Aliases share their node, so each node is built once (``memo``): an alias
    bomb costs its size, not its expansion, and a recursive alias ends.
    """
    if memo is None:
        memo = {}
    if depth > 200:
        raise ValueError("YAML nested too deeply")
    key_id = id(node)
    if key_id in memo:
        return memo[key_id]
    if isinstance(node, yaml.MappingNode):
        out = Node()
        memo[key_id] = out
        out.line = node.start_mark.line + 1
        out.pos = {}
        merges = []
        for knode, vnode in node.value:
            key = knode.value if isinstance(knode, yaml.ScalarNode) else str(knode.value)
            if key == "<<" and isinstance(knode, yaml.ScalarNode) and not knode.style:
                merges.append(vnode)
                continue
            out[key] = _build(vnode, depth + 1, memo)
            out.pos[key] = (vnode.start_mark.line + 1, vnode.start_mark.column + 1)
        for m in merges:
            sources = m.value if isinstance(m, yaml.SequenceNode) else [m]
            for src in sources:
                sub = _build(src, depth + 1, memo)
                if isinstance(sub, Node):
                    for k, v in sub.items():
                        if k not in out:
                            out[k] = v
                            out.pos[k] = sub.pos[k]
        return out
    if isinstance(node, yaml.SequenceNode):
        out = []
        memo[key_id] = out
        out.extend(_build(n, depth + 1, memo) for n in node.value)
        return out
    return node.value  # scalars stay strings: knob values are compared as written


# top-level keys start a line; a leading literal lets the regex engine skip ahead
_TOP_KEY = re.compile(r"\n([A-Za-z_][\w.-]*)\s*:")
KEEP_SECTIONS = {"name", "model", "identity", "backend", "container"}


def _sections(text):
    """``text`` with top-level sections other than :data:`KEEP_SECTIONS` blanked.

    Lines are kept (as empty lines) so every mark keeps its line number; the
    benchmark, frontend and resource sections are most of a recipe and say
    nothing about speculative decoding.  None when nothing would be dropped.
    """
    keys = list(_TOP_KEY.finditer("\n" + text))
    if not keys or not any(m.group(1) not in KEEP_SECTIONS for m in keys):
        return None
    if any(m.group(1) == "base" for m in keys):
        return None     # a multi-variant recipe: every section can override the base
    # m.start() is the newline before the key in "\n" + text: the key's offset in text
    out = [text[:keys[0].start()]]
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        chunk = text[m.start():end]
        out.append(chunk if m.group(1) in KEEP_SECTIONS else "\n" * chunk.count("\n"))
    return "".join(out)


def _first(text):
    """The first document's root node (a multi-document stream is read to its first)."""
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.composer.ComposerError as exc:
        if "single document" not in str(exc):
            raise
    for root in yaml.compose_all(text, Loader=_Loader):
        return root
    return None


def compose(text):
    """Parse YAML text into :class:`Node` mappings (first document only)."""
    sliced = _sections(text)
    if sliced is not None:
        try:
            root = _first(sliced)
            return _build(root) if root is not None else None
        except yaml.YAMLError:
            pass    # e.g. an alias whose anchor sits in a dropped section
    root = _first(text)
    return _build(root) if root is not None else None


def _get(node, *keys):
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _pos(node, key):
    if isinstance(node, Node) and key in node.pos:
        return node.pos[key]
    return (getattr(node, "line", 1), 1)


def _spec_json(value):
    """The speculative-config mapping from a JSON string or a YAML mapping."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        # one reader for the JSON engines' spec configs
        from goldenal.engines.vllm import parse_speculative_config

        return parse_speculative_config(value)
    return None


def _int(value):
    try:
        return int(str(value).strip().strip("'\""))
    except (TypeError, ValueError):
        return None


def read_serve_roles(text):
    """Per-role spec settings of an srt-slurm recipe.

    Returns ``(meta, roles)``: ``meta`` has ``engine``, ``image``, ``models``;
    ``roles`` maps role -> dict with ``k``, ``k_line``, ``draft``, ``method``,
    ``variant``, ``rsm``, ``knob``, ``value``, ``line``, ``col``, ``extra``,
    ``spec`` (speculative decoding on), ``spec_line``.

    Raises
    ------
    yaml.YAMLError, goldenal.errors.ParseError
        Broken YAML, or a speculative-config string that is not JSON.
    """
    doc = compose(text)
    if not isinstance(doc, dict):
        return None, {}
    return _read_doc(doc)


def _merge(base, over):
    """``over`` merged into ``base`` key by key (mappings recursively), positions kept."""
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return over
    out = Node(base)
    out.pos = dict(getattr(base, "pos", {}))
    out.line = getattr(base, "line", 1)
    for key, value in over.items():
        out[key] = _merge(base.get(key), value) if key in base else value
        if isinstance(over, Node) and key in over.pos and not isinstance(value, dict):
            out.pos[key] = over.pos[key]
    return out


def read_variants(text):
    """``[(variant, meta, roles)]`` of a recipe; one entry (variant None) for plain recipes.

    A multi-variant recipe has a ``base:`` section and override sections that
    are merged over it; each override is one variant.
    """
    doc = compose(text)
    if not isinstance(doc, dict):
        return []
    base = doc.get("base")
    if not (isinstance(base, dict) and isinstance(base.get("backend"), dict)):
        meta, roles = _read_doc(doc)
        return [(None, meta, roles)]
    out = [("base", *_read_doc(base))]
    for name, section in doc.items():
        if name != "base" and isinstance(section, dict):
            out.append((name, *_read_doc(_merge(base, section))))
    return out


def _read_doc(doc):
    backend = doc.get("backend") if isinstance(doc.get("backend"), dict) else {}
    engine = str(backend.get("type") or "").lower() or None
    cfg_block = None
    for name in ("vllm", "sglang", "trtllm"):
        block = backend.get(f"{name}_config")
        if isinstance(block, dict):
            engine, cfg_block = name, block
            break
    if engine and engine.startswith("dynamo-"):
        engine = engine[len("dynamo-"):]
    if engine == "trt":
        engine = "trtllm"
    models = []
    for path in (("identity", "model", "repo"), ("model", "path"), ("model", "name")):
        v = _get(doc, *path)
        if isinstance(v, str):
            models.append(v)
    image = None
    for path in (("identity", "container", "image"), ("model", "container"), ("container",)):
        v = _get(doc, *path)
        if isinstance(v, str) and (":" in v or "/" in v):
            image = v
            break
    name = doc.get("name")
    meta = {"engine": engine, "image": image, "models": models,
            "name": name if isinstance(name, str) else None,
            "benchmark": doc.get("benchmark")}
    roles = {}
    for role in ROLES:
        settings = _get(cfg_block, role) if cfg_block else None
        env = backend.get(f"{role}_environment")
        if not isinstance(settings, dict) and not isinstance(env, dict):
            continue
        settings = settings if isinstance(settings, dict) else Node()
        env = env if isinstance(env, dict) else Node()
        r = {"k": None, "k_line": None, "draft": None, "method": None, "variant": {},
             "rsm": None, "knob": None, "value": None, "line": None, "col": 1, "extra": {},
             "spec": False, "spec_line": None, "model": None}
        served = settings.get("served-model-name") or settings.get("model")
        if isinstance(served, str):
            r["model"] = served
        if engine == "vllm":
            raw = settings.get("speculative-config", settings.get("speculative_config"))
            if raw is not None:
                line, col = _pos(settings, "speculative-config" if "speculative-config"
                                 in settings else "speculative_config")
                spec = _spec_json(raw) or {}
                r.update(spec=True, spec_line=line, k=_int(spec.get("num_speculative_tokens")),
                         k_line=line, draft=spec.get("model"), method=spec.get("method"),
                         rsm=spec.get("rejection_sample_method"))
                if spec.get("draft_sample_method"):
                    r["variant"]["draft_sample_method"] = spec["draft_sample_method"]
                for knob in (ev.VLLM_LENGTH, ev.VLLM_RATES, ev.VLLM_RATE):
                    if knob in spec:
                        val = spec[knob]
                        r.update(knob=knob, line=line, col=col,
                                 value=json.dumps(val) if isinstance(val, list) else str(val))
                        break
        elif engine == "sglang":
            alg_key = next((k for k in ("speculative-algorithm", "speculative-algo")
                            if k in settings), None)
            spec_key = alg_key or next((k for k in settings if k.startswith("speculative-")),
                                       None)
            if spec_key is not None:
                r.update(spec=True, method=str(settings[alg_key]) if alg_key else None,
                         spec_line=_pos(settings, spec_key)[0])
                for key in ("speculative-dspark-block-size", "speculative-num-steps"):
                    if key in settings:
                        r.update(k=_int(settings[key]), k_line=_pos(settings, key)[0])
                        break
                r["draft"] = settings.get("speculative-draft-model-path")
                r["extra"]["eagle_topk"] = settings.get("speculative-eagle-topk")
            if ev.SGLANG_LEN in env:
                r.update(knob=ev.SGLANG_LEN, value=str(env[ev.SGLANG_LEN]))
                r["line"], r["col"] = _pos(env, ev.SGLANG_LEN)
            r["extra"]["token_mode"] = env.get("SGLANG_SIMULATE_ACC_TOKEN_MODE")
            r["extra"]["acc_method"] = env.get("SGLANG_SIMULATE_ACC_METHOD")
        elif engine == "trtllm":
            spec = settings.get("speculative_config")
            if isinstance(spec, dict):
                line = _pos(settings, "speculative_config")[0]
                r.update(spec=True, spec_line=line, method=spec.get("decoding_type"),
                         draft=spec.get("speculative_model") or spec.get("speculative_model_dir"))
                if "max_draft_len" in spec:
                    r.update(k=_int(spec["max_draft_len"]), k_line=_pos(spec, "max_draft_len")[0])
                elif "num_nextn_predict_layers" in spec:
                    r.update(k=_int(spec["num_nextn_predict_layers"]),
                             k_line=_pos(spec, "num_nextn_predict_layers")[0])
                for key in ("eagle3_one_model", "mtp_eagle_one_model"):
                    if key in spec:
                        r["extra"]["one_model"] = str(spec[key]).lower() == "true"
                        r["extra"]["one_model_key"] = key
            if ev.TRTLLM_FORCE in env:
                r.update(knob=ev.TRTLLM_FORCE, value=str(env[ev.TRTLLM_FORCE]))
                r["line"], r["col"] = _pos(env, ev.TRTLLM_FORCE)
        roles[role] = r
    return meta, roles


def recipe_configs(relpath, text, lines):
    """The :class:`~goldenal.lint.evidence.Config` list of one srt-slurm recipe.

    For a multi-variant recipe, a variant whose settings equal the base's adds
    nothing; one that differs gives its own configs, named in ``branch``.
    """
    signals = ev.thinking_signals_in(text, lines)
    thinking, how = ev.decide_thinking(signals)
    configs, seen = [], set()
    for variant, meta, roles in read_variants(text):
        for cfg in _role_configs(relpath, lines, meta, roles, thinking, how):
            key = (cfg.role, cfg.line, cfg.knob, cfg.value, cfg.k, cfg.draft, cfg.method,
                   cfg.image)
            if key in seen:
                continue
            seen.add(key)
            configs.append(cfg.with_(branch=f"variant {variant}") if variant not in
                           (None, "base") else cfg)
    return configs


def _role_configs(relpath, lines, meta, roles, thinking, how):
    agentic = ev.agentic_from_path(relpath)
    if agentic is None and meta.get("name"):
        agentic = ev.agentic_from_path(meta["name"])
    disagg = "prefill" in roles and "decode" in roles
    configs = []
    for role, r in roles.items():
        if not r["spec"] and r["knob"] is None:
            continue
        models = tuple(m for m in [r["model"], *meta["models"]] if m)
        line = r["line"] or r["spec_line"] or 1
        configs.append(ev.Config(
            path=relpath, line=line, col=r["col"] if r["line"] else 1,
            engine=meta["engine"], role=role, model=models, draft=r["draft"],
            method=r["method"], variant=r["variant"], k=r["k"], k_line=r["k_line"],
            thinking=thinking, thinking_source=how, knob=r["knob"], value=r["value"],
            rejection_sample_method=r["rsm"], image=meta["image"], agentic=agentic,
            eval_only=ev.eval_from_path(relpath),
            spec=r["spec"], drafts=not (disagg and role == "prefill"),
            source_stated=ev.source_stated(lines, line) if r["knob"] else False,
            extra=r["extra"]))
    return configs
