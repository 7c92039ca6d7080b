"""Master configs (InferenceX ``configs/*-master.yaml``): synthetic injections and their recipes.

A master entry asks the runner to inject synthetic acceptance into the
srt-slurm recipe its ``CONFIG_FILE`` names, through ``additional-settings``
strings; K and the draft head come from that recipe.  Master files are large
and few lines matter, so they are read as indented text, walking up the
indentation from each injection to its scenario, role and entry.
"""

import re
from dataclasses import dataclass, field

from goldenal.auditing import evidence as ev
from goldenal.engines import table as knobs

_KEY_RE = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z0-9_.-]+):(?:\s|$)")
_ITEM_RE = re.compile(r"""^(\s*)-\s+["']?([A-Z][A-Z0-9_]*)=([^"'#]*)["']?\s*(?:#.*)?$""")
_HEADER_RE = re.compile(r"^  ([a-z-]+):\s*(.*?)\s*(?:#.*)?$")


@dataclass(frozen=True)
class Injection:
    """One master-config request to inject synthetic acceptance into a recipe."""

    path: str
    line: int                 # line of SYNTHETIC_ACCEPTANCE_LENGTH (or SYNTHETIC_ACCEPTANCE)
    col: int
    enabled: bool             # SYNTHETIC_ACCEPTANCE=true
    value: "str | None"       # explicit SYNTHETIC_ACCEPTANCE_LENGTH
    recipe: "str | None"      # CONFIG_FILE as written
    settings: dict = field(default_factory=dict)
    entry: "str | None" = None
    scenario: "str | None" = None
    role: "str | None" = None
    header: dict = field(default_factory=dict)   # image, model, model-prefix, framework


def is_master(relpath, head):
    """True for master configs: ``*-master.yaml`` or entries with ``additional-settings``."""
    name = relpath.rsplit("/", 1)[-1]
    return name.endswith(("-master.yaml", "-master.yml")) or (
        head.find(b"additional-settings:", 0, 200000) >= 0
        and head.find(b"scenarios:", 0, 200000) >= 0)


def _indent(text):
    return len(text) - len(text.lstrip(" "))


def enclosing(lines, cuts):
    """``{line: [(level, j), ...]}`` for each line of ``cuts`` (a dict line -> level): the
    lines enclosing it whose level is below its cut, outermost first, found in one pass.

    A line's level is its indentation, two more for a ``- `` item; blank and comment
    lines have none.  The lines open above a line form a stack of rising levels, and
    the nearest line above it with a level below ``c`` is the stack's top one below ``c``.
    """
    out, stack = {}, []
    for i in range(max(cuts, default=-1) + 1):
        if i in cuts:
            out[i] = [entry for entry in stack if entry[0] < cuts[i]]
        text = lines[i]
        stripped = text.lstrip()
        if not stripped or stripped[0] == "#":
            continue
        level = len(text) - len(text.lstrip(" ")) + (2 if stripped[0] == "-" else 0)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, i))
    return out


def injections(relpath, lines):
    """Every injection request of a master config, in file order."""
    blocks = []         # (lo, hi, ind) of each item block holding the switch
    items = {}

    def item(j):
        """Line ``j``'s item match; None for a comment line, False for any other line."""
        if j not in items:
            text = lines[j]
            items[j] = None if text.lstrip().startswith("#") else _ITEM_RE.match(text) or False
        return items[j]

    seen = set()
    for i in knobs.lines_naming(lines, (ev.RUNNER_SWITCH,)):
        m = item(i)
        if not m:
            continue
        ind = len(m.group(1))
        lo = i
        while lo > 0 and item(lo - 1) is not False and _indent(lines[lo - 1]) == ind:
            lo -= 1
        if lo in seen:
            continue
        seen.add(lo)
        hi = i
        while hi + 1 < len(lines) and item(hi + 1) is not False and _indent(lines[hi + 1]) == ind:
            hi += 1
        blocks.append((lo, hi, ind))
    # a YAML sequence may sit at its parent key's indentation, so a "- " line
    # counts as two columns deeper than its dash
    above = enclosing(lines, {lo: ind + 2 for lo, _, ind in blocks})
    out = []
    headers = {}
    for lo, hi, ind in blocks:
        settings = {}
        for j in range(lo, hi + 1):
            mm = items[j]
            if mm:
                settings[mm.group(2)] = (mm.group(3).strip(), j + 1,
                                         lines[j].find(mm.group(2)) + 1)
        chain = []
        cur = ind + 2
        for cur, j in reversed(above[lo]):
            km = _KEY_RE.match(lines[j])
            if km:
                chain.append((km.group(2), j))
        entry, entry_line = (chain[-1] if chain and cur == 0 else (None, None))
        keys = [k for k, _ in chain]
        scenario = keys[keys.index("scenarios") - 1] if "scenarios" in keys[1:] else None
        role = next((k for k in keys if k in ("prefill", "decode", "aggregated")), None)
        if entry is not None and entry not in headers:
            headers[entry] = _header(lines, entry_line)
        length = settings.get(ev.RUNNER_LENGTH)
        flag = settings.get(ev.RUNNER_SWITCH)
        where = length or flag
        if where is None:  # a key that only begins with the switch's name, say _MODE
            continue
        out.append(Injection(
            path=relpath, line=where[1], col=where[2],
            enabled=bool(flag and flag[0].strip().lower() == "true"),
            value=length[0] if length else None,
            recipe=settings.get("CONFIG_FILE", (None,))[0],
            settings={k: v[0] for k, v in settings.items()},
            entry=entry, scenario=scenario, role=role, header=headers.get(entry, {})))
    return out


