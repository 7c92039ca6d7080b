"""Curve files ``{model: {thinking_on: {K: AL}, thinking_off: ...}}``: read the upstream
shape with lines and the exact text committed (``3.00`` stays ``"3.00"``), write the project's."""

import contextlib
import functools
import json
import os
import re
import zlib
from dataclasses import dataclass
from datetime import date

import yaml

from goldenal.core.files import locked_directory, read_regular, write_texts_atomic
from goldenal.core.errors import (ConflictError, ParseError, RegistryError, UsageError,
                                  printable)
from goldenal.golden.curves import (INDEX_FORMAT, INDEX_NAME, MANIFEST_NAME, NOT_AVAILABLE, Curve,
                             Registry, curve_identity, file_checksums, is_plain_decimal)
from goldenal.core.yamldoc import compose, construct, line_of, node_at

_MODES = {"thinking_on": "on", "thinking_off": "off"}
_SCHEMA = os.path.join(os.path.dirname(__file__), "manifest.schema.json")
_INT = re.compile(r"[0-9]+\Z", re.ASCII)
# Curve ids and file names: the characters upstream file names use
# (``kimik3_dspark_...``, ``dsv4-pro-0813-dspark``, ``qwen3.5_mtp``), nothing else.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z", re.ASCII)
_RESERVED = {"manifest", "index", "readme"} | {"con", "prn", "aux", "nul"} | {
    f"{dev}{n}" for dev in ("com", "lpt") for n in range(10)}


def check_curve_id(curve_id, *, path=None):
    """UsageError unless the id's files stay inside the directory, clear of manifest and index."""
    text = curve_id if isinstance(curve_id, str) else repr(curve_id)
    if (not isinstance(curve_id, str) or not _NAME.match(curve_id) or ".." in curve_id
            or curve_id.lower() in _RESERVED
            or curve_id.lower().split(".")[0] in _RESERVED
            or curve_id.lower().endswith((".yaml", ".yml", ".json", ".tsv"))):
        raise UsageError(f"curve id {text!r} is not allowed: use letters, digits, '.', '_' "
                         "and '-' (starting with a letter or digit, no '..', no path, at most "
                         "128 characters), not a reserved name (manifest, index, readme) and "
                         "without a file extension", path=path)
    return curve_id


def check_file_name(name, *, path=None):
    """Refuse a curve file name other than ``<allowed id>.yaml`` (or ``.yml``)."""
    stem, dot, ext = name.rpartition(".") if isinstance(name, str) else ("", "", "")
    with contextlib.suppress(UsageError):
        if dot and ext in ("yaml", "yml") and check_curve_id(stem):
            return name
    raise RegistryError(f"curve file name {name!r} is not allowed: expected <curve id>.yaml "
                        "in the golden directory itself (letters, digits, '.', '_', '-'; "
                        "not a reserved name)", path=path)


@dataclass(slots=True)
class Problem:
    """One defect in a golden directory: ``severity`` is error, warning or unreadable."""

    severity: str
    path: str
    line: int
    message: str

    def __str__(self):
        where = f"{self.path}:{self.line}" if self.line else f"{self.path}"
        return printable(f"{where}: {self.severity}: {self.message}")

    def __repr__(self):
        return f"<Problem {self}>"


@dataclass(slots=True)
class ParsedCurve:
    """What a curve file says: model key, cells (exact strings), lines, header, problems."""

    path: str
    model: str
    cells: dict
    lines: dict
    header: list
    problems: list

    @property
    def errors(self):
        return [p for p in self.problems if p.severity == "error"]

    def check(self):
        """The parsed curve, or its first error as a ParseError."""
        for first in self.errors[:1]:
            raise ParseError(first.message, path=self.path, line=first.line)
        return self


