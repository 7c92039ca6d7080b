"""The golden-curve registry: load a golden directory and look one cell up.

A golden directory holds one YAML file per curve in the upstream InferenceX
shape (``{model: {thinking_on: {K: AL}}}``), a ``manifest.yaml`` that gives
each curve its identity, and ``index.tsv``, a compiled copy of both that
``goldenal lookup`` reads instead of parsing YAML.  The index records a CRC of
every file it was compiled from and is used only while they all match, so a
hand-edited curve can never be served from a stale index.

This module is on the ``goldenal lookup`` hot path, whose budget is about one
interpreter start-up: it imports neither YAML nor ``json`` (which pulls in
``re``); the index is tab-separated text split with ``str.split``.
"""

import os
import zlib

from goldenal.errors import RegistryError

INDEX_NAME = "index.tsv"
MANIFEST_NAME = "manifest.yaml"
INDEX_FORMAT = "goldenal-index\t1"
THINKING_MODES = ("on", "off")
NOT_AVAILABLE = "N/A"


def packaged_dir():
    """The golden directory shipped with goldenal (in the wheel or the checkout)."""
    here = os.path.dirname(os.path.abspath(__file__))
    inside = os.path.join(here, "golden_al_distribution")
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(here), "golden_al_distribution")


def default_dir():
    """``$GOLDENAL_DIR`` when set, else the packaged curves."""
    return os.environ.get("GOLDENAL_DIR") or packaged_dir()


class Curve:
    """One committed curve: identity, provenance and its cells.

    ``cells`` maps thinking mode (``"on"``/``"off"``) to ``{K: AL string}``;
    strings are exactly as committed (``"2.83"``, or ``"N/A"`` for a failed
    measurement).  ``lines`` maps the same keys to the line of each value in
    the curve file, when it was parsed from YAML.
    """

    __slots__ = ("id", "file", "model", "method", "draft", "variant", "aliases",
                 "_provenance", "cells", "lines")

    def __init__(self, id, model, cells, *, file=None, method=None, draft=(), variant=None,
                 aliases=(), provenance=None, lines=None):
        self.id = id
        self.file = file
        self.model = model
        self.method = method
        self.draft = tuple(draft)
        self.variant = dict(variant or {})
        self.aliases = tuple(aliases)
        # a dict, or its JSON text from the index, decoded on first use
        self._provenance = provenance if isinstance(provenance, str) else dict(provenance or {})
        self.cells = cells
        self.lines = lines or {}

    @property
    def provenance(self):
        """Source run, workload, sampling per thinking mode, hardware, engine."""
        if isinstance(self._provenance, str):
            import json

            self._provenance = json.loads(self._provenance)
        return self._provenance

    def __repr__(self):
        ks = sorted({k for mode in self.cells.values() for k in mode})
        modes = "/".join(f"thinking_{m}" for m in THINKING_MODES if m in self.cells)
        head = ", draft " + ", ".join(self.draft) if self.draft else ""
        span = f"{ks[0]}-{ks[-1]}" if ks else "none"
        return f"<Curve {self.id}: {self.model}, {self.method or '?'}{head}; {modes}; K={span}>"

    @property
    def source(self):
        """URL of the measurement run the curve was taken from."""
        return self.provenance.get("source_run")

    @property
    def names(self):
        """Every name a user may give for this curve's model, as written."""
        names = [self.model, *self.aliases]
        names += [n.rsplit("/", 1)[-1] for n in names if "/" in n]
        return names

    def k_values(self, thinking):
        return sorted(self.cells.get(thinking, {}))

    def to_dict(self):
        """Plain data for JSON output."""
        return {
            "id": self.id, "file": self.file, "model": self.model, "method": self.method,
            "draft": list(self.draft), "variant": self.variant, "aliases": list(self.aliases),
            "provenance": self.provenance,
            "cells": {m: {str(k): v for k, v in sorted(c.items())} for m, c in self.cells.items()},
        }

    def to_frame(self):
        """Tidy table: one row per committed cell."""
        return Registry({self.id: self}, directory=None).to_frame()


