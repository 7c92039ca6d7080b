"""Rewrite serve configs in place so they carry the golden AL (``goldenal inject``): changed
spans only, every file planned before any is written, all or none."""

import contextlib
import difflib
import os
from dataclasses import dataclass, field, replace
from decimal import Decimal

from goldenal.core.files import locked_directories, read_text, write_texts_atomic
from goldenal.apply.emit import _takers, survival_rates
from goldenal.engines import MODULES, adapter, table
from goldenal.engines.base import chosen_k, same_number
from goldenal.golden.curves import is_plain_decimal
from goldenal.golden.policy import normalize_thinking, resolve_served, select, served_sampling
from goldenal.golden.registry import load_registry
from goldenal.recipes import spans
from goldenal.engines.locate import ROLES, find_sites, pd_decode, scenario_facts
from goldenal.core.envflags import RUNNER_SPELLINGS, env_flag
from goldenal.core.errors import (EXIT_USAGE, GoldenALError, ParseError, PolicyError,
                                  UnknownCurve, UsageError)

# The runner's FRAMEWORK values (InferenceX runners/synthetic_injectors: ``dynamo-<engine>``)
# and ours: every engine's name and the other names its record gives it.
FRAMEWORKS = {word: m.RECORD.name for m in MODULES.values()
              for word in (m.RECORD.name, f"dynamo-{m.RECORD.name}", *m.RECORD.aliases)}
COMMAND_SUFFIXES = (".sh", ".bash", ".args", ".cmd")


@dataclass(frozen=True)
class SiteValue:
    """The golden value chosen for one site (worker role / variant)."""

    role: "str | None"
    section: "str | None"
    engine: str
    k: int
    al: str
    knob_value: str
    curve: "str | None"
    line: int


@dataclass(frozen=True)
class InjectResult:
    """What :func:`inject` found and changed in one file."""

    path: str
    changed: int
    entries: int
    diff: str
    written: bool
    values: tuple = ()
    changes: tuple = ()
    warnings: tuple = ()
    message: str = ""
    files: tuple = field(default=(), repr=False)
    # ``{path: new text}`` still to write (empty once written, or with check/diff_only)
    pending: dict = field(default_factory=dict, repr=False, compare=False)
    # ``{path: text read}`` of the pending files inject read itself: checked before writing
    read: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def needs_change(self):
        return self.changed > 0

    def to_frame(self):
        """One row per changed setting."""
        import pandas as pd

        return pd.DataFrame(list(self.changes), columns=["line", "role", "knob", "old", "new"])


# -- choosing the curve ------------------------------------------------------

def resolve_curve(registry, site, *, model=None, draft=None, curve=None, variant=None,
                  path=None, line=None):
    """The one curve that applies to a site (:func:`goldenal.golden.policy.resolve_served`)."""
    dsm, rsm = served_sampling(site)
    # a knob that comes with its own verifier replaces whichever one the file
    # named: the file is resolved as it will serve
    rsm = adapter(site.engine).verifier or rsm
    with _located(path, line):
        return resolve_served(registry, models=tuple(site.models), draft=site.draft,
                              method=site.method, draft_sample_method=dsm,
                              rejection_sample_method=rsm, model=model, draft_flag=draft,
                              curve=curve, variant=variant)


@contextlib.contextmanager
def _located(path, line):
    """The policy's own refusal, located in the file."""
    try:
        yield
    except Exception as exc:
        if hasattr(exc, "path") and exc.path is None:
            exc.path, exc.line = path, line
        raise


# -- the rewrite ---------------------------------------------------------------

def _site_line(site):
    node = site.k_node if site.k_node is not None else site.spec
    return spans.line_of(node)


def _site_k(site, k, path):
    line = _site_line(site)
    if site.k is None and len(set(site.k_values)) > 1:
        raise PolicyError(f"{site.role or 'the'} worker lists several K values "
                          f"{list(site.k_values)} in variant {site.section}; give each its "
                          "own variant section", path=path, line=line)
    return chosen_k(site.k, k, said=f"{site.role or 'the'} worker drafts K={site.k}",
                    missing=f"the {site.role or ''} speculative settings do not say how many "
                            "tokens are drafted (" + " / ".join(dict.fromkeys(
                                r.name for r in table.spellings(site.engine, setting=table.K)))
                            + ")", path=path, line=line)


