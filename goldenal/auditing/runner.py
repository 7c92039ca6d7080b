"""Run one audit: walk, read each kind of file, follow master references, check."""

import gc
import hashlib
import json
import os
import re
import time
from dataclasses import replace
from typing import NamedTuple

import yaml

from goldenal.auditing import evidence as ev
from goldenal.auditing import master as ms
from goldenal.auditing.check import NO_VARIANT_ENGINES, check_config, clear_cache
from goldenal.auditing.fix import place
from goldenal.auditing.markdown import MARKDOWN, fenced_code, markdown_configs
from goldenal.auditing.rules import RULES, make_finding
from goldenal.auditing.walk import DEFAULT_EXCLUDE, Problem, WalkStats, walk
from goldenal.core.errors import DuplicateKeyError, GoldenALError, yaml_error
from goldenal.engines import table as knobs
from goldenal.recipes.shell import remembering

_KNOB_NAMES = tuple(sorted({row.name for row in ev.VALUE_ROWS}))

def _text(c):
    text = c.data.decode("utf-8", errors="replace")
    return text, text.split("\n")


class RunResult(NamedTuple):
    """One audit run: findings (suppressions applied, fixes placed) and the summary counts."""

    findings: list
    files_read: int
    configs_checked: int
    skipped: tuple         # ((relpath, reason), ...)


# a file modified this recently may change again within its timestamp's granularity
# (two seconds on FAT) without its stat changing: no whole run is kept over it
_RACY_NS = 2_000_000_000


