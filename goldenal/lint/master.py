"""Master configs (InferenceX ``configs/*-master.yaml``): synthetic injections and their recipes.

A master entry asks the runner to inject synthetic acceptance into an
srt-slurm recipe through ``additional-settings`` strings
(``SYNTHETIC_ACCEPTANCE=true``, ``SYNTHETIC_ACCEPTANCE_LENGTH=2.27``,
``CONFIG_FILE=recipes/...``, optionally ``NUM_SPEC_TOKENS`` and
``THINKING_MODE``).  K and the draft head live in the referenced recipe, so
the injection is checked against that recipe's decode (or aggregated) role.

Master files are large and only a few lines matter, so they are read as
indented text: each ``SYNTHETIC_ACCEPTANCE`` line is placed in its list, and
the keys above it (scenario, role, entry) are found by walking up the
indentation.  No YAML parse of the whole file is needed.
"""

import re
from dataclasses import dataclass, field

_KEY_RE = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z0-9_.-]+):(?:\s|$)")
_ITEM_RE = re.compile(r"""^(\s*)-\s+["']?([A-Z][A-Z0-9_]*)=([^"'#]*)["']?\s*(?:#.*)?$""")
_FRAMEWORK_ENGINE = {"vllm": "vllm", "sglang": "sglang", "trt": "trtllm", "trtllm": "trtllm",
                     "atom": "atom", "llamacpp": "llamacpp", "llama.cpp": "llamacpp"}


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


def injections(relpath, lines):
    """Every injection request of a master config, in file order."""
    seen = set()
    out = []
    headers = {}
    for i, text in enumerate(lines):
        if "SYNTHETIC_ACCEPTANCE" not in text or text.lstrip().startswith("#"):
            continue
        m = _ITEM_RE.match(text)
        if not m:
            continue
        ind = len(m.group(1))
        lo = i
        while lo > 0 and (_ITEM_RE.match(lines[lo - 1]) or lines[lo - 1].lstrip().startswith("#")) \
                and _indent(lines[lo - 1]) == ind:
            lo -= 1
        if lo in seen:
            continue
        seen.add(lo)
        hi = i
        while hi + 1 < len(lines) and (_ITEM_RE.match(lines[hi + 1])
                                       or lines[hi + 1].lstrip().startswith("#")) \
                and _indent(lines[hi + 1]) == ind:
            hi += 1
        settings = {}
        for j in range(lo, hi + 1):
            mm = _ITEM_RE.match(lines[j])
            if mm:
                settings[mm.group(2)] = (mm.group(3).strip(), j + 1,
                                         lines[j].find(mm.group(2)) + 1)
        # a YAML sequence may sit at its parent key's indentation, so a "- " line
        # counts as two columns deeper than its dash
        chain = []
        cur = ind + 2
        for j in range(lo - 1, -1, -1):
            t = lines[j]
            if not t.strip() or t.lstrip().startswith("#"):
                continue
            level = _indent(t) + (2 if t.lstrip().startswith("-") else 0)
            km = _KEY_RE.match(t)
            if km and level < cur:
                chain.append((km.group(2), j))
                cur = level
                if cur == 0:
                    break
            elif level < cur:
                cur = level
        entry, entry_line = (chain[-1] if chain and cur == 0 else (None, None))
        keys = [k for k, _ in chain]
        scenario = keys[keys.index("scenarios") - 1] if "scenarios" in keys[1:] else None
        role = next((k for k in keys if k in ("prefill", "decode", "aggregated")), None)
        if entry is not None and entry not in headers:
            headers[entry] = _header(lines, entry_line)
        length = settings.get("SYNTHETIC_ACCEPTANCE_LENGTH")
        flag = settings.get("SYNTHETIC_ACCEPTANCE")
        where = length or flag
        out.append(Injection(
            path=relpath, line=where[1], col=where[2],
            enabled=bool(flag and flag[0].strip().lower() == "true"),
            value=length[0] if length else None,
            recipe=settings.get("CONFIG_FILE", (None,))[0],
            settings={k: v[0] for k, v in settings.items()},
            entry=entry, scenario=scenario, role=role, header=headers.get(entry, {})))
    return out


def recipe_scenarios(relpath, lines):
    """``{CONFIG_FILE as written: {scenario, ...}}`` for every recipe a master entry runs.

    The scenario is the key under ``scenarios:`` the reference sits in
    (``fixed-seq-len``, ``agentic-coding``...), with or without synthetic
    settings: a master config is where a recipe's sequence lengths are set.
    One pass down the file with a stack of the keys above the current line
    (master configs run to tens of thousands of lines).
    """
    out = {}
    stack = []          # (level, key) of the open mappings above the current line
    for text in lines:
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        item = "CONFIG_FILE" in text and _ITEM_RE.match(text)
        # a "- " line counts as two columns deeper than its dash (a sequence may sit
        # at its parent key's indentation)
        level = len(text) - len(stripped) + (2 if stripped.startswith("-") else 0)
        while stack and stack[-1][0] >= level:
            stack.pop()
        if item and item.group(2) == "CONFIG_FILE":
            keys = [k for _, k in reversed(stack)]
            if "scenarios" in keys[1:]:
                scenario = keys[keys.index("scenarios") - 1]
                out.setdefault(item.group(3).strip(), set()).add(scenario)
            continue
        km = _KEY_RE.match(text)
        if km:
            stack.append((level, km.group(2)))
    return out


def _header(lines, start):
    """``image``/``model``/``model-prefix``/``framework`` of the entry starting at ``start``."""
    out = {}
    for j in range(start + 1, min(len(lines), start + 60)):
        t = lines[j]
        if t and not t.startswith(" ") and not t.startswith("#"):
            break
        m = re.match(r"^  ([a-z-]+):\s*(.*?)\s*(?:#.*)?$", t)
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
    tail = framework.split("-")[-1].lower()
    return _FRAMEWORK_ENGINE.get(tail)


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
    """The audited relpath a ``CONFIG_FILE`` value refers to, or None.

    The runner copies ``benchmarks/multi_node/srt-slurm-recipes/<engine>/...``
    into ``recipes/``, so a reference is matched by its longest trailing path
    (at least the directory and the file name).  ``yaml_paths`` is a list of
    relpaths or a :class:`RecipeIndex` of them (one per audit: constant-time
    lookups).
    """
    if not recipe:
        return None
    index = yaml_paths if isinstance(yaml_paths, RecipeIndex) else RecipeIndex(yaml_paths)
    rel = recipe.strip().lstrip("./")
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