def explicit_al(al, k, *, path=None, line=None):
    """An explicit AL checked like a curve value: a plain ASCII decimal in [1, K+1]."""
    text = str(al).strip()
    if not is_plain_decimal(text):
        raise UsageError(f"SYNTHETIC_ACCEPTANCE_LENGTH must be a plain decimal such as 2.83, "
                         f"got {al!r}")
    if not 1 <= Decimal(text) <= k + 1:
        raise PolicyError(f"AL {text} is outside [1, K+1] = [1, {k + 1}]", path=path, line=line)
    return text


def _explicit_for(al, site, decode_role=None):
    """The explicit AL for a site's role (a prefill worker falls back to its decode's)."""
    if not isinstance(al, dict):
        return al
    for role in (site.role, None, decode_role):
        if al.get(role) is not None:
            return al[role]
    raise UsageError(f"no explicit acceptance length for the {site.role or 'unnamed'} role "
                     f"(given for: {', '.join(sorted(str(r) for r in al))})")


def check_explicit(text, site, *, registry, k, thinking, selection, force, path, line):
    """Warnings about an explicit AL checked against the site's cell (refused unless ``force``)."""
    try:
        curve = resolve_curve(registry, site, path=path, line=line, **selection)
    except UnknownCurve as exc:
        return [f"{path}:{line}: warning: no committed curve to check the explicit "
                f"SYNTHETIC_ACCEPTANCE_LENGTH={text} against ({exc.message}); state where the "
                "value comes from in a comment"]
    except PolicyError as exc:
        return [f"{path}:{line}: warning: cannot determine the golden cell to check the "
                f"explicit SYNTHETIC_ACCEPTANCE_LENGTH={text} against: {exc.message}"]
    mode = _assumed(curve, thinking, None, path)
    cell = curve.cells.get(mode, {}).get(k)
    label = f"{curve.id} thinking_{mode} K={k}"
    where = f" for the {site.role} role" if site.role else ""
    if cell is None or cell == "N/A":
        if force:
            return [f"{path}:{line}: warning: {label} has no committed cell; the explicit "
                    f"SYNTHETIC_ACCEPTANCE_LENGTH={text} is written because of --force"]
        raise PolicyError(f"explicit SYNTHETIC_ACCEPTANCE_LENGTH={text}{where}: {label} has no "
                          "committed cell, so no value may be pinned (--force writes it "
                          "anyway)", path=path, line=line)
    if Decimal(cell) == Decimal(text):
        return []
    others = [f"{c.id} thinking_{m} K={kk}" for c in registry for m, cells in c.cells.items()
              for kk, v in sorted(cells.items())
              if v != "N/A" and Decimal(v) == Decimal(text) and (c.id, m, kk) != (curve.id, mode, k)]
    also = f"; {text} is {' and '.join(others[:3])}" if others else ""
    if force:
        return [f"{path}:{line}: warning: explicit SYNTHETIC_ACCEPTANCE_LENGTH={text}{where} "
                f"differs from the golden cell {label} ({cell}){also}; written because of "
                "--force"]
    raise PolicyError(f"explicit SYNTHETIC_ACCEPTANCE_LENGTH={text}{where} differs from the "
                      f"golden cell {label}: expected {cell}{also}; pass --force to write it "
                      "anyway", path=path, line=line)


def _golden_cell(site, site_k, line, *, path, al, registry, thinking, selection, force, notes,
                 decode_role=None):
    """``(AL text, curve id)`` a site must carry: the explicit length, checked, or the cell."""
    if al is not None:
        text = explicit_al(_explicit_for(al, site, decode_role), site_k, path=path, line=line)
        notes.extend(check_explicit(text, site, registry=registry, k=site_k, thinking=thinking,
                                    selection=selection, force=force, path=path, line=line))
        return text, None
    curve = resolve_curve(registry, site, path=path, line=line, **selection)
    thinking = _assumed(curve, thinking, notes, path)
    with _located(path, line):
        return select(registry, k=site_k, thinking=thinking, curve=curve.id).text, curve.id


def _group_key(site):
    """What one write serves: sites with the same key share it."""
    eng = adapter(site.engine)
    if not eng.record.env_knob:       # the knob lives in the spec config
        return _written_at(site.spec, eng.knob)
    if site.env is not None:
        node = site.env.layers[0] if isinstance(site.env, spans.Layers) else site.env
        return _written_at(node, eng.knob)
    if site.backend is not None and not site.env_file:
        return ("new", _written_at(site.backend), site.role)
    return ("file", site.env_file, id(site.spec))