def run(paths, root, curves, *, exclude=DEFAULT_EXCLUDE, respect_gitignore=True, cache=None,
        overlay=None):
    """A :class:`RunResult` for ``paths``, with the cyclic GC paused (it would re-walk
    the registry for objects reference counting frees anyway).  With a cache, the
    last run's result when no file, ignore file, curve or option has changed since.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        tree = None
        if cache is not None and not overlay:
            tree = _tree_state(paths, root, curves, exclude, respect_gitignore)
            hit = cache.get_run(*tree[:2])
            if hit is not None:
                return RunResult(*hit)
        with remembering():     # launchers share lines: each is read once per audit
            findings, files, marked, *counts = _run(paths, root, curves, exclude,
                                                    respect_gitignore, cache, overlay)
        findings = [place(f, files.get(f.path))
                    for f in _apply_suppressions(findings, files, marked)]
        result = RunResult(findings, *counts)
        if cache is not None:
            if tree is not None and tree[2]:
                cache.put_run(*tree[:2], result)
            cache.save()
        return result
    finally:
        if paused:
            gc.enable()


def _tree_state(paths, root, curves, exclude, respect_gitignore):
    """``(key, state, settled)``: digests of the run's inputs and of the stat of every
    file it would read, and whether every one is older than :data:`_RACY_NS`.
    """
    start = time.time_ns()
    key = hashlib.blake2b(repr((
        [os.path.abspath(p) for p in paths], os.path.abspath(root), tuple(exclude or ()),
        respect_gitignore, [(c.to_dict(), c.lines) if hasattr(c, "to_dict") else repr(c)
                            for c in curves])).encode("utf-8", "surrogatepass"),
        digest_size=16).digest()
    state = hashlib.blake2b(digest_size=16)
    newest = 0
    for item in walk(paths, root, exclude=exclude, respect_gitignore=respect_gitignore,
                     stat_only=True):
        state.update(repr(item).encode("utf-8", "surrogatepass"))
        if isinstance(item, tuple) and len(item) == 7:
            newest = max(newest, item[3])
    return key, state.digest(), newest < start - _RACY_NS


def _run(paths, root, curves, exclude, respect_gitignore, cache, overlay):
    findings = []
    files = {}
    marked = []             # the files that may hold a suppression
    candidates = []
    stats = WalkStats()
    checked = {}            # relpath -> number of configs checked
    skipped = {}            # relpath -> reason
    _RECIPES.clear()
    _SAME.clear()
    _CHECKED.clear()
    _STORE[0] = cache
    curve_ids = tuple(c.id for c in curves)
    clear_cache()       # the curves may differ from the last audit's (ids are reused)
    for item in walk(paths, root, exclude=exclude, respect_gitignore=respect_gitignore,
                     stats=stats, overlay=overlay):
        if isinstance(item, Problem):
            findings.append(make_finding("GAL306", item.relpath, 1, item.message,
                                         severity=item.severity))
            skipped.setdefault(item.relpath, item.message)
        else:
            candidates.append(item)
    yaml_paths = ms.RecipeIndex(c.relpath for c in candidates if c.kind in ("recipe", "yaml"))
    by_path = {c.relpath: c for c in candidates}
    texts = {}

    def text_of(c):
        if c.relpath not in texts:
            texts[c.relpath] = _text(c)
            files[c.relpath] = texts[c.relpath][1]
        return texts[c.relpath]

    # masters first: they decide which recipes get a knob injected
    injected = {}

    def count(path, n=1):
        checked[path] = checked.get(path, 0) + n

    # what the master entries running a recipe say of it: the scenario (its sequence-length
    # setting), read only when some recipe says nothing about its own, and the model-prefix
    # (the curve key the runner looks up), read when a recipe's model names no curve
    # (a master is read for them only when one of its CONFIG_FILE items can name the file)
    master_refs = {}        # (kind, master relpath) -> {recipe: {scenario or model-prefix}}

    def names(m):
        """The audited files the CONFIG_FILE items of master ``m`` can name."""
        _, lines = text_of(m)   # decoded either way: findings are placed in its lines
        refs = _cached("master-references", m, lambda: ms.recipe_references(lines))
        return {ms.resolve_recipe(ref, yaml_paths) for ref in refs}

    def from_masters(kind, relpath):
        if "named" not in master_refs:
            master_refs["named"] = [(m, names(m)) for m in candidates
                                    if m.kind == "master" and b"CONFIG_FILE" in m.data]
        out = ()
        for m, named in master_refs["named"]:
            if relpath not in named:
                continue
            if (kind, m.relpath) not in master_refs:
                found = master_refs[kind, m.relpath] = {}
                for ref, values in _master_refs(kind, m, text_of).items():
                    target = ms.resolve_recipe(ref, yaml_paths)
                    if target:
                        found.setdefault(target, set()).update(values)
            out = set().union(out, master_refs[kind, m.relpath].get(relpath, ()))
        return out or ()
    for c in candidates:
        if c.kind != "master" or not c.has_knob:
            continue
        text, lines = text_of(c)
        for inj in _cached("injections", c, lambda: _by_content(
                c, text, lambda: ms.injections(c.relpath, lines))):
            target = ms.resolve_recipe(inj.recipe, yaml_paths)
            if inj.enabled and target:
                injected.setdefault(target, []).append(inj)
            if inj.enabled:
                count(c.relpath)
            findings.extend(_check_injection(inj, target, by_path, text_of, curves))
    for c in candidates:
        if b"goldenal:" in c.data:
            text_of(c)      # decoded for its suppressions, whatever is read of it
            marked.append(c.relpath)
        if c.kind == "master":
            if c.relpath not in checked:
                skipped[c.relpath] = ("master config with no enabled synthetic-acceptance entry"
                                      if c.has_knob else "master config with no synthetic-"
                                      "acceptance entry")
            continue
        if c.kind == "doc" and c.has_knob and c.relpath.lower().endswith(MARKDOWN):
            # a guide's fenced shell blocks are read like a launch script, section by section
            _, lines = text_of(c)
            code = fenced_code(lines)
            configs = _cached("markdown", c, lambda: markdown_configs(
                c.relpath, lines, c.scenario or None))
            findings.extend(markdown_findings(c.relpath, lines, code, configs, curves,
                                              curve_ids))
            if configs:
                count(c.relpath, len(configs))
            else:
                skipped[c.relpath] = "documentation: no command with a knob could be read"
            # prose and other languages' blocks are not read, whatever the shell blocks gave
            outside = [line if not kept else "" for line, kept in zip(lines, code)]
            findings.extend(not_checked(c.relpath, lines, outside,
                                        "it is outside a fenced shell code block"))
            continue
        if c.kind == "doc" or (not c.has_knob and b"goldenal:" in c.data and not c.has_spec):
            if c.kind == "doc" and c.has_knob:
                _, lines = text_of(c)
                findings.extend(not_checked(c.relpath, lines, lines,
                                            "documentation in this format is not read (only "
                                            "fenced shell blocks in Markdown are)"))
            if c.has_knob or c.has_spec:
                skipped[c.relpath] = "documentation: commands in it are not read"
            continue
        agentic = ev.agentic_from_path(c.scenario or c.relpath)
        # a recipe's content may say what its path does not: read it unless the path
        # already says fixed-sequence-length (then no knob is exactly right)
        readable = c.kind == "recipe" or (c.kind == "script" and agentic is not False)
        if not c.has_knob and not (agentic is not False and readable):
            skipped[c.relpath] = ("speculative settings but no synthetic knob, and not agentic"
                                  if agentic is False or c.kind not in ("script", "recipe")
                                  else "speculative settings but no synthetic knob")
            continue
        text, lines = text_of(c)
        if c.kind == "script" and c.has_knob and not agentic and \
                not knobs.first_set(text, ev.VALUE_ROWS):
            # names a knob (sed, a helper's name) but never sets one
            skipped[c.relpath] = "names a synthetic knob but never sets one"
            continue
        try:
            configs = _configs(c, text, lines, text_of)
        except (yaml.YAMLError, GoldenALError, ValueError, RecursionError) as exc:
            line = None
            msg = str(exc).split("\n")[0]
            if isinstance(exc, yaml.YAMLError):
                exc = yaml_error(exc, c.relpath, text=text)
            if isinstance(exc, DuplicateKeyError):
                findings.append(make_finding("GAL312", c.relpath, exc.line, exc.message,
                                             col=exc.col))
                skipped[c.relpath] = f"duplicate key {exc.key!r}"
                continue
            if isinstance(exc, GoldenALError):
                # the shared reader's errors carry their own line
                line = exc.line - 1 if exc.line else None
                msg = exc.message.split("\n")[0].removeprefix("not valid YAML: ")
            findings.append(make_finding("GAL306", c.relpath, (line or 0) + 1,
                                         f"cannot parse {c.kind}: {msg}",
                                         severity=unparsed_severity(c)))
            skipped[c.relpath] = f"cannot parse {c.kind}"
            continue
        n = 0
        demo = c.kind == "script" and not_a_benchmark(c.scenario or c.relpath, text)
        measuring = c.kind == "script" and measures_acceptance(text)
        configs = [with_citation(cfg, lines, curve_ids) for cfg in configs]
        unknown = any(cfg.agentic is None for cfg in configs)
        said = ({ev.agentic_from_name(x) for x in from_masters("scenarios", c.relpath)}
                if unknown else set())
        said.discard(None)
        if len(said) == 1:
            # the recipe says nothing itself: the master config's scenario for it decides
            configs = [cfg.with_(agentic=next(iter(said))) if cfg.agentic is None else cfg
                       for cfg in configs]
        if c.kind == "recipe" and any(cfg.model and not _names_a_curve(cfg.model, curves)
                                      for cfg in configs):
            configs = _with_master_prefix(configs, from_masters("prefixes", c.relpath), curves)
        for cfg in configs:
            if cfg.knob is None and c.relpath in injected:
                n += 1
                continue   # the master config injects the knob; checked there
            if cfg.knob is None and cfg.agentic is None and measuring:
                n += 1
                continue   # real acceptance measured for a curve: what it must be
            n += 1
            serves_users = demo and cfg.knob and cfg.engine and not cfg.eval_only
            if serves_users and cfg.agentic is None:
                # no benchmark runs it (GAL310 below): agentic or not is no question here
                cfg = cfg.with_(extra={**cfg.extra, "no_benchmark": True})
            findings.extend(_checked(cfg, curves))
            if serves_users:
                findings.append(make_finding(
                    "GAL310", cfg.path, cfg.line,
                    f"{cfg.said} is set on a {cfg.engine} server that no benchmark "
                    "client drives: forced acceptance gives real users unverified output",
                    col=cfg.col, found=cfg.value))
        if n:
            count(c.relpath, n)
        else:
            skipped[c.relpath] = "no serve config found in it"
        if c.has_knob and c.kind != "other" and not any(cfg.knob for cfg in configs):
            # a knob is set, yet no config carrying it came out: say so, never silence
            findings.extend(not_checked(c.relpath, lines, lines,
                                        "no serve config around it could be read"))
    for path, reason in stats.skipped:
        skipped.setdefault(path, reason)
    _STORE[0] = None
    _SAME.clear()
    _CHECKED.clear()
    return (findings, files, marked, stats.read, sum(checked.values()),
            tuple(sorted((p, r) for p, r in skipped.items() if p not in checked)))


def markdown_findings(relpath, lines, code, configs, curves, curve_ids):
    """Findings for :func:`~goldenal.auditing.markdown.markdown_configs`: a serving
    example is checked as an unbenchmarked server plus GAL313; documentation
    gets at most warnings; a section setting a knob no config carries, GAL309.
    """
    from goldenal.auditing.markdown import knob_sections

    out = []
    for cfg in configs:
        extra = cfg.extra
        cfg = with_citation(cfg, code, curve_ids)
        example = extra.get("md_example", False)
        if example:
            cfg = cfg.with_(extra={**cfg.extra, "no_benchmark": True})
        found = check_config(cfg, curves)
        if example:
            title = extra.get("md_title")
            where = f", section {title!r}" if title else ""
            found.append(make_finding(
                "GAL313", cfg.path, cfg.line,
                f"{cfg.said} is set in a {cfg.engine or 'serve'} command that no benchmark "
                f"runs{where}: forced acceptance emits unverified tokens to real users",
                col=cfg.col, found=cfg.value))
        if not extra.get("md_recipe", True):
            found = [f._replace(severity="warning") if f.severity == "error" else f
                     for f in found]
        out.extend(found)
    carried = {cfg.extra.get("md_section") for cfg in configs if cfg.knob is not None}
    for section, sec_code in knob_sections(lines):
        if section not in carried:
            out.extend(not_checked(relpath, lines, sec_code,
                                   "no command in a fenced shell block around it could be read"))
    return out


_RECIPES = {}
_STORE = [None]         # the persistent cache of the run in progress, if any
# the configs read from each distinct text in this run: a repository keeps copies of one
# launcher or recipe (one per GPU), and a copy is read once
_SAME = {}


def _by_content(c, text, compute):
    """``compute()``, or the configs (or injections) of an earlier file with the same text
    and the same path facts in the key, each copy given its own path.  Errors are never kept.
    """
    from goldenal.auditing.shell import FILE_TOKENS, name_hint

    path = c.scenario or c.relpath
    base = c.relpath.rsplit("/", 1)[-1].lower()
    key = (c.kind, text, ev.agentic_from_path(path), ev.eval_from_path(c.relpath),
           name_hint(c.relpath), tuple(tok in base for _, tok in FILE_TOKENS))
    hit = _SAME.get(key)
    if hit is None:
        hit = _SAME[key] = (c.relpath, compute())
    first, configs = hit
    if first == c.relpath:
        return configs
    return [cfg.with_(path=c.relpath) if isinstance(cfg, ev.Config)
            else replace(cfg, path=c.relpath) for cfg in configs]


# (line, col, knob, value) -> [(config, its findings)]: copies of one launcher give configs
# that differ in their path alone, and check_config reads the path only to place findings
_CHECKED = {}


def _checked(cfg, curves):
    """:func:`check_config`, its findings reused for a config equal to one checked before
    but for its path."""
    bucket = _CHECKED.setdefault((cfg.line, cfg.col, cfg.knob, cfg.value), [])
    for other, found in bucket:
        if {**cfg.__dict__, "path": other.path} == other.__dict__:     # all fields but path
            return [f._replace(path=cfg.path) if f.path == other.path else f for f in found]
    found = check_config(cfg, curves)
    bucket.append((cfg, found))
    return found


def _cached(kind, c, compute):
    """``compute()``, answered from the run's persistent cache when it holds ``c``."""
    cache = _STORE[0]
    if cache is None:
        return compute()
    hit, value = cache.get(kind, c)
    if hit:
        return value
    value = compute()
    cache.put(kind, c, value)
    return value