class GoldenValue:
    """One golden AL with the identity of the cell it came from.

    ``str()`` is the committed spelling (``"2.83"``); ``float()`` the number;
    ``engine_value(engine)`` the engine's knob value (``"1.83"`` for trtllm);
    ``knob_value`` that value for the engine the lookup named, if any.
    """

    __slots__ = ("text", "k", "thinking", "_curve", "golden_dir", "engine")

    def __init__(self, text, *, k, thinking, curve, golden_dir=None, engine=None):
        self.text = text
        self.k = k
        self.thinking = thinking
        self._curve = curve
        self.golden_dir = golden_dir
        self.engine = engine

    curve = property(lambda self: self._curve.id, doc="Curve id.")
    model = property(lambda self: self._curve.model)
    method = property(lambda self: self._curve.method)
    draft = property(lambda self: self._curve.draft)
    variant = property(lambda self: self._curve.variant)
    provenance = property(lambda self: self._curve.provenance)
    value = property(lambda self: float(self.text), doc="The AL as a float.")

    def __str__(self):
        return self.text

    def __float__(self):
        return float(self.text)

    def __repr__(self):
        return (f"<GoldenValue {self.text}: curve {self.curve}, thinking {self.thinking}, "
                f"K={self.k}>")

    def __eq__(self, other):
        if isinstance(other, GoldenValue):
            return (self.text, self.k, self.thinking, self.curve) == (
                other.text, other.k, other.thinking, other.curve)
        return NotImplemented

    def __hash__(self):
        return hash((self.text, self.k, self.thinking, self.curve))

    def engine_value(self, engine):
        """The value the engine's knob takes (exact decimals)."""
        from goldenal.engines import knob_value

        return knob_value(engine, self.text)

    @property
    def knob_value(self):
        """The knob value for ``engine`` (the committed AL when none was named)."""
        return self.engine_value(self.engine) if self.engine else self.text

    def to_dict(self, engine=None):
        from goldenal.engines import KNOBS

        engine = engine or self.engine
        out = {"value": self.engine_value(engine) if engine else self.text,
               "al": self.text, "engine": engine,
               "knob": KNOBS[engine][0] if engine else None,
               "curve": self.curve, "model": self.model, "method": self.method,
               "draft": list(self.draft), "variant": self.variant,
               "thinking": self.thinking, "k": self.k, "provenance": self.provenance}
        if self.golden_dir:
            out["golden_dir"] = self.golden_dir
        return out


class Registry:
    """The curves of one golden directory, by curve id."""

    __slots__ = ("curves", "directory", "warnings")

    def __init__(self, curves, *, directory, warnings=()):
        self.curves = curves
        self.directory = directory
        self.warnings = tuple(warnings)

    def __repr__(self):
        cells = sum(len(c) for curve in self.curves.values() for c in curve.cells.values())
        return f"<Registry {self.directory}: {len(self.curves)} curves, {cells} cells>"

    def __iter__(self):
        return iter(self.curves.values())

    def __len__(self):
        return len(self.curves)

    def __getitem__(self, curve_id):
        return self.curves[curve_id]

    def lookup(self, model=None, *, k, thinking, draft=None, curve=None, variant=None):
        """Select one committed cell; see :func:`goldenal.lookup`."""
        from goldenal.policy import select

        return select(self, model, k=k, thinking=thinking, draft=draft, curve=curve,
                      variant=variant)

    def to_frame(self):
        """Tidy pandas frame: curve, model, method, head, variant, thinking, k, al, source."""
        import pandas as pd

        rows = []
        for c in self.curves.values():
            variant = ", ".join(f"{k}={v}" for k, v in sorted(c.variant.items())) or None
            for mode in THINKING_MODES:
                for k, text in sorted(c.cells.get(mode, {}).items()):
                    rows.append({
                        "curve": c.id, "model": c.model, "method": c.method,
                        "head": ", ".join(c.draft) or None, "variant": variant,
                        "thinking": mode, "k": k,
                        "al": float("nan") if text == NOT_AVAILABLE else float(text),
                        "al_text": text, "source": c.source,
                    })
        columns = ["curve", "model", "method", "head", "variant", "thinking", "k", "al",
                   "al_text", "source"]
        return pd.DataFrame(rows, columns=columns)


def file_checksums(directory, *, overlay=None):
    """CRC32 of every YAML file of a golden directory, by file name.

    ``overlay`` maps file names to the text they are about to have.
    """
    sums = {}
    for entry in os.scandir(directory):
        if entry.name.endswith((".yaml", ".yml")) and entry.is_file():
            with open(entry.path, "rb") as fh:
                sums[entry.name] = zlib.crc32(fh.read())
    for name, text in (overlay or {}).items():
        if name.endswith((".yaml", ".yml")):
            sums[name] = zlib.crc32(text.encode("utf-8"))
    return sums


def _split_list(field):
    return [item for item in field.split(",") if item]