def _zip_shared(site):
    """Does the knob's write for ``site`` land in a ``zip_override_*`` section's mapping
    that all its variants read (not in a list read at the site's index)?"""
    eng = adapter(site.engine)
    if site.env_file:
        return False
    if not eng.record.env_knob:       # the knob lives in the spec config
        return isinstance(site.spec, spans.ZipSlice) and not isinstance(
            _written_at(site.spec, eng.knob), tuple)
    if site.env is None:
        return isinstance(site.backend, spans.ZipSlice)
    node = site.env.layers[0] if isinstance(site.env, spans.Layers) else site.env
    return isinstance(node, spans.ZipSlice) and not isinstance(_written_at(node, eng.knob),
                                                               tuple)


def _per_index(sites, values):
    """``{(zip section's holder, role): {index: knob value}}`` of every zip variant's site."""
    out = {}
    for site, value in zip(sites, values):
        if isinstance(site.backend, spans.ZipSlice):
            out.setdefault((id(site.backend.node), site.role), {})[site.backend.index] = value
    return out


def _zip_value(per_index, site, al_text, path):
    """The AL a zip section's shared block carries: ``al_text`` where every variant needs
    its value, else :class:`spans.PerVariant`, which srt-slurm slices like the section's K
    list."""
    chosen = per_index[(id(site.backend.node), site.role)]
    if len({v.knob_value for v in chosen.values()}) == 1:
        return al_text
    n = spans.zip_length(site.backend.node, path)
    missing = [i for i in range(n) if i not in chosen]
    if missing:
        section = (site.section or "").split("[")[0]
        said = ", ".join(sorted({v.knob_value for v in chosen.values()}))
        raise PolicyError(
            f"the {site.role or 'server'} workers of {section} need different values "
            f"({said}) but {section}[{missing[0]}] has no speculative settings to choose one "
            "for; give that variant its own section", path=path, line=_site_line(site))
    return spans.PerVariant(chosen[i].al for i in range(n))


def _role_label(site):
    """A role, and its variant where it has one: ``decode of sweep[k=2]``."""
    role = site.role or "server"
    return role if site.section in (None, "base") else f"{role} of {site.section}"


def _written_at(node, key=None):
    """The identity of a mapping as written: a sweep's combinations and a
    ``zip_override_*`` section's variants share it, but for ``key`` given in the zip
    section as a list (one value per variant)."""
    if isinstance(node, spans.ZipSlice) and key:
        own = spans.own_pair(node.node, key)
        if own is not None and own[1].id == "sequence" and len(own[1].value) > 1:
            return id(node.node), node.index
    return id(spans.as_written(node))


def inject(path, *, engine=None, model=None, k=None, thinking=None, draft=None, curve=None,
           variant=None, golden_dir=None, al=None, distribution=False, form=None,
           env_file=None, force=False, check=False, diff_only=False, text=None,
           allow_non_agentic=False, _defer=False):
    """Rewrite one serve config so every speculative site carries its golden AL.

    Parameters
    ----------
    path : str or os.PathLike
        An srt-slurm recipe, a vLLM ``--config`` YAML/JSON, a TensorRT-LLM extra-LLM-API
        YAML, or a launch script or argument file (``.sh``, ``.args``).
    engine : {"vllm", "sglang", "trtllm", "atom", "llamacpp"}, optional
        Refuse files that configure another engine.
    model, draft, curve, variant : optional
        Selection as in :func:`goldenal.lookup`; refused when they contradict the file.
    k : int, optional
        Only for files that do not state K; refused when it contradicts them.
    thinking : {"on", "off"}, optional
        The mode served; default the file's declaration (read as ``audit`` does, and
        refused when contradicted), else the curve's only mode, else ``on`` (a warning).
    golden_dir : str, optional
    al : str, optional
        An explicit AL (the runner's ``SYNTHETIC_ACCEPTANCE_LENGTH``).
    distribution : bool or {"curve", "min-variance"}
        Engines with a rates knob: the curve's per-position rates (True), or min-variance.
    form : {"length", "rate"}, optional
        ATOM: which flag to write.
    env_file : str, optional
        TensorRT-LLM: the knob's environment file (default: a ``# env-file: PATH`` comment's).
    force : bool
        Overwrite a different value already pinned.
    check, diff_only : bool
        Write nothing; ``result.needs_change`` / ``result.diff`` tell the change.
    text : str, optional
        The file's content (then ``path`` only names it).
    allow_non_agentic : bool
        Write into a fixed-sequence-length config too (refused otherwise).

    Returns
    -------
    InjectResult

    Raises
    ------
    ParseError
        The file does not parse, has no speculative settings, or lacks K.
    PolicyError, UnknownCurve
        No single committed cell applies, or a flag contradicts the file.
    ConflictError
        The file pins another value and ``force`` is false.

    Example
    -------
    >>> result = inject("recipe.yaml", thinking="on", check=True)   # doctest: +SKIP
    >>> result.changed
    2
    """
    path = os.fspath(path)
    if engine is not None and engine not in MODULES:
        raise UsageError(f"`engine` must be one of {', '.join(MODULES)}, got {engine!r}")
    if thinking is not None:
        thinking = normalize_thinking(thinking)
    # the lock first (recovering a crashed write), then the read: no goldenal writer
    # comes between the read and the write, and the write checks the bytes read
    with _locked([path], env_file) if text is None else contextlib.nullcontext():
        original = read_text(path) if text is None else text
        # A UTF-8 byte-order mark is not part of the YAML/JSON: parse and splice without
        # it (marks and offsets count from the first real character), write it back.
        bom = original[:1] if original.startswith(_BOM) else ""
        original = original[len(bom):]
        result = _inject_text(
            path, original, engine=engine, model=model, k=k, draft=draft, curve=curve,
            thinking=file_thinking(path, original, thinking), variant=variant,
            golden_dir=golden_dir, al=al, distribution=distribution, form=form,
            env_file=env_file, force=force, check=check, diff_only=diff_only,
            allow_non_agentic=allow_non_agentic, bom=bom)
        if path in result.pending:
            _read_back(path, result.pending[path][len(bom):])
        if text is not None:
            # the caller read the file: only the files read here are checked before writing
            result = replace(result, read={p: t for p, t in result.read.items() if p != path})
        return result if _defer else commit_results([result])[0]


