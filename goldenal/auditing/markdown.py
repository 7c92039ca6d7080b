"""Commands in Markdown's fenced blocks: people copy launch commands from guides, so a
knob pinned in one is audited like one in a script."""

import re
from typing import NamedTuple

from goldenal.auditing import evidence as ev
from goldenal.engines import table as knobs

# CommonMark: up to three spaces, then three or more backticks or tildes, then an info string
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)")
MARKDOWN = (".md", ".markdown")      # file-name endings of Markdown documents
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console", "zsh", "shell-session", "text"}


def fenced_code(lines, blocks=None):
    """``lines`` with all but shell-like fenced blocks blanked and ``$ `` prompts spaced out,
    so line and column numbers stay the document's; ``blocks``: :func:`outline`'s, if read."""
    shell = {i for b in (outline(lines)[1] if blocks is None else blocks) if b.shell
             for i in range(b.first, b.stop)}
    kept = [line if i in shell else "" for i, line in enumerate(lines)]
    return [line.replace("$ ", "  ", 1) if line.lstrip().startswith("$ ") else line
            for line in kept]


# ATX headings (``## Title``; the closing ``#`` run is dropped by _atx_title) and setext
# underlines (CommonMark)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


class Block(NamedTuple):
    """A fenced block's code ``lines[first:stop]`` and its innermost heading's index (-1)."""

    first: int
    stop: int
    shell: bool
    section: int


class Heading(NamedTuple):
    """A heading: its 0-based line, level (1-6), text and the index of its parent (-1)."""

    line: int
    level: int
    title: str
    parent: int


def outline(lines):
    """``(headings, blocks)``, as CommonMark reads them (an unclosed block runs to the end)."""
    headings, blocks = [], []
    fence = None
    start = shell = None
    prose = False           # the previous line is paragraph text (a setext heading's title)

    def add_heading(i, level, title):
        parent = len(headings) - 1
        while parent >= 0 and headings[parent].level >= level:
            parent = headings[parent].parent
        headings.append(Heading(i, level, title.strip(), parent))

    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= fence[1] and \
                    not line[m.end():].strip():
                blocks.append(Block(start, i, shell, len(headings) - 1))
                fence = None
            continue
        if m:
            fence = (m.group(2)[0], len(m.group(2)))
            start, shell = i + 1, m.group(3).lower() in SHELL_LANGUAGES
            prose = False
            continue
        atx = _ATX.match(line)
        if atx:
            add_heading(i, len(atx.group(1)), _atx_title(line[atx.end():]))
            prose = False
            continue
        setext = _SETEXT.match(line)
        if setext and prose:
            add_heading(i - 1, 1 if setext.group(1)[0] == "=" else 2, lines[i - 1])
            prose = False
            continue
        prose = bool(line.strip()) and not line.startswith(("    ", "\t"))
    if fence is not None:
        blocks.append(Block(start, len(lines), shell, len(headings) - 1))
    return headings, blocks


def _atx_title(rest):
    """An ATX heading's text: blanks around it and a closing run of ``#`` dropped."""
    title = rest.strip()
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.rstrip()
    return title


def heading_chain(headings, index):
    """The titles of heading ``index`` and its ancestors, innermost first."""
    out = []
    while index >= 0:
        out.append(headings[index].title)
        index = headings[index].parent
    return out


_RECIPE_FOLDERS = ("recipes", "recipe", "benchmarks", "benchmark", "bench")


def is_recipe(relpath):
    """True in a recipes, benchmark or scenario folder (run as written); else documentation."""
    from goldenal.auditing.evidence import agentic_from_path

    folders = relpath.lower().replace("\\", "/").split("/")[:-1]
    return (any(f in _RECIPE_FOLDERS for f in folders)
            or agentic_from_path("/".join(folders) + "/") is not None)


