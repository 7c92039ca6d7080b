"""Measurement runs: a ``run.yaml`` manifest, or InferenceX's collector results directory.

Layouts in docs/formats.md §10.  A start-up speculative config in a log is
checked against the cell and the identity; disagreements become warnings.
"""

import os
import re
from dataclasses import dataclass, field, replace

from goldenal.core.errors import ParseError
from goldenal.readers.observations import Observations, Problem

MANIFEST = "run.yaml"
_SERVER_LOG = re.compile(r"^server_(on|off)_mtp(\d+)\.log(?:\.gz)?$")
# `vllm bench serve --result-filename speedbench_on_mtp3` writes the name as given,
# so the .json suffix is optional
_BENCH_JSON = re.compile(r"^speedbench_(on|off)_mtp(\d+)(?:[^\d].*)?$")


@dataclass(frozen=True)
class MeasurementRun:
    """One measurement run: identity (manifest keys but ``cells``, or the keyword arguments),
    ``cells`` ``(thinking, k) -> tuple of Observation``, the warnings of disagreeing
    configs, files and manifest, refused windows as ``problems``, and ``layout``
    ("manifest" or "collector")."""

    path: str
    identity: dict
    cells: dict
    warnings: tuple = ()
    problems: tuple = ()
    layout: str = "manifest"
    sources: tuple = field(default=(), repr=False)

    def __repr__(self):
        keys = ", ".join(f"{t}/K={k}" for t, k in sorted(self.cells))
        return (f"<MeasurementRun {self.identity.get('run') or os.path.basename(self.path)}: "
                f"{len(self.cells)} cell(s) [{keys}], {len(self.warnings)} warning(s)"
                f"{'' if self.complete else ', INCOMPLETE'}>")

    @property
    def complete(self):
        """False when any window of any cell was refused."""
        return not any(p.refused for p in self.problems)

    def observations(self, thinking=None, k=None):
        """The observations of the matching cells as :class:`Observations`."""
        items = tuple(o for (t, kk), obs in sorted(self.cells.items())
                      if (thinking is None or t == thinking) and (k is None or kk == k)
                      for o in obs)
        return Observations(items, self.problems, self.sources)

    def summary(self):
        """Pooled AL per ``(thinking, k)`` cell."""
        return self.observations().summary(by="run")

    def to_frame(self):
        """One row per window with the cell's ``thinking`` and ``k``."""
        return self.observations().to_frame()


def _identity_from(kwargs):
    out = {}
    for key, value in kwargs.items():
        if value is None:
            continue
        if key == "curve_id":
            key = "curve"
        if key == "draft" and isinstance(value, str):
            value = [value] if value else []
        if key == "variant" and isinstance(value, (list, tuple)):
            value = dict(v.split("=", 1) for v in value if "=" in v)
        out[key] = value
    return out


def _thinking(value, file, line, i):
    if value is True or value == "on":
        return "on"
    if value is False or value == "off":
        return "off"
    raise ParseError(f"cells[{i}]: thinking must be 'on' or 'off', got {value!r}",
                     path=file, line=line)


def load_run(path, *, k=None, **identity):
    """Load a measurement run directory.

    Parameters
    ----------
    path : str or path-like
        A directory with ``run.yaml``, or an InferenceX collector results
        directory.  A path to ``run.yaml`` itself works too.
    k : int, optional
        Keep only the cells with this K.
    **identity
        ``model``, ``draft``, ``method``, ``variant`` (dict or ``KEY=VALUE``
        list), ``curve`` (or ``curve_id``), ...: the identity a collector
        directory lacks; with a manifest they override it (with a warning when
        they disagree).

    Returns
    -------
    MeasurementRun

    Raises
    ------
    ParseError
        No such directory, an invalid manifest, or no readable cell.
    """
    from goldenal.readers.ingestion import _k_iv

    _k_iv(k)
    path = os.fspath(path)
    if os.path.basename(path) == MANIFEST and os.path.isfile(path):
        path = os.path.dirname(path) or "."
    if not os.path.isdir(path):
        raise ParseError("not a measurement run directory", path=path)
    given = normalize_identity(_identity_from(identity))
    if os.path.isfile(os.path.join(path, MANIFEST)):
        return _from_manifest(path, given, k)
    return _from_collector(path, given, k)