def _spliced(path, text, edits):
    """``text`` with ``edits``; PolicyError where two entries need one setting to say two
    things (a variant inheriting its base's knob while drafting another K, say)."""
    try:
        return spans.apply_edits(text, edits)
    except spans.OverlappingEdits as exc:
        first, second = exc.first, exc.second
        said = [text[e.start:e.end].strip() or "(new text)" for e in (first, second)]
        raise PolicyError(
            f"one setting serves entries that need different values: {said[0]!r} would "
            f"become {first.replacement.strip()!r} for one and {second.replacement.strip()!r} "
            "for another; give each entry its own setting", path=path,
            line=text.count("\n", 0, second.start) + 1) from None


def _check_values(path, written, values, *, env_file):
    """PolicyError unless every site of the rewritten text reads the value chosen for it:
    one edit serving several sites (a ``zip_override_*`` section's variants, an inherited
    block) must not hand one of them another site's value."""
    _read_back(path, written)
    doc, sites, _ = find_sites(path, written, env_file=env_file)
    chosen = {(v.section, v.role, v.engine): v for v in values}
    for site in sites:
        want = chosen.get((site.section, site.role, site.engine))
        if want is None:
            continue
        setting = adapter(site.engine).setting(doc, site)
        if (setting.knob != adapter(site.engine).knob        # rates, or none at all
                or os.fspath(setting.path) != os.fspath(path)
                or same_number(setting.value, want.knob_value)):
            continue
        where = "" if site.section in (None, "base") else f" of {site.section}"
        raise PolicyError(f"the {site.role or 'server'} worker{where} would read "
                          f"{setting.knob}={setting.value}, not the {want.knob_value} chosen "
                          f"for it (K={want.k}); give each its own setting; nothing written",
                          path=path, line=setting.line)


def _read_back(path, written):
    """ParseError unless a rewritten YAML or JSON config still parses: a bad edit (a stray
    bracket, a key spliced into a value) is refused before it reaches the file."""
    from goldenal.core.yamldoc import compose

    if path.lower().endswith(COMMAND_SUFFIXES):
        return
    try:
        compose(written, path)
    except ParseError as exc:
        raise ParseError(f"the rewritten file would not parse ({exc.message}); nothing "
                         "written: please report it", path=path, line=exc.line) from None


def _locked(paths, env_file):
    """The locks of the real directories of ``paths`` and ``env_file`` (a missing one: none)."""
    found = {os.path.dirname(os.path.realpath(os.fspath(p)))
             for p in [*paths, *([env_file] if env_file else [])]}
    return locked_directories(sorted(d for d in found if os.path.isdir(d)))