def _master_refs(kind, m, text_of):
    """``{CONFIG_FILE: {scenario or model-prefix}}`` of one master config."""
    _, lines = text_of(m)       # decoded either way: findings are placed in its lines
    if kind == "scenarios":
        return _cached("master-scenarios", m, lambda: ms.recipe_scenarios(m.relpath, lines))
    return _cached("master-prefixes", m, lambda: ms.recipe_model_prefixes(lines))


def _names_a_curve(models, curves):
    key = ("names a curve", models)
    if key not in _SAME:        # (cleared with the run, as the curves may change)
        from goldenal.golden.policy import model_matches

        _SAME[key] = any(name and model_matches(c, name) for name in models for c in curves)
    return _SAME[key]


def _with_master_prefix(configs, prefixes, curves):
    """Configs naming no curve's model get their master entries' one model-prefix, last."""
    if len(prefixes) != 1:
        return configs
    (prefix,) = prefixes
    if not _names_a_curve((prefix,), curves):
        return configs
    return [cfg.with_(model=cfg.model + (prefix,))
            if cfg.model and prefix not in cfg.model and not _names_a_curve(cfg.model, curves)
            else cfg for cfg in configs]


# a benchmark client in the launcher (the one list, shared with Markdown sections)
_BENCH_CLIENT = ev.BENCH_CLIENT
# ``goldenal measure`` run as a command (not in a comment): the script measures
# acceptance into a run directory, the step that makes a golden curve
_MEASURE_CLIENT = re.compile(r"(?m)^[^#\n]*?(?<![\w.-])goldenal\s+measure(?![\w-])")