def parse_curve_text(text, path="<string>"):
    """Parse a curve file's text, collecting every problem (ParseError only for no YAML)."""
    problems = []

    def error(line, message):
        problems.append(Problem("error", path, line, message))

    header = [ln for ln in text.splitlines() if ln.startswith("#")]
    cells, lines, model = {}, {}, None
    # a repeated thinking mode or K is reported below, each in its own words
    root = compose(text, path, duplicates="caller")
    if not isinstance(root, yaml.MappingNode) or len(root.value) != 1:
        error(line_of(root) if root is not None else 1,
              "expected one top-level key, the model (e.g. 'minimax-m3:')")
        return ParsedCurve(path, model, cells, lines, header, problems)
    key_node, body = root.value[0]
    if not isinstance(key_node, yaml.ScalarNode) or not key_node.value.strip():
        got = "an empty key" if isinstance(key_node, yaml.ScalarNode) else "a collection"
        error(line_of(key_node), f"expected the model name as the top-level key, got {got}")
        return ParsedCurve(path, model, cells, lines, header, problems)
    model = key_node.value
    if not isinstance(body, yaml.MappingNode):
        error(line_of(body), f"expected thinking_on/thinking_off mappings under {model!r}")
        return ParsedCurve(path, model, cells, lines, header, problems)
    seen_modes = {}
    for mode_node, values in body.value:
        if not isinstance(mode_node, yaml.ScalarNode):
            error(line_of(mode_node), "expected 'thinking_on' or 'thinking_off', got a collection")
            continue
        mode = _MODES.get(mode_node.value)
        if mode is None:
            error(line_of(mode_node), f"expected 'thinking_on' or 'thinking_off', "
                                    f"got {mode_node.value!r}")
            continue
        if mode in seen_modes:
            error(line_of(mode_node), f"duplicate key {mode_node.value!r} "
                                    f"(first on line {seen_modes[mode]})")
            continue
        seen_modes[mode] = line_of(mode_node)
        if not isinstance(values, yaml.MappingNode):
            error(line_of(values), f"expected a mapping of K to AL under {mode_node.value!r}")
            continue
        cells[mode], lines[mode] = {}, {}
        for k_node, al_node in values.value:
            where = line_of(k_node)
            raw_k = k_node.value if isinstance(k_node, yaml.ScalarNode) else None
            if raw_k is None or not _INT.match(raw_k.strip()) or int(raw_k) < 1:
                error(where, f"K must be a positive integer, got {raw_k!r}")
                continue
            k = int(raw_k)
            if k in lines[mode]:
                error(where, f"duplicate K={k} under {mode_node.value} "
                             f"(first on line {lines[mode][k]})")
                continue
            lines[mode][k] = where
            if not isinstance(al_node, yaml.ScalarNode):
                error(where, f"AL for K={k} must be a number, got a collection")
                continue
            al = al_node.value.strip()
            if al == NOT_AVAILABLE:
                cells[mode][k] = al
                continue
            if not is_plain_decimal(al) or al_node.style in ("'", "\""):
                error(where, f"AL for K={k} must be a plain decimal number (e.g. 2.83) or N/A, "
                             f"got {al_node.value!r}")
                continue
            if not 1.0 <= float(al) <= k + 1:
                error(where, f"AL {al} for K={k} is outside [1, {k + 1}] "
                             "(1 <= AL <= K+1: the bonus token plus at most K drafts)")
                continue
            cells[mode][k] = al
    if not seen_modes:
        error(line_of(body), f"no thinking_on/thinking_off values under {model!r}")
    return ParsedCurve(path, model, cells, lines, header, problems)


def read_curve_file(path):
    """Parse one curve file; unreadable files raise :class:`ParseError`."""
    return parse_curve_text(_read_utf8(path, "curve file", "", ParseError), os.fspath(path))


def _read_utf8(path, what, subject, error):
    try:
        return read_regular(path).decode("utf-8")
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror}", path=path) from None
    except UnicodeDecodeError as exc:
        raise error(f"{subject}not UTF-8 text (byte {exc.start})", path=path) from None