def is_run_dir(path):
    """True when ``path`` is a run directory: ``run.yaml``, or collector server logs."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return False
    names = os.listdir(path)
    return MANIFEST in names or any(_SERVER_LOG.match(n) for n in names)


def read_manifest(path):
    """``(file, doc, lines)`` of a run directory's ``run.yaml``, the one reader of it;
    ``lines``: the line of each top-level key and each cell, for messages."""
    import yaml

    from goldenal.core.files import read_text
    from goldenal.core.yamldoc import compose, construct

    file = os.path.join(path, MANIFEST)
    node = compose(read_text(file), file)
    doc = construct(node, file)
    if not isinstance(doc, dict):
        raise ParseError("run.yaml must be a mapping", path=file)
    lines = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise ParseError("run.yaml keys are names, got a collection", path=file,
                             line=key_node.start_mark.line + 1)
        lines[key_node.value] = key_node.start_mark.line + 1
        if key_node.value == "cells" and isinstance(value_node, yaml.SequenceNode):
            for i, item in enumerate(value_node.value):
                lines[("cells", i)] = item.start_mark.line + 1
    return file, doc, lines


def manifest_text(doc, *, header=""):
    """``run.yaml``'s text for ``doc``, the one format every writer uses (no ``&id`` aliases)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    return header + yaml.dump(doc, Dumper=Dumper, sort_keys=False, default_flow_style=None,
                              width=100)


def _read_manifest(path):
    file, doc, lines = read_manifest(path)
    cells = doc.get("cells")
    if not isinstance(cells, list) or not cells:
        raise ParseError("run.yaml needs a non-empty `cells` list of {thinking, k, files}",
                         path=file, line=lines.get("cells"))
    return file, doc, cells, lines


def normalize_identity(identity, *, path=None, lines=None):
    """Identity keys checked and normalised; a string ``simulated`` such as ``"no"`` is
    refused (it would read as true).  ParseError names ``path`` and ``lines[key]``."""
    lines = lines or {}
    out = dict(identity)

    def bad(key, message):
        raise ParseError(f"`{key}`: {message}", path=path, line=lines.get(key))

    if "draft" in out:
        draft = out["draft"]
        if draft is None:
            draft = []
        elif isinstance(draft, str):
            draft = [draft] if draft.strip() else []
        elif isinstance(draft, (list, tuple)):
            if not all(isinstance(d, str) and d.strip() for d in draft):
                bad("draft", f"expected draft head ids (strings), got {list(draft)!r}")
            draft = list(draft)
        else:
            bad("draft", f"expected a draft head id or a list of them, got {draft!r}")
        out["draft"] = draft
    if "variant" in out:
        variant = out["variant"]
        if variant is None:
            variant = {}
        if not isinstance(variant, dict):
            bad("variant", f"expected a mapping of KEY: VALUE, got {variant!r}")
        out["variant"] = dict(variant)
    if "simulated" in out:
        sim = out["simulated"]
        if sim is None:
            sim = False
        if not isinstance(sim, bool):
            bad("simulated", f"expected true or false, got {sim!r}")
        out["simulated"] = sim
    if "not_golden" in out:
        reason = out["not_golden"]
        if reason is None:
            del out["not_golden"]
        elif not isinstance(reason, str) or not reason.strip():
            bad("not_golden", "expected the reason the run is no golden material (a "
                f"non-empty string), got {reason!r}")
        else:
            out["not_golden"] = " ".join(reason.split())
    for key in ("model", "curve", "method"):
        value = out.get(key)
        if value is not None and not isinstance(value, str):
            bad(key, f"expected a string, got {value!r}")
    return out


def _from_manifest(path, given, only_k):
    file, doc, cells, lines = _read_manifest(path)
    identity = normalize_identity({key: doc[key] for key in doc if key != "cells"},
                                  path=file, lines=lines)
    warnings = []
    for key, value in given.items():
        if key in identity and identity[key] != value:
            warnings.append(f"{key}: {value!r} given, run.yaml says {identity[key]!r}; "
                            "using the given value")
        identity[key] = value
    plan = []
    seen = {}
    inconsistent = []
    for i, cell in enumerate(cells):
        line = lines.get(("cells", i))
        if not isinstance(cell, dict):
            raise ParseError(f"cells[{i}] must be a mapping", path=file, line=line)
        thinking = _thinking(cell.get("thinking"), file, line, i)
        k = cell.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ParseError(f"cells[{i}]: k must be a positive integer, got {k!r}", path=file,
                             line=line)
        if (thinking, k) in seen:
            j, first = seen[thinking, k]
            raise ParseError(f"cells[{i}]: thinking {thinking}, K={k} repeats cells[{j}] "
                             f"(line {first}); list every file of a cell in one `files` list",
                             path=file, line=line)
        seen[thinking, k] = (i, line)
        files = cell.get("files")
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
            raise ParseError(f"cells[{i}]: files must be a list of file names", path=file,
                             line=line)
        full = []
        for name in files:
            target = name if os.path.isabs(name) else os.path.join(path, name)
            if not os.path.isfile(target):
                raise ParseError(f"cells[{i}] (thinking {thinking}, K={k}): no such file "
                                 f"{name!r}", path=file, line=line)
            full.append(target)
        if only_k is None or k == only_k:
            plan.append(((thinking, k), full, ()))
            if cell.get("inconsistent"):
                # measure found the server's per-request counts and its counters at odds
                why = " ".join(str(cell["inconsistent"]).split())
                inconsistent.append(f"thinking {thinking}, K={k}: {why}")
                warnings.append(f"{file}:{line}: cell thinking {thinking}, K={k} is marked "
                                f"inconsistent ({why}): no golden value can come from it")
    if inconsistent:
        identity["inconsistent"] = inconsistent
    return _assemble(path, identity, plan, warnings, "manifest")