def file_thinking(path, text, thinking=None):
    """The thinking mode to inject: the file's declaration, else ``thinking``."""
    import yaml

    from goldenal.auditing.runner import file_configs

    try:
        configs = file_configs(path, text)
    except (GoldenALError, ValueError, RecursionError, yaml.YAMLError):
        return thinking         # inject's own reader reports what does not parse
    declared = {}
    for cfg in configs:
        if not cfg.spec:
            continue
        if cfg.thinking is not None:
            declared.setdefault(cfg.thinking, cfg.thinking_source)
        elif cfg.thinking_source:
            raise PolicyError(f"cannot tell which thinking mode the file serves: "
                              f"{cfg.thinking_source}; make it declare one", path=path,
                              line=cfg.line)
    if len(declared) > 1:
        said = "; ".join(f"thinking {m}: {how}" for m, how in sorted(declared.items()))
        raise PolicyError(f"the file's launch paths declare different thinking modes ({said}); "
                          "inject one mode per file", path=path)
    if not declared:
        return thinking
    ((mode, how),) = declared.items()
    if thinking is not None and thinking != mode:
        raise PolicyError(f"--thinking {thinking} contradicts the file, which declares thinking "
                          f"{mode}: {how}", path=path)
    return mode


def _assumed(curve, thinking, notes, path):
    """The thinking mode of a curve's cell: the given one, else the one ``audit`` assumes."""
    if thinking is not None:
        return thinking
    from goldenal.auditing.check import default_mode

    mode = default_mode(curve)
    note = (f"{path}: warning: no thinking-mode signal in the file; assumed thinking_{mode} "
            f"for curve {curve.id}, as audit does (GAL305); pass --thinking to state it")
    if notes is not None and note not in notes:
        notes.append(note)
    return mode


def commit_results(results):
    """Write what planned results still hold, all or none, and mark them written."""
    texts, owner, expected = {}, {}, {}
    for result in results:
        for p, text in result.pending.items():
            key = os.path.realpath(p)
            if key in owner and texts[owner[key]] != text:
                raise UsageError(f"planned twice with different changes (also as "
                                 f"{owner[key]}); give each file once", path=p)
            owner.setdefault(key, p)
            texts[owner[key]] = text
            if p in result.read:
                expected[owner[key]] = result.read[p]
    # a file changed since it was read is refused (ConflictError): nothing is written
    write_texts_atomic(texts, expected=expected)
    return [replace(r, written=True, pending={}, read={}) if r.pending else r for r in results]


class NothingWritten(GoldenALError):
    """Some of several files were refused, so none of them was written."""

    def __init__(self, errors, results):
        self.errors = tuple(errors)       # (path, GoldenALError or OSError)
        self.results = tuple(results)     # the plans of the files that were not refused
        n = len(self.errors) + len(self.results)
        super().__init__(f"nothing written: {len(self.errors)} of {n} files refused")
        self.exit_code = max(getattr(e, "exit_code", EXIT_USAGE) for _, e in self.errors)


def inject_files(paths, **options):
    """:func:`inject` (``options``) on several files, all or nothing: :class:`NothingWritten`
    lists every refusal.

    Returns
    -------
    list of InjectResult
        One per path, in order.
    """
    results, errors = [], []
    # every directory read is locked before the first read and until the commit
    with _locked(paths, options.get("env_file")):
        for path in paths:
            try:
                results.append(inject(path, _defer=True, **options))
            except (GoldenALError, OSError) as exc:
                errors.append((os.fspath(path), exc))
        if errors:
            raise NothingWritten(errors, results)
        return commit_results(results)


_BOM = "\ufeff"