_URL = re.compile(r"https?://\S+")
# Patterns that see header comments are linear in the line: a name starts at a
# word start (the lookbehind), so a 16 KB comment is not retried from each of
# its letters; the kwargs object is cut with rfind, not a backtracking ``.*``.
_NUMBER_SETTING = re.compile(r"(?<![A-Za-z_])([A-Za-z_]+)\s*(?:[:=]\s*)?(-?\d+(?:\.\d+)?)(?![\w.])")
_KWARGS_START = re.compile(r"chat_template_kwargs\s*(?::\s*)?\{")
_SPEC_PAIR = re.compile(r"(?<![\w-])([\w-]+)\s*=\s*([\w.-]+)")
_SETTING_NAMES = {"temp": "temperature", **{name: name for name in (
    "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repetition_penalty")}}
_METHODS = {"eagle3", "eagle", "mtp", "dspark", "dflash", "ngram", "medusa"}


def _settings(text):
    out = {}
    for name, value in _NUMBER_SETTING.findall(text):
        name = _SETTING_NAMES.get(name.lower())
        if name:
            out[name] = int(value) if re.fullmatch(r"-?\d+", value) else float(value)
    return out


def parse_header(header_lines):
    """``(provenance, hints)`` from upstream's header comments or the project's."""
    prov, hints, common, modes = {}, {}, {}, {}
    for raw in header_lines:
        line = raw.lstrip("#").strip()
        low = line.lower()
        url = _URL.search(line)
        if url and "source_run" not in prov and ("run" in low or "source" in low):
            prov["source_run"] = url.group(0).rstrip(".,)")
            continue
        if "speed-bench" in low and "dataset" not in prov:
            prov["dataset"] = "SPEED-Bench Qualitative"
        if mode := re.match(r"thinking_(on|off)\b\s*:?\s*(.*)", line):
            settings = modes.setdefault(mode.group(1), {})
            rest = mode.group(2)
            kwargs = _KWARGS_START.search(rest)
            close = rest.rfind("}")
            if kwargs and close >= kwargs.end() - 1:
                body = rest[kwargs.end() - 1:close + 1]  # from its "{" to the last "}"
                try:
                    settings["chat_template_kwargs"] = json.loads(body)
                except ValueError:
                    settings["chat_template_kwargs"] = body
                rest = rest[:kwargs.start()]
            settings.update(_settings(rest))
        elif (((ds := re.search(r"\b(?:dataset|category)\s*:?\s*([\w-]+)", line)) and "|" in line)
              or low.startswith(("dataset", "workload"))):
            if ds:
                prov["category"] = ds.group(1)
            out_len = re.search(r"output_len(?:gth)?\s*[:=]?\s*(\d+)", line)
            if out_len:
                prov["output_len"] = int(out_len.group(1))
            common.update(_settings(line))
        elif low.startswith("sampling"):
            common.update(_settings(line))
        elif low.startswith(("speculative-config", "speculative config")):
            pairs = dict(_SPEC_PAIR.findall(line.partition(":")[2]))
            method = pairs.pop("method", None)
            if method:
                hints["method"] = method.lower()
            if pairs:
                hints["variant"] = pairs
            prov["speculative_config"] = dict(pairs, **({"method": method} if method else {}))
        elif measured := re.match(r"Measured on (\S+) \(([^)]*)\)", line):
            prov["measured_model"] = measured.group(1)
            parts = [p.strip() for p in measured.group(2).split(",")]
            prov["hardware"] = parts[0]
            if len(parts) > 1:
                engine, _, label = parts[1].partition(" ")
                prov["engine"] = engine
                if label.lower() in _METHODS:
                    hints.setdefault("method", label.lower())
            for part in parts[2:]:
                if part.lower().startswith("draft:"):
                    hints["draft"] = [part.split(":", 1)[1].strip()]
        elif served := re.match(r"Measured with (\S+) (\S+)(?: on ([^,]+))?, target ([^,.]+)"
                                r"(?:, draft ([^,]+?))?(?:,|\.$)", line):
            prov["engine"] = served.group(1)
            hints.setdefault("method", served.group(2).lower())
            if served.group(3):
                prov["hardware"] = served.group(3)
            prov["measured_model"] = served.group(4)
            if served.group(5):
                hints["draft"] = [d.strip() for d in served.group(5).split(",")]
        elif gen := re.match(r"(?:Auto-generated by|Collector:)\s+(\S+)(?:\s+\(([^)]+)\))?", line):
            prov["collector"] = gen.group(1)
            if gen.group(2):
                prov["workflow"] = gen.group(2)
        elif level := re.search(r"num_speculative_tokens \((\w+) level\)", line):
            hints.setdefault("method", level.group(1).lower())
    if common:
        for mode in ("on", "off"):
            modes.setdefault(mode, {})
    if modes:
        prov["sampling"] = {f"thinking_{m}": {**common, **settings}
                            for m, settings in modes.items()}
    return prov, hints