def _from_collector(path, given, only_k):
    logs, benches = {}, {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        m = _SERVER_LOG.match(name)
        if m:
            logs.setdefault((m.group(1), int(m.group(2))), []).append(full)
            continue
        m = _BENCH_JSON.match(name)
        if m:
            benches.setdefault((m.group(1), int(m.group(2))), []).append(full)
    keys = sorted(set(logs) | set(benches))
    if not keys:
        raise ParseError("no run.yaml and no collector files (server_{on,off}_mtp{K}.log, "
                         "speedbench_{on,off}_mtp{K}*.json)", path=path)
    from goldenal.readers import vllm_log

    identity = {"engine": {"name": vllm_log.ENGINE}, **given}
    plan = [(key, logs.get(key, []), benches.get(key, [])) for key in keys
            if only_k is None or key[1] == only_k]
    return _assemble(path, identity, plan, [], "collector")


def _assemble(path, identity, plan, warnings, layout):
    from goldenal.readers.ingestion import ingest

    cells, problems, sources = {}, [], []
    for (thinking, k), primary, fallback in plan:
        got = ingest(primary, k=k, in_order=layout == "manifest") if primary else None
        alt = ingest(fallback, k=k) if fallback else None
        chosen = got if got is not None and len(got) else alt
        if chosen is None:
            chosen = got
        if chosen is None:
            continue
        if alt is not None and chosen is got:
            # the bench JSON covers the same steps as the log: a cross-check only
            problems.extend(Problem(p.path, p.line, p.message, False) for p in alt.problems)
            _cross_check(got, alt, thinking, k, warnings)
        elif got is not None and chosen is alt:
            problems.extend(Problem(p.path, p.line, p.message, False) for p in got.problems)
        problems.extend(chosen.problems)
        sources.extend(chosen.sources)
        keep = []
        for o in chosen:
            if o.k is not None and o.k != k:
                warnings.append(f"{o.source}:{o.line or ''}: a window with K={o.k} in the "
                                f"cell thinking {thinking}, K={k}; left out of the cell")
                continue
            keep.append(replace(o, thinking=thinking, k=k))
        cells[(thinking, k)] = tuple(keep)
        for src in chosen.sources:
            warnings.extend(_config_warnings(src, thinking, k, identity))
    if not cells:
        raise ParseError("no readable cell in the run", path=path)
    return MeasurementRun(str(path), identity, cells, tuple(warnings), tuple(problems), layout,
                          tuple(sources))


def _pooled(obs):
    steps = sum(o.drafts for o in obs if not o.mean_only and o.drafts)
    acc = sum(o.accepted for o in obs if not o.mean_only and o.drafts)
    return (1 + acc / steps, steps) if steps else (None, 0)


def _cross_check(log, bench, thinking, k, warnings):
    a, _ = _pooled(log)
    b, _ = _pooled(bench)
    if a is not None and b is not None and abs(a - b) > 0.01:
        warnings.append(f"thinking {thinking}, K={k}: server log gives AL {a:.4f}, the bench "
                        f"result {b:.4f}; the log includes traffic outside the bench window")


def _basename(text):
    return str(text).rstrip("/").rsplit("/", 1)[-1].lower()


def _config_warnings(src, thinking, k, identity):
    out = []
    for start in src.facts.get("server_start", []):
        where = f"{src.path}:{start.line}"
        if start.k is not None and start.k != k:
            out.append(f"{where}: server started with {start.k_name}={start.k}, "
                       f"the cell says K={k} (thinking {thinking})")
        method = identity.get("method")
        if method and start.method and start.method.lower() != str(method).lower():
            out.append(f"{where}: server started with method {start.method!r}, the run "
                       f"says {method!r}")
        drafts = identity.get("draft") or []
        if isinstance(drafts, str):
            drafts = [drafts]
        if drafts and start.draft and _basename(start.draft) not in {
                _basename(d) for d in drafts}:
            out.append(f"{where}: server loaded draft {start.draft!r}, the run names "
                       f"{', '.join(map(str, drafts))}")
        variant = identity.get("variant") or {}
        for key, have in start.variant.items():
            want = variant.get(key) if isinstance(variant, dict) else None
            if want and have and str(want) != str(have):
                out.append(f"{where}: server ran {key}={have!r}, the run's variant says "
                           f"{want!r}")
        if start.synthetic and not identity.get("simulated"):
            out.append(f"{where}: server ran with synthetic acceptance ({start.knob}); its AL "
                       "is an input, not a measurement of the draft head")
    return out