# the knob spellings a block can set (the audit's one table, every engine)
# a server started in a command block: an engine's own command, or a container run
_CONTAINER_RUN = re.compile(r"\b(?:docker|podman|nerdctl)\s+run\b")
# heading words that say fixed-sequence-length besides a recipe name's spellings
_FIXED_HEADING = re.compile(r"\bfixed[- ]?(?:sequence|seq)[- ]?len|\bfixed[- ]length\b")
_NOT_AGENTIC = re.compile(r"\bnon[- ]?agentic\b|\bnot agentic\b")


def heading_says(title):
    """True / False / None from a heading: a recipe name's words, spaced (``8k1k runs``)."""
    from goldenal.auditing.evidence import agentic_from_name

    low = title.lower()
    if _NOT_AGENTIC.search(low):
        return False
    if _FIXED_HEADING.search(low) and "agentic" not in low and "agentx" not in low:
        return False
    return agentic_from_name("-" + re.sub(r"[^a-z0-9/]+", "-", low) + "-")


def _sections(lines):
    """``(headings, {section: (shell blocks, their code lines, rest blanked)}, code lines)``."""
    heads, blocks = outline(lines)
    code = fenced_code(lines, blocks)
    groups = {}
    for b in blocks:
        if b.shell:
            groups.setdefault(b.section, []).append(b)
    out = {}
    for section, group in groups.items():
        rows = {i for b in group for i in range(b.first, b.stop)}
        out[section] = (group, [line if i in rows else "" for i, line in enumerate(code)])
    return heads, out, code


def knob_sections(lines):
    """``[(section, code)]``: the sections whose shell blocks set a knob, each block's lines kept."""
    return [(section, sec_code) for section, (_, sec_code) in _sections(lines)[1].items()
            if knobs.first_set("\n".join(sec_code), ev.VALUE_ROWS)]


def markdown_configs(relpath, lines, scenario_path=None):
    """The configs of the shell blocks under each heading, read as one script; agentic or not
    from their clients, the headings, a recipe page's clients, the path, never another section."""
    from goldenal.core.errors import GoldenALError
    from goldenal.auditing.shell import script_configs

    recipe = is_recipe(scenario_path or relpath)
    heads, sections, code = _sections(lines)

    def block_text(b):
        return "\n".join(code[b.first:b.stop])

    page = None
    if recipe:
        said = {ev.agentic_from_client(block_text(b))
                for group, _ in sections.values() for b in group}
        said.discard(None)
        page = said.pop() if len(said) == 1 else None
    out = []
    for section, (group, sec_code) in sections.items():
        sec_text = "\n".join(sec_code)
        if not knobs.first_set(sec_text, ev.VALUE_ROWS):
            continue
        named = next((a for a in map(heading_says, heading_chain(heads, section))
                      if a is not None), None)
        try:
            configs = script_configs(relpath, sec_text, sec_code, scenario_path,
                                     context=named if named is not None else page)
        except (GoldenALError, ValueError, RecursionError):
            continue
        agentic, fixed = ev.client_signals(sec_text)
        commands = "\n".join(x for x in sec_code if not x.lstrip().startswith("#"))
        benchmarked = agentic or fixed or bool(ev.BENCH_CLIENT.search(commands))
        launched = knobs.launched_engines(sec_text)
        container = bool(_CONTAINER_RUN.search(commands))
        for cfg in configs:
            if agentic and fixed:
                # the section runs both kinds: the block holding the knob says which
                own = next((ev.agentic_from_client(block_text(b)) for b in group
                            if b.first < cfg.line <= b.stop), None)
                if own is not None:
                    cfg = cfg.with_(agentic=own)
            example = (not recipe and cfg.knob is not None and cfg.agentic is None
                       and (cfg.engine in launched or container) and not benchmarked
                       and not cfg.eval_only)
            out.append(cfg.with_(extra={
                **cfg.extra, "md_section": section, "md_recipe": recipe, "md_example": example,
                "md_title": heads[section].title if section >= 0 else None}))
    return out