def prune_sampling(provenance, cells):
    """Drop sampling settings of thinking modes the curve has no values for."""
    sampling = provenance.get("sampling")
    if sampling:
        provenance["sampling"] = {m: s for m, s in sampling.items()
                                  if cells.get(m.replace("thinking_", ""))}
    return provenance


def curve_from_file(parsed, *, curve_id, identity=None):
    """A :class:`Curve` from a parsed file and manifest identity (or header hints)."""
    prov, hints = parse_header(parsed.header)
    identity = dict(identity or {})
    if identity:
        provenance = identity.get("provenance", {})
    else:
        provenance = prov
        stem_prefix = curve_id.split("_", 1)[0] if "_" in curve_id else None
        identity = {"method": hints.get("method"), "draft": hints.get("draft", []),
                    "variant": hints.get("variant", {}),
                    "aliases": [stem_prefix] if stem_prefix else []}
    prune_sampling(provenance, parsed.cells)
    return Curve(curve_id, identity.get("model") or parsed.model, parsed.cells,
                 file=os.path.basename(parsed.path), method=identity.get("method"),
                 draft=identity.get("draft") or (), variant=identity.get("variant"),
                 aliases=identity.get("aliases") or (), provenance=provenance,
                 lines=parsed.lines)


def read_manifest(directory, *, overlay=None):
    """The manifest's curve entries by id, or None; ``overlay``: file name -> text to come."""
    path = os.path.join(directory, MANIFEST_NAME)
    if overlay and MANIFEST_NAME in overlay:
        text = overlay[MANIFEST_NAME]
    elif not os.path.exists(path):
        return None
    else:
        text = _read_utf8(path, "manifest", "manifest is ", RegistryError)
    try:
        root = compose(text, path)
    except ParseError as exc:
        what = "is " if exc.message.startswith("not valid") else "has a "
        raise ParseError("manifest " + what + exc.message, path=path, line=exc.line) from None
    data = construct(root, path)
    if not isinstance(data, dict) or not isinstance(data.get("curves"), dict):
        raise RegistryError("manifest must be a mapping with a 'curves' mapping", path=path)
    for curve_id, entry in data["curves"].items():
        if not isinstance(entry, dict) or not entry.get("file") or not entry.get("model"):
            raise RegistryError(f"manifest entry {curve_id!r} needs at least 'file' and "
                                "'model'", path=path,
                                line=line_of(node_at(root, ["curves", curve_id])))
    _check_manifest_schema(data, root, path)
    for curve_id, entry in data["curves"].items():
        # a manifest names files inside its own directory only, under ids a writer accepts
        try:
            check_curve_id(curve_id)
        except UsageError as exc:
            raise RegistryError(str(exc), path=path) from None
        check_file_name(entry["file"], path=path)
    return data["curves"]


@functools.lru_cache(maxsize=1)
def _manifest_validator():
    import jsonschema

    with open(_SCHEMA, encoding="utf-8") as fh:
        return jsonschema.Draft202012Validator(json.load(fh))