def recipe_references(lines):
    """Every ``CONFIG_FILE`` item value as written, once each, in file order."""
    out = {}
    for i in knobs.lines_naming(lines, ("CONFIG_FILE",)):
        item = _ITEM_RE.match(lines[i])
        if item and item.group(2) == "CONFIG_FILE":
            out[item.group(3).strip()] = None
    return tuple(out)


def recipe_scenarios(relpath, lines):
    """``{CONFIG_FILE as written: {scenario, ...}}``: the ``scenarios:`` key each
    reference sits under (where a recipe's sequence lengths are set), in one pass.
    """
    out = {}
    keys = {}           # line -> its key (None: no key), read on demand
    stack = []          # (level, line) of the open lines above the current one
    for i, text in enumerate(lines):
        stripped = text.lstrip()
        if not stripped or stripped[0] == "#":
            continue
        # a "- " line counts as two columns deeper than its dash (a sequence may sit
        # at its parent key's indentation)
        level = len(text) - len(stripped) + (2 if stripped[0] == "-" else 0)
        while stack and stack[-1][0] >= level:
            stack.pop()
        if "CONFIG_FILE" in text:
            item = _ITEM_RE.match(text)
            if item and item.group(2) == "CONFIG_FILE":
                chain = []
                for _, j in reversed(stack):
                    if j not in keys:
                        km = _KEY_RE.match(lines[j])
                        keys[j] = km.group(2) if km else None
                    if keys[j] is not None:
                        chain.append(keys[j])
                if "scenarios" in chain[1:]:
                    scenario = chain[chain.index("scenarios") - 1]
                    out.setdefault(item.group(3).strip(), set()).add(scenario)
                continue
        stack.append((level, i))
    return out


def recipe_model_prefixes(lines):
    """``{CONFIG_FILE as written: {model-prefix, ...}}``: the key the runner looks the
    golden curve up by, whatever checkpoint the recipe serves; one pass.
    """
    out = {}
    prefix, refs = None, []

    def close():
        if prefix:
            for ref in refs:
                out.setdefault(ref, set()).add(prefix)

    for text in lines:
        if not text or text[0] == "#":
            continue
        if text[0] not in " -":
            close()
            prefix, refs = None, []
            continue
        if "model-prefix" in text:
            m = _HEADER_RE.match(text)
            if m and m.group(1) == "model-prefix":
                prefix = m.group(2).strip("'\"") or None
        elif "CONFIG_FILE" in text:
            item = _ITEM_RE.match(text)
            if item and item.group(2) == "CONFIG_FILE":
                # the runner reads ``${CONFIG_FILE%%:*}``: a ``:variant`` selector follows the path
                refs.append(item.group(3).strip().split(":", 1)[0])
    close()
    return out


def _header(lines, start):
    """``image``/``model``/``model-prefix``/``framework`` of the entry starting at ``start``."""
    out = {}
    for j in range(start + 1, min(len(lines), start + 60)):
        t = lines[j]
        if t and not t.startswith(" ") and not t.startswith("#"):
            break
        m = _HEADER_RE.match(t)
        if m:
            key = m.group(1)
            if key == "scenarios":
                break
            if key in ("image", "model", "model-prefix", "framework"):
                out[key] = m.group(2).strip("'\"")
    return out


def engine_of(framework):
    """Engine name for a master ``framework`` (``dynamo-vllm`` -> ``vllm``)."""
    if not framework:
        return None
    if not _FRAMEWORK_ENGINE:
        from goldenal.auditing.evidence import record
        from goldenal.engines.knobs import ENGINES

        for name in ENGINES:
            for alias in (name, *record(name).aliases):
                _FRAMEWORK_ENGINE[alias] = name
    low = framework.lower()
    return _FRAMEWORK_ENGINE.get(low) or _FRAMEWORK_ENGINE.get(low.split("-")[-1])


_FRAMEWORK_ENGINE = {}      # an engine's name and aliases (the records') -> the engine


class RecipeIndex:
    """Every trailing path (two components or more) of the audited YAML files, for lookups."""

    def __init__(self, yaml_paths):
        self.paths = set(yaml_paths)
        self.suffixes = {}
        for p in sorted(self.paths):
            parts = p.split("/")
            for n in range(2, len(parts) + 1):
                self.suffixes.setdefault("/".join(parts[-n:]), p)   # the first in sorted order


def resolve_recipe(recipe, yaml_paths):
    """The audited relpath a ``CONFIG_FILE`` value names (by its longest trailing path,
    at least directory and file name: the runner copies recipes elsewhere), or None.
    """
    if not recipe:
        return None
    index = yaml_paths if isinstance(yaml_paths, RecipeIndex) else RecipeIndex(yaml_paths)
    # the runner reads ``${CONFIG_FILE%%:*}``: ``recipe.yaml:variant[2]`` selects a variant
    # of the file, and the file is the recipe
    rel = recipe.strip().split(":", 1)[0].lstrip("./")
    if rel in index.paths:
        return rel
    parts = rel.split("/")
    if parts[0] == "recipes":
        parts = parts[1:]
    for n in range(len(parts), 1, -1):
        hit = index.suffixes.get("/".join(parts[-n:]))
        if hit is not None:
            return hit
    return None