def with_citation(cfg, lines, ids):
    """A config on an engine that cannot select a sampling variant, with the curves cited near it."""
    if cfg.knob is None or cfg.engine not in NO_VARIANT_ENGINES:
        return cfg
    cited = ev.cited_curves(lines, cfg.line, cfg.value, ids)
    return cfg.with_(extra={**cfg.extra, "cited_curves": cited}) if cited else cfg


def measures_acceptance(text):
    """True for a launcher whose client is ``goldenal measure``: real acceptance measured
    for a curve, neither agentic nor fixed, nothing for GAL301/GAL304 to ask.
    """
    # the word first: the line-anchored pattern would try every line of every launcher
    return "goldenal" in text and bool(_MEASURE_CLIENT.search(text))


def not_a_benchmark(path, text):
    """A launcher outside any benchmark or scenario directory that runs no benchmark client."""
    return ("bench" not in path.lower() and ev.agentic_from_path(path) is None
            and not _BENCH_CLIENT.search(text) and not any(ev.client_signals(text)))


def not_checked(relpath, lines, code, why):
    """GAL309 at every place ``code`` (the lines read) sets a knob; comments are not places."""
    out = []
    # a line naming no knob sets none: only the lines naming one are read
    for i in knobs.lines_naming(code, _KNOB_NAMES):
        text = code[i]
        if not text or text.lstrip().startswith(("#", "//")):
            continue
        found = knobs.first_set(text, ev.VALUE_ROWS)
        if found and not _yaml_null(found[1], text):
            m = found[1]
            out.append(make_finding("GAL309", relpath, i + 1,
                                    f"{m.group('name')} is set here but not checked: {why}",
                                    col=m.start("name") + 1))
    return out