def _inject_text(path, original, *, engine, model, k, thinking, draft, curve, variant,
                 golden_dir, al, distribution, form, env_file, force, check, diff_only,
                 allow_non_agentic, bom):
    selection = {"model": model, "draft": draft, "curve": curve, "variant": variant}
    # an explicit AL is checked against the committed cell too
    registry = load_registry(golden_dir)

    if path.lower().endswith(COMMAND_SUFFIXES):
        if not allow_non_agentic:
            _refuse_non_agentic(path)
        eng = _script_adapter(path, original, engine)
        _check_distribution(distribution, eng)
        return _inject_script(eng, path, original, k=k, thinking=thinking, registry=registry,
                              selection=selection, al=al, distribution=distribution, form=form,
                              force=force, check=check, diff_only=diff_only, bom=bom)

    doc, sites, layout = find_sites(path, original, env_file=env_file)
    if not allow_non_agentic:
        _refuse_non_agentic(path, doc)
    if not sites:
        raise ParseError("no speculative settings found (no speculative-config, "
                         "sglang_config/trtllm_config speculative settings or "
                         "speculative_config mapping)", path=path)
    if engine is not None:
        other = sorted({s.engine for s in sites} - {engine})
        if other:
            raise PolicyError(f"the file configures {', '.join(other)}, not {engine}",
                              path=path, line=_site_line(sites[0]))

    groups = {}
    values, warnings = [], []
    decode_k = {site.section: _site_k(site, k, path) for site in sites if pd_decode(site, sites)}
    for site in sites:
        line = _site_line(site)
        prefill = pd_decode(site, sites, role="prefill")
        # disaggregated (SGLang): the decode worker verifies, so its K picks the cell;
        # the prefill worker carries the same value (docs/engines.md §2.4)
        site_k = decode_k[site.section] if prefill else _site_k(site, k, path)
        al_text, curve_id = _golden_cell(site, site_k, line, path=path, al=al,
                                         registry=registry, thinking=thinking,
                                         selection=selection, force=force, notes=warnings,
                                         decode_role="decode" if prefill else None)
        eng = adapter(site.engine)
        knob = eng.convert(al_text, k=site_k)
        values.append(SiteValue(site.role, site.section, site.engine, site_k, al_text, knob,
                                curve_id, line))
        if site.k is None:
            warnings.append(f"{path}:{line}: warning: the file does not state K; the value "
                            f"assumes K={site_k} (--k), which the engine must also use")
        if (eng.record.env_knob and site.env is None and not site.env_file
                and site.backend is None):
            raise ParseError(f"the {site.role or ''} worker has speculative settings but no "
                             f"{site.env_key or site.role + '_environment'} block to "
                             f"carry {eng.knob}; add one",
                             path=path, line=line)
        if eng.record.env_knob and site.env is not None:
            spans.refuse_template(original, spans.get(site.env, eng.knob), path)
        key = _group_key(site)
        prev = groups.get(key)
        if (prev is not None and prev[1] != knob and site.env_inherited
                and site.section not in (None, "base") and site.backend is not None):
            # A variant that changes K but inherits the base environment gets its own
            # <role>_environment (merged over the base one by srt-slurm).
            site.env, site.env_base = None, site.env
            key = _group_key(site)
            prev = groups.get(key)
        if prev is not None:
            if prev[1] != knob and not _zip_shared(site):
                raise PolicyError(
                    f"roles {_role_label(prev[0])} (K={prev[2]}) and {_role_label(site)} "
                    f"(K={site_k}) share one "
                    f"{'environment block' if eng.record.env_knob else 'speculative-config'} "
                    f"(anchor/alias, inherited, or written for every variant) but need "
                    f"different values {prev[1]} and {knob}; give each role its own",
                    path=path, line=line)
            continue
        groups[key] = (site, knob, site_k, al_text, curve_id)

    edits, file_edits, changes = [], {}, []
    changed = 0
    per_index = _per_index(sites, values)
    for site, knob, site_k, al_text, curve_id in groups.values():
        if _zip_shared(site):
            # a block every variant of the zip section reads: one value, or one per variant
            al_text = _zip_value(per_index, site, al_text, path)
        options = {}
        if distribution:
            _check_distribution(distribution, adapter(site.engine))
            options["rates"] = _rates(distribution, registry, curve_id, site_k, al_text,
                                      thinking)
        # --check asks whether a change is needed: a different pinned value is one
        plan = adapter(site.engine).plan(doc, site, al_text, k=site_k, force=force or check,
                                         **options)
        warnings.extend(f"{path}:{_site_line(site)}: warning: {w}" for w in plan.warnings)
        if not plan.changes:
            continue
        changed += 1
        for edit in plan.edits:
            if isinstance(edit, tuple):
                _, other_path, other_text, e = edit
                file_edits.setdefault(other_path, [other_text, []])[1].append(e)
            else:
                edits.append(edit)
        changes.extend((_site_line(site), site.role, name, old, new)
                       for name, old, new in plan.changes)

    outputs = [(path, original, _spliced(path, original, edits))]
    if edits:
        _check_values(path, outputs[0][2], values, env_file=env_file)
    for other_path, (other_text, other_edits) in file_edits.items():
        outputs.append((other_path, other_text, _spliced(other_path, other_text, other_edits)))
    return _finish(path, outputs, changed, len(groups), values, changes, warnings,
                   check=check, diff_only=diff_only, bom=bom)