def _read_index(directory):
    """The curves of the compiled index, or None when it is absent or out of date.

    The first line is ``goldenal-index 1 CRC32`` (CRC of the rest, so a hand
    edit of the index itself is noticed too); then, tab-separated, ``file
    NAME CRC32``; ``curve ID FILE MODEL METHOD DRAFTS VARIANT ALIASES
    PROVENANCE-JSON`` (lists comma-separated, variant as ``key=value``);
    ``cell ID MODE K AL``.
    """
    try:
        with open(os.path.join(directory, INDEX_NAME), "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    head, _, body = raw.partition(b"\n")
    if head != f"{INDEX_FORMAT}\t{zlib.crc32(body)}".encode():
        return None
    try:
        lines = body.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    files, curves = {}, {}
    try:
        for line in lines:
            if not line:
                continue
            kind, *fields = line.split("\t")
            if kind == "file":
                files[fields[0]] = int(fields[1])
            elif kind == "curve":
                cid, file, model, method, drafts, variant, aliases, prov = fields
                curves[cid] = Curve(
                    cid, model, {}, file=file, method=method or None, draft=_split_list(drafts),
                    variant=dict(item.split("=", 1) for item in _split_list(variant)),
                    aliases=_split_list(aliases), provenance=prov)
            elif kind == "cell":
                cid, mode, k, value = fields
                k = int(k)
                if value != NOT_AVAILABLE and not 1 <= float(value) <= k + 1:
                    return None  # never serve an impossible value; the YAML path reports it
                curves[cid].cells.setdefault(mode, {})[k] = value
            else:
                return None
        if files != file_checksums(directory):
            return None
    except (ValueError, KeyError, OSError):
        return None
    return curves


def load_registry(path=None):
    """Load a golden directory.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The directory; default ``$GOLDENAL_DIR`` or the packaged curves.  An
        upstream InferenceX ``golden_al_distribution/`` works as it is: with no
        manifest, identity comes from file stems and header comments.

    Returns
    -------
    Registry

    Example
    -------
    >>> reg = load_registry()
    >>> reg["minimaxm3_eagle3_gqa"].cells["on"][3]
    '2.78'
    """
    directory = os.fspath(path) if path is not None else default_dir()
    if not os.path.isdir(directory):
        raise RegistryError("not a golden directory (expected a folder of curve YAML files)",
                            path=directory)
    if os.path.exists(os.path.join(directory, ".goldenal-journal.json")):
        finish_interrupted_write(directory)
    curves = _read_index(directory)
    if curves is not None:
        return Registry(curves, directory=directory)
    from goldenal.curvefile import load_directory

    return load_directory(directory)


def finish_interrupted_write(directory):
    """A write's journal is present: wait for its writer, or finish what a crash left."""
    from goldenal._files import locked_directory

    try:
        with locked_directory(directory):
            pass
    except OSError as exc:
        raise RegistryError(f"a write of this directory was interrupted and cannot be finished "
                            f"here ({exc.filename}: {exc.strerror}); run `goldenal index` with "
                            "write access to finish it", path=directory) from None


def lookup(model=None, *, k, thinking, draft=None, curve=None, variant=None, engine=None,
           golden_dir=None):
    """The committed golden AL for one cell, or a refusal that names what exists.

    Parameters
    ----------
    model : str, optional
        Model key, HF id (also a quantized checkpoint a recipe serves) or
        InferenceX model prefix, case-insensitive.  Optional with ``curve``.
    k : int
        ``num_speculative_tokens``.
    thinking : {"on", "off"}
        Thinking mode served.
    draft : str, optional
        HF id of the draft head, or a local path ending in it.
    curve : str, optional
        A curve id, e.g. ``"minimaxm3_eagle3_gqa"``.
    variant : dict or str, optional
        Sampling variant, e.g. ``{"draft_sample_method": "probabilistic"}``;
        ``"none"`` selects a curve without one.
    engine : {"vllm", "sglang", "trtllm", "atom"}, optional
        The engine whose knob will carry the value (TensorRT-LLM takes AL - 1).
    golden_dir : str, optional
        Another golden directory.

    Returns
    -------
    GoldenValue
        With ``engine``, its ``knob_value`` is that engine's spelling.

    Raises
    ------
    UnknownCurve
        No curve matches the model, draft or curve id.
    PolicyError
        Several curves match, or the cell is not committed (no interpolation,
        extrapolation or fallback to another head, variant or thinking mode).

    Example
    -------
    >>> str(lookup("minimax-m3", draft="Inferact/MiniMax-M3-EAGLE3", k=3, thinking="on"))
    '2.83'
    """
    if engine is not None:
        from goldenal.engines import ENGINES

        if engine not in ENGINES:
            raise ValueError(f"`engine` must be one of {', '.join(ENGINES)}, got {engine!r}")
    value = load_registry(golden_dir).lookup(model, k=k, thinking=thinking, draft=draft,
                                             curve=curve, variant=variant)
    value.engine = engine
    return value


def write_curve(directory, curve, *, replace_reason=None, **kwargs):
    """Write a curve file and its manifest entry; see :func:`goldenal.curvefile.write_curve`."""
    from goldenal.curvefile import write_curve as _write

    return _write(directory, curve, replace_reason=replace_reason, **kwargs)