_NULL_VALUE = re.compile(r"[ \t]*(?:(?:null|Null|NULL|~)[ \t]*)?(?:#.*)?\r?$")


def _yaml_null(m, text):
    """Is a ``key:`` match followed by a YAML null (nothing, ``null``, ``~``)?  A null sets
    no knob: the config reading it says so (GAL301)."""
    return m.groupdict().get("sep") == ":" and _NULL_VALUE.match(text, m.end()) is not None


def unparsed_severity(c):
    """GAL306's severity: an error for a recipe or a file with speculative settings
    (a serve config nobody could check), else a warning.
    """
    if c.kind == "recipe" or any(b in c.data for b in ev.SPEC_BYTES):
        return "error"
    return "warning"


def _recipe_cached(c, text_of):
    """Recipe configs, parsed once per audit even when several entries reference it."""
    key = (c.relpath, id(c.data))
    if key not in _RECIPES:
        from goldenal.auditing.recipe import recipe_configs

        text, lines = text_of(c)
        try:
            _RECIPES[key] = _cached("recipe", c, lambda: _by_content(c, text, lambda: (
                recipe_configs(c.relpath, text, lines, c.scenario or None))))
        except Exception as exc:   # re-raised on each use; reported once by the caller
            _RECIPES[key] = exc
    if isinstance(_RECIPES[key], Exception):
        raise _RECIPES[key]
    return _RECIPES[key]