def _check_manifest_schema(data, root, path):
    """RegistryError naming the line of the first value manifest.schema.json refuses
    (a list where a name belongs, a mapping for aliases, a format this version cannot read)."""
    from jsonschema.exceptions import best_match

    error = best_match(_manifest_validator().iter_errors(data))
    if error is not None:
        where = ".".join(str(key) for key in error.absolute_path) or "manifest"
        raise RegistryError(f"manifest {where}: {error.message}", path=path,
                            line=line_of(node_at(root, error.absolute_path)))


MANIFEST_HEADER = """\
# Identity and provenance of every golden curve in this directory.
# Written by `goldenal import` / `goldenal fit`; the curve files beside it keep the
# upstream InferenceX shape, so InferenceX tooling reads them unchanged.
# draft: HF ids of the draft head(s), [] for a native MTP head or a draft inside the checkpoint.
# variant: speculative-config settings beyond the method that change acceptance.
# aliases: HF ids (incl. quantized checkpoints recipes serve) and InferenceX model prefixes.
"""


def render_manifest(entries):
    body = yaml.safe_dump({"format": 1, "curves": entries}, sort_keys=False,
                          default_flow_style=None, allow_unicode=True, width=100)
    return MANIFEST_HEADER + body


def manifest_entry(curve):
    return {"file": curve.file or f"{curve.id}.yaml", "model": curve.model,
            "method": curve.method, "draft": list(curve.draft), "variant": dict(curve.variant),
            "aliases": list(curve.aliases), "provenance": curve.provenance}


def load_directory(directory, *, collect=None, overlay=None):
    """Every curve file (no index); ``collect`` gathers problems instead of raising."""
    overlay = overlay or {}
    try:
        names = sorted({n for n in [*os.listdir(directory), *overlay]
                        if n.endswith((".yaml", ".yml")) and n != MANIFEST_NAME})
    except OSError as exc:
        raise RegistryError(f"cannot read golden directory: {exc.strerror}",
                            path=directory) from None

    def report(problem):
        if collect is None:
            raise RegistryError(problem.message, path=problem.path)
        collect.append(problem)

    manifest = read_manifest(directory, overlay=overlay)
    by_file = {}
    for curve_id, entry in (manifest or {}).items():
        by_file[entry["file"]] = (curve_id, entry)
        if entry["file"] not in names:
            report(Problem("error", os.path.join(directory, MANIFEST_NAME), None,
                           f"manifest entry {curve_id!r} names missing file {entry['file']!r}"))
    curves = {}
    for name in names:
        path = os.path.join(directory, name)
        try:
            parsed = (parse_curve_text(overlay[name], path) if name in overlay
                      else read_curve_file(path))
        except ParseError as exc:
            if collect is None:
                raise
            collect.append(Problem("unreadable", exc.path, exc.line, exc.message))
            continue
        if collect is None:
            parsed.check()
        else:
            collect.extend(parsed.problems)
            if parsed.errors:
                continue
        if manifest is not None and name not in by_file:
            report(Problem("error", path, None, f"curve file is not in {MANIFEST_NAME}"))
            continue
        curve_id, entry = by_file.get(name, (os.path.splitext(name)[0], None))
        if entry is not None and entry["model"] != parsed.model and collect is not None:
            collect.append(Problem("error", path, 1, f"model key {parsed.model!r} differs from "
                                                     f"manifest entry {entry['model']!r}"))
        curves[curve_id] = curve_from_file(parsed, curve_id=curve_id, identity=entry)
    return Registry(curves, directory=directory)