def _check_distribution(distribution, eng):
    if distribution and not eng.record.knob_for("rates"):
        raise UsageError(f"--distribution is for {_takers(lambda a: a.record.knob_for('rates'))}")


def _rates(distribution, registry, curve_id, k, al_text, thinking):
    """Per-position survival rates for ``--distribution``, in the mode ``audit`` assumes."""
    if curve_id is not None and distribution != "min-variance":
        thinking = _assumed(registry.curves[curve_id], thinking, None, None)
    return survival_rates(distribution, registry, curve_id, k, al_text, thinking)


def _refuse_non_agentic(path, doc=None):
    """Refuse a fixed-sequence-length config (the audit's GAL302 test): content first, then path."""
    from goldenal.auditing.evidence import agentic_of, repository_path

    name, benchmark, names = None, None, ()
    if doc is not None and spans.is_map(doc.root):
        name, benchmark, names = scenario_facts(doc.root)
    where = repository_path(path)
    if agentic_of(where, name, benchmark, names) is False:
        said = ""
        if agentic_of(where) is not False:
            said = (f" (benchmark {benchmark['type'] or 'isl/osl'})"
                    if benchmark and agentic_of("", None, benchmark) is False
                    else f" (recipe name {name})" if name and agentic_of("", name) is False
                    else " (variant names)")
        raise PolicyError(f"a fixed-sequence-length (non-agentic) config{said} must measure "
                          "real acceptance; synthetic acceptance is for agentic configs only "
                          f"(pass --allow-non-agentic or set {ALLOW_NON_AGENTIC_ENV}=true to "
                          "write it anyway)", path=path)


def _label(path, side):
    return path if os.path.isabs(path) else f"{side}/{path}"


def _finish(path, outputs, changed, entries, values, changes, warnings, *, check, diff_only,
            bom=""):
    touched = [(p, before, after) for p, before, after in outputs if before != after]
    diff = "".join(
        "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                     after.splitlines(keepends=True),
                                     fromfile=_label(p, "a"), tofile=_label(p, "b")))
        for p, before, after in touched)
    if diff and not diff.endswith("\n"):
        diff += "\n"
    written = touched and not (check or diff_only)    # once committed (see commit_results)
    pending, read = {}, {}
    if written:
        pending = {p: (bom + after) if p == path else after for p, _, after in touched}
        read = {p: (bom + before) if p == path else before for p, before, _ in touched}
    noun = "entry" if entries == 1 else "entries"
    if not touched:
        message = f"{path}: already carries the golden AL in {entries} {noun}; nothing to change"
    else:
        verb = "changed" if written else "would change"
        summary = ", ".join(sorted({f"{v.role or v.engine} K={v.k}: {v.knob_value}"
                                    for v in values}))
        message = f"{path}: {verb} {changed} of {entries} {noun} ({summary})"
    return InjectResult(path=path, changed=changed if touched else 0, entries=entries,
                        diff=diff, written=False, values=tuple(values), changes=tuple(changes),
                        warnings=tuple(warnings), message=message,
                        files=tuple(p for p, _, _ in touched), pending=pending, read=read)


def _script_adapter(path, text, engine):
    """The adapter rewriting a launch script: ``engine``'s, else the one that claims it most."""
    launched = table.launched_engines(text)
    writers = sorted((m.ADAPTER for m in MODULES.values() if m.ADAPTER.script_name),
                     key=lambda a: a.name)
    names = [a.script_name for a in writers]
    if engine is not None and not adapter(engine).script_name:
        raise PolicyError(f"inject rewrites {', '.join(names[:-1])} and {names[-1]} launch "
                          f"scripts only, not {engine}"
                          + (f" ({_starts(launched)})" if launched else ""), path=path)
    eng = adapter(engine) if engine else max(writers,
                                             key=lambda a: a.script_claim(text, launched))
    others = [e for e in launched if not adapter(e).script_name]
    if eng.name not in launched and others:
        raise ParseError(f"{_starts(launched)}, not {', '.join(names[:-1])} or {names[-1]}: "
                         "inject rewrites the launch commands of those only (looked for "
                         f"{', '.join(a.script_sign for a in writers[:-1])} and "
                         f"{writers[-1].script_sign}); write the {others[0]} knob where the "
                         "script builds its speculative settings (goldenal emit --engine "
                         f"{others[0]} prints it)", path=path)
    return eng