def _configs(c, text, lines, text_of=None):
    if c.kind == "recipe" and text_of is not None:
        return _recipe_cached(c, text_of)
    if c.kind == "script":
        from goldenal.auditing.shell import script_configs

        return _cached("script", c, lambda: _by_content(c, text, lambda: script_configs(
            c.relpath, text, lines, c.scenario or None)))
    if c.kind == "recipe":
        from goldenal.auditing.recipe import recipe_configs

        return recipe_configs(c.relpath, text, lines, c.scenario or None)
    if c.kind in ("yaml", "json", "other"):
        if c.kind == "json":
            json.loads(text)   # broken JSON is reported, not guessed at
        if c.kind == "yaml":
            from goldenal.auditing.matrix import matrix_configs

            # a CI matrix: every entry's ATOM argument string is a config of its own
            entries = matrix_configs(c.relpath, text, lines, c.scenario or None)
            if entries:
                return entries
        from goldenal.auditing.shell import text_configs

        return text_configs(c.relpath, text, lines, literal_only=c.kind == "other",
                            scenario_path=c.scenario or None)
    return []


def _check_injection(inj, target, by_path, text_of, curves):
    """Findings for one master-config injection, checked against its recipe."""
    out = []
    if not inj.enabled:
        return out
    # the scenario's name says, as it does for the recipes a master config runs
    agentic = ev.agentic_from_name(inj.scenario) if inj.scenario else None
    header = inj.header
    engine = ms.engine_of(header.get("framework"))
    base = ev.Config(
        path=inj.path, line=inj.line, col=inj.col, engine=engine,
        model=tuple(m for m in (header.get("model"), header.get("model-prefix")) if m),
        knob=ev.RUNNER_LENGTH if inj.value is not None else None, value=inj.value,
        image=header.get("image"), agentic=agentic, rejection_sample_method="synthetic",
        branch=None, extra={"injected": True})
    if agentic is False:
        what = f"{ev.RUNNER_SWITCH}=true{'' if inj.value is None else ', length ' + inj.value}"
        out.append(make_finding("GAL302", inj.path, inj.line,
                                f"{what} injected into {inj.recipe} under the {inj.scenario} "
                                f"scenario of {inj.entry}; fixed-sequence-length configs must "
                                "measure real acceptance", col=inj.col, found=inj.value))
        return out
    if inj.value is None:
        return out   # the runner looks the golden value up itself
    recipe_cfg = None
    if target is not None:
        try:
            cfgs = _recipe_cached(by_path[target], text_of)
        except (yaml.YAMLError, GoldenALError, ValueError, RecursionError):
            cfgs = []
        drafting = [c for c in cfgs if c.drafts and c.spec]
        recipe_cfg = drafting[-1] if drafting else None
    settings = inj.settings
    k = None
    if settings.get("NUM_SPEC_TOKENS", "").isdigit():
        k = int(settings["NUM_SPEC_TOKENS"])
    thinking = how = None
    mode = settings.get("THINKING_MODE")
    if mode:
        thinking, how = ("on" if mode.endswith("on") else "off"), f"THINKING_MODE={mode}"
    if recipe_cfg is None:
        if k is None:
            out.append(make_finding(
                "GAL307", inj.path, inj.line,
                f"{ev.RUNNER_LENGTH}={inj.value} for {inj.recipe}, which is not in the "
                "audited tree: K and the draft head cannot be checked", col=inj.col,
                found=inj.value))
            return out
        cfg = base.with_(k=k, thinking=thinking, thinking_source=how)
    else:
        cfg = base.with_(
            engine=engine or recipe_cfg.engine, model=base.model + recipe_cfg.model,
            draft=recipe_cfg.draft, method=recipe_cfg.method, variant=recipe_cfg.variant,
            k=k if k is not None else recipe_cfg.k,
            thinking=thinking or recipe_cfg.thinking,
            thinking_source=how or recipe_cfg.thinking_source,
            image=base.image or recipe_cfg.image, extra={**recipe_cfg.extra, "injected": True},
            # an entry outside any scenario leaves it to what the recipe itself says
            agentic=recipe_cfg.agentic if base.agentic is None else base.agentic,
            branch=f"recipe {target}")
    return out + check_config(cfg, curves)