def render_curve(curve):
    """The project's curve file: a header in its own words, then the upstream YAML shape."""
    prov = curve.provenance
    out = [f"# Golden acceptance length (AL) by thinking mode and K: curve {curve.id}."]
    if prov.get("source_run"):
        out.append(f"# Source run: {prov['source_run']}")
    workload = [prov.get("dataset", "dataset unknown"),
                prov.get("category") and f"category {prov['category']}",
                prov.get("output_len") and f"output_len {prov['output_len']}"]
    out.append("# Workload: " + ", ".join(w for w in workload if w) + ".")
    for mode, settings in prov.get("sampling", {}).items():
        shown = ", ".join(f"{k} {v}" for k, v in settings.items() if k != "chat_template_kwargs")
        line = f"# {mode}: " + (shown or "engine defaults")
        if "chat_template_kwargs" in settings:
            line += "; chat_template_kwargs " + json.dumps(settings["chat_template_kwargs"])
        out.append(line)
    served = [f"# Measured with {prov.get('engine') or 'engine unknown'} "
              f"{curve.method or 'method unknown'}"
              + (f" on {prov['hardware']}" if prov.get("hardware") else ""),
              f"target {prov.get('measured_model') or curve.model}",
              curve.draft and "draft " + ", ".join(curve.draft),
              *(f"{k}={v}" for k, v in curve.variant.items())]
    out.append(", ".join(s for s in served if s) + ".")
    if prov.get("collector"):
        wf = f" ({prov['workflow']})" if prov.get("workflow") else ""
        out.append(f"# Collector: {prov['collector']}{wf}.")
    if prov.get("date") or prov.get("run"):
        run = f" (run {prov['run']})" if prov.get("run") else ""
        out.append(f"# Run date: {prov.get('date', 'unknown')}{run}.")
    if prov.get("simulated"):
        out.append("# SIMULATED: fitted from simulator output, not from a real server.")
    if prov.get("not_golden"):
        out.append("# NOT GOLDEN: " + " ".join(str(prov["not_golden"]).split()))
    out.append("# Keys: num_speculative_tokens (K); values: mean AL over all verification "
               "steps (bonus token included),")
    out.append("# two decimals; N/A marks a failed measurement. Full identity: manifest.yaml.")
    out.append(f"{curve.model}:")
    for mode in ("on", "off"):
        cells = curve.cells.get(mode)
        if cells:
            out.append(f"  thinking_{mode}:")
            out.extend(f"    {k}: {v}" for k, v in sorted(cells.items()))
    return "\n".join(out) + "\n"


def render_index(directory, curves, *, overlay=None):
    """The compiled lookup index (format: docs/architecture.md, ``goldenal lookup``)."""
    def field(text):
        text = str(text or "")
        if any(ch in text for ch in "\t\n,"):
            raise RegistryError(f"{text!r} cannot be indexed (tab, newline or comma)",
                                path=directory)
        return text

    out = [f"file\t{name}\t{crc}"
           for name, crc in sorted(file_checksums(directory, overlay=overlay).items())]
    for c in curves.values():
        variant = ",".join(f"{field(k)}={field(v)}" for k, v in sorted(c.variant.items()))
        prov = json.dumps(c.provenance, sort_keys=True, ensure_ascii=True)
        out.append("\t".join(["curve", field(c.id), field(c.file), field(c.model),
                              field(c.method), ",".join(map(field, c.draft)), variant,
                              ",".join(map(field, c.aliases)), prov]))
        for mode in ("on", "off"):
            for k, value in sorted(c.cells.get(mode, {}).items()):
                out.append(f"cell\t{c.id}\t{mode}\t{k}\t{field(value)}")
    body = "\n".join(out) + "\n"
    return f"{INDEX_FORMAT}\t{zlib.crc32(body.encode())}\n{body}"


