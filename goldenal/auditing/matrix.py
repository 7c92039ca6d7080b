"""CI matrices: each list entry's ATOM ``extra_args`` string (next to its served model)
is a launch command of its own, giving one config located inside the string."""

from goldenal.auditing import evidence as ev
from goldenal.engines import ENGINES, record
from goldenal.engines import table as knobs
from goldenal.recipes import spans
from goldenal.recipes.shell import shell_words

MODEL_KEYS = ("model", "model_path", "model-path", "model_id", "hf_model")
SCENARIO_KEYS = ("scenario", "name", "job", "config", "workload")
# the engine whose argument strings CI matrices list, and the keys holding them
ENGINE, ARG_KEYS = next((e, record(e).matrix_args) for e in ENGINES if record(e).matrix_args)
# its flags, as the one knob table spells them, by setting (the first of each)
_ROWS = knobs.spellings(ENGINE, form=knobs.FLAG)
_BY_SETTING = {row.setting: row.name for row in reversed(_ROWS)}
_FLAGS = frozenset(row.name for row in _ROWS)
_K, _METHOD, _DRAFT, _MODEL = (_BY_SETTING[s] for s in (knobs.K, knobs.METHOD, knobs.DRAFT,
                                                          knobs.MODEL))
_KNOBS = tuple(_BY_SETTING[s] for s in (knobs.LENGTH, knobs.RATE))


def _walk(node):
    if spans.is_map(node):
        yield node
        for _, value in spans.pairs(node):
            yield from _walk(value)
    elif node is not None and isinstance(getattr(node, "value", None), list):
        for item in node.value:
            yield from _walk(item)


def _flags(text):
    out, words = {}, shell_words(text)
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in _FLAGS:
            if not eq:
                value = words[i + 1] if i + 1 < len(words) else None
            out[name] = value
    return out


def matrix_configs(relpath, text, lines, scenario_path=None):
    """One config per list entry whose ATOM argument string sets speculative flags."""
    if not any(key in text for key in ARG_KEYS):
        return []
    root = spans.compose(text, relpath)
    configs = []
    for node in _walk(root):
        for key, value in spans.pairs(node):
            if key.value not in ARG_KEYS or not spans.is_scalar(value):
                continue
            args = spans.scalar(value) or ""
            if _K not in args and not any(name in args for name in _KNOBS):
                continue
            flags = _flags(args)
            knob = next((f for f in _KNOBS if f in flags), None)
            line, col = spans.line_of(value), spans.col_of(value)
            raw = lines[line - 1] if 0 < line <= len(lines) else ""
            if knob and knob in raw:
                col = raw.index(knob) + 1
            siblings = {k.value: spans.scalar(v) for k, v in spans.pairs(node)
                        if spans.is_scalar(k) and spans.is_scalar(v)}
            models = tuple(m for m in (flags.get(_MODEL), *(siblings.get(k)
                                                                for k in MODEL_KEYS)) if m)
            said = {ev.agentic_from_name(siblings[k]) for k in SCENARIO_KEYS
                    if siblings.get(k)}
            said.discard(None)
            agentic = said.pop() if len(said) == 1 else ev.agentic_from_path(
                scenario_path or relpath)
            k = flags.get(_K)
            configs.append(ev.Config(
                path=relpath, line=line, col=col, engine=ENGINE, model=models,
                draft=flags.get(_DRAFT), method=flags.get(_METHOD),
                k=int(k) if k and k.isdigit() else None, knob=knob,
                value=flags.get(knob) if knob else None, agentic=agentic,
                source_stated=ev.source_stated(lines, line) if knob else False,
                extra={"atom_method": flags.get(_METHOD)}))
    return configs