def file_configs(path, text):
    """The serve configs the audit reads in one file, before any rule (none for master
    configs and docs); ``inject`` reads the thinking mode here, so both commands
    read a file one way.  Raises what the audit reports as GAL306/GAL312.
    """
    from goldenal.auditing.walk import Candidate, _kind

    data = text.encode("utf-8", errors="surrogateescape")
    relpath = ev.repository_path(path)
    kind = _kind(relpath, data)
    if kind in ("master", "doc"):
        return []
    c = Candidate(relpath, data, kind, True, True, relpath)
    kept = set(_SAME)
    try:
        return _configs(c, text, text.split("\n"))
    finally:    # outside an audit run nothing else clears what this read adds
        for key in _SAME.keys() - kept:
            del _SAME[key]


def _mentions(relpath, lines, table):
    """Lines of ``table`` whose suppression shows the syntax (Markdown prose, a Python
    string): it still applies, but is never reported unused.
    """
    low = relpath.lower()
    if low.endswith(MARKDOWN):
        code = fenced_code(lines)
        return {ln for ln in table if not code[ln - 1]}
    if low.endswith(".py"):
        import io
        import tokenize

        comments = set()
        try:
            for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines)).readline):
                if tok.type == tokenize.COMMENT and "goldenal" in tok.string:
                    comments.add(tok.start[0])
        except (tokenize.TokenError, SyntaxError):
            return set()        # not Python as written: every suppression counts
        return {ln for ln in table if ln not in comments}
    return set()


def _apply_suppressions(findings, files, marked):
    """Drop findings named by ``# goldenal: ignore[CODE]`` on their line (or the line above);
    only the files in ``marked`` (their bytes hold ``goldenal:``) can hold one.
    """
    supp = {}
    for relpath in marked:
        s = ev.suppressions(files[relpath])
        if s:
            supp[relpath] = s
    used = set()
    kept = []
    for f in findings:
        table = supp.get(f.path, {})
        hit = None
        for ln in (f.line, f.line - 1):
            codes = table.get(ln)
            if codes and f.code in codes:
                if ln == f.line - 1 and not files[f.path][ln - 1].lstrip().startswith("#"):
                    continue
                hit = (f.path, ln, f.code)
                break
        if hit:
            used.add(hit)
        else:
            kept.append(f)
    for relpath, table in supp.items():
        mentions = _mentions(relpath, files[relpath], table)
        for ln, codes in table.items():
            if ln in mentions:
                continue
            for code in sorted(codes):
                if (relpath, ln, code) in used:
                    continue
                why = "matches no finding" if code in RULES else "names an unknown code"
                col = files[relpath][ln - 1].find("goldenal") + 1
                kept.append(make_finding("GAL308", relpath, ln,
                                         f"suppression ignore[{code}] {why}", col=max(col, 1),
                                         fix="remove the suppression comment"))
    return kept