def _starts(launched):
    return "the script starts " + " and ".join(adapter(e).record.launch_word for e in launched)


def _inject_script(eng, path, original, *, k, thinking, registry, selection, al,
                   distribution, form, force, check, diff_only, bom=""):
    """Launch scripts and argument files: every launch path, never the EVAL_ONLY one."""
    chosen, notes = {}, []

    def cell(site, site_k, line=None):
        """``(AL text, curve id)`` of a site's cell: the site and K name it, nothing else."""
        key = (site.draft, site.method, tuple(sorted(site.variant.items())), site_k)
        if key not in chosen:
            chosen[key] = _golden_cell(site, site_k, line, path=path, al=al, registry=registry,
                                       thinking=thinking, selection=selection, force=force,
                                       notes=notes)
        return chosen[key]

    def rates_for(site, site_k, al_text):
        return _rates(distribution, registry, cell(site, site_k)[1], site_k, al_text, thinking)

    plan, targets = eng.plan_script(path, original, lambda site, site_k, line: cell(
        site, site_k, line)[0], k=k, rates_for=rates_for if distribution else None, form=form,
        force=force or check,
        launched=table.launched_engines(original),
        known=[m.RECORD.launch_word for m in MODULES.values()])
    after = spans.apply_edits(original, plan.edits)
    values = [SiteValue(None, None, eng.name, t[1], t[2], t[3], cell(t[4], t[1])[1], t[0])
              for t in targets]
    changes = [(line, None, name, old, new) for line, name, old, new in plan.changes]
    return _finish(path, [(path, original, after)], 1 if plan.changes else 0, len(values),
                   values, changes, notes + list(plan.warnings), check=check,
                   diff_only=diff_only, bom=bom)


# -- the InferenceX runner contract -------------------------------------------

@dataclass(frozen=True)
class RunnerOutcome:
    """What :func:`inject_runner` did: a result, or a no-op and why."""

    result: "InjectResult | None"
    message: str


ALLOW_NON_AGENTIC_ENV = "GOLDENAL_ALLOW_NON_AGENTIC"


def allow_non_agentic_from(environ):
    """``--allow-non-agentic`` as an environment variable a runner can set."""
    return env_flag(environ, ALLOW_NON_AGENTIC_ENV)


def inject_runner(path, framework=None, *, environ=None, golden_dir=None, check=False,
                  diff_only=False, force=False, allow_non_agentic=False):
    """Inject as InferenceX's runner does, driven by its environment (docs/policy.md §3)."""
    environ = os.environ if environ is None else environ
    allow_non_agentic = allow_non_agentic_from(environ) or allow_non_agentic
    if env_flag(environ, "EVAL_ONLY", spellings=RUNNER_SPELLINGS):
        return RunnerOutcome(None, "EVAL_ONLY=true: keeping real verification; "
                                   f"{os.fspath(path)} left untouched")
    if not env_flag(environ, "SYNTHETIC_ACCEPTANCE", spellings=RUNNER_SPELLINGS):
        return RunnerOutcome(None, "SYNTHETIC_ACCEPTANCE is not 'true': nothing to do")
    framework = framework or environ.get("FRAMEWORK", "").strip()
    engine = FRAMEWORKS.get(framework)
    if engine is None:
        raise UsageError(f"no synthetic-acceptance injector for FRAMEWORK={framework!r} "
                         f"(known: {', '.join(sorted(FRAMEWORKS))})",
                         path=os.fspath(path))
    def var(name):
        return environ.get(name, "").strip() or None

    explicit = var("SYNTHETIC_ACCEPTANCE_LENGTH")
    per_role = {role: v for role in ROLES
                if (v := var(f"SYNTHETIC_ACCEPTANCE_LENGTH_{role.upper()}"))}
    if per_role:
        explicit = {None: explicit, **per_role}
    nst = var("NUM_SPEC_TOKENS")
    if nst is not None and not nst.isdigit():
        raise UsageError(f"NUM_SPEC_TOKENS must be an integer, got {nst!r}")
    # unset: the file's own declaration, else thinking_on (the runner's default)
    thinking = var("THINKING_MODE")
    result = inject(path, engine=engine, model=var("MODEL_PREFIX"), k=int(nst) if nst else None,
                    thinking=thinking, golden_dir=golden_dir, al=explicit, force=force,
                    check=check, diff_only=diff_only, allow_non_agentic=allow_non_agentic)
    return RunnerOutcome(result, result.message)