def write_index(directory):
    """Recompile ``index.tsv`` from the curve files and manifest, validated, under the lock."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise RegistryError("not a directory", path=directory)
    with locked_directory(directory):
        files = {}
        registry = _stage_index(directory, files)
        _commit(directory, files)
    return registry


def _stage_index(directory, files):
    """Validate the directory as ``files`` (name -> new text) will make it; add its index."""
    registry = load_directory(directory, overlay=files)
    if not registry.curves:
        raise RegistryError("no curve files to index (expected *.yaml curves)", path=directory)
    files[INDEX_NAME] = render_index(directory, registry.curves, overlay=files)
    return registry


def _commit(directory, files):
    """All of ``files`` or none, never through a link (a golden file is itself)."""
    write_texts_atomic({os.path.join(directory, name): text for name, text in files.items()},
                       links=False)


def _changed_cells(old, new):
    """Committed (non-N/A) cells of ``old`` that ``new`` changes or drops."""
    changes = {}
    for mode, cells in old.items():
        for k, value in cells.items():
            if value == NOT_AVAILABLE:
                continue
            after = new.get(mode, {}).get(k)
            if after != value:
                changes[f"thinking_{mode} K={k}"] = f"{value} -> {after or 'removed'}"
    return changes


def write_curve(directory, curve, *, replace_reason=None, extra_files=None, check=None):
    """Write a curve, its manifest entry, index and ``extra_files`` all or nothing.

    A changed committed cell is a ConflictError unless ``replace_reason`` is given."""
    directory = os.fspath(directory)
    check_curve_id(curve.id)
    if curve.file is not None:
        check_file_name(curve.file)
    for name in extra_files or {}:
        if not name.startswith(curve.id + ".") or ".." in name or os.sep in name:
            raise UsageError(f"{name!r} is not a file of curve {curve.id}")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, directory) from None
    with locked_directory(directory):
        files = {}
        path = _stage_curve(directory, files, curve, replace_reason)
        files.update(extra_files or {})
        _stage_index(directory, files)
        if check is not None:
            check(directory, dict(files))
        _commit(directory, files)
    return path


def _stage_curve(directory, files, curve, replace_reason):
    manifest = read_manifest(directory) or {}
    identity = curve_identity(curve.model, curve.method, curve.draft, curve.variant)
    for other_id, entry in manifest.items():
        other = curve_identity(entry["model"], entry.get("method"), entry.get("draft") or (),
                               entry.get("variant") or {})
        if other_id != curve.id and other == identity:
            raise ConflictError(f"curve {other_id} already holds this identity (model "
                                f"{curve.model}, method {curve.method}, draft "
                                f"{', '.join(curve.draft) or 'none'}, variant "
                                f"{curve.variant or 'none'}); one identity has one curve: "
                                f"write to curve id {other_id} instead",
                                path=os.path.join(directory, MANIFEST_NAME))
    file_name = (manifest.get(curve.id) or {}).get("file") or curve.file or f"{curve.id}.yaml"
    check_file_name(file_name, path=os.path.join(directory, MANIFEST_NAME))
    path = os.path.join(directory, file_name)
    provenance = dict(curve.provenance)
    if os.path.lexists(path):
        if not os.path.isfile(path) or os.path.islink(path):
            raise RegistryError("not a regular file; nothing written", path=path)
        old = read_curve_file(path)
        changes = _changed_cells(old.cells, curve.cells)
        if changes and not replace_reason:
            listed = "; ".join(f"{cell}: {chg}" for cell, chg in changes.items())
            raise ConflictError(f"would overwrite committed golden values ({listed}); "
                                "pass a reason to replace them (--replace REASON)", path=path)
        history = list((manifest.get(curve.id) or {}).get("provenance", {})
                       .get("replacements", []))
        if changes:
            history.append({"date": date.today().isoformat(), "reason": replace_reason,
                            "cells": changes})
        if history:
            provenance["replacements"] = history
    curve = Curve(curve.id, curve.model, curve.cells, file=file_name, method=curve.method,
                  draft=curve.draft, variant=curve.variant, aliases=curve.aliases,
                  provenance=provenance)
    files[file_name] = render_curve(curve)
    manifest[curve.id] = manifest_entry(curve)
    files[MANIFEST_NAME] = render_manifest(manifest)
    return path
