"""The value types of golden data, below both the fast registry and the curve YAML reader.
Standard library only: ``goldenal lookup`` imports it."""

import os
import zlib

INDEX_NAME = "index.tsv"
MANIFEST_NAME = "manifest.yaml"
INDEX_FORMAT = "goldenal-index\t1"
THINKING_MODES = ("on", "off")
NOT_AVAILABLE = "N/A"


def head_unknown(curve):
    """True for a curve of a per-head method (EAGLE-3) that does not name its head."""
    return str(curve.method or "").strip().lower() in ("eagle3", "eagle") and not curve.draft


class Curve:
    """One committed curve: identity, provenance and its cells.

    ``cells``: thinking mode (``"on"``/``"off"``) -> ``{K: AL}``, the AL exactly as
    committed (``"2.83"``, ``"N/A"``); ``lines``: the same keys -> line in the file.
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

    def to_frame(self):
        """Tidy pandas frame: curve, model, method, head, variant, thinking, k, al, source."""
        import pandas as pd

        rows = []
        for c in self.curves.values():
            variant = ", ".join(f"{k}={v}" for k, v in sorted(c.variant.items())) or None
            for mode in THINKING_MODES:
                for k, text in sorted(c.cells.get(mode, {}).items()):
                    al = float("nan") if text == NOT_AVAILABLE else float(text)
                    rows.append((c.id, c.model, c.method, ", ".join(c.draft) or None, variant,
                                 mode, k, al, text, c.source))
        columns = ["curve", "model", "method", "head", "variant", "thinking", "k", "al",
                   "al_text", "source"]
        return pd.DataFrame(rows, columns=columns)


def file_checksums(directory, *, overlay=None):
    """CRC32 of every YAML file of a golden directory (``overlay``: name -> new text)."""
    from goldenal.core.files import read_regular

    sums = {}
    for entry in os.scandir(directory):
        if entry.name.endswith((".yaml", ".yml")) and entry.is_file():
            sums[entry.name] = zlib.crc32(read_regular(entry.path))
    for name, text in (overlay or {}).items():
        if name.endswith((".yaml", ".yml")):
            sums[name] = zlib.crc32(text.encode("utf-8"))
    return sums


def is_plain_decimal(text):
    """ASCII digits with at most one ``.``: the text is copied verbatim into engine configs."""
    whole, dot, frac = text.partition(".")
    return text.isascii() and whole.isdigit() and (not dot or frac.isdigit())


def curve_identity(model, method, draft, variant):
    """What makes two curves the same curve (one value per cell): names case-insensitive."""
    if isinstance(draft, str):
        draft = (draft,)
    return (str(model or "").lower(), str(method or "").lower(),
            tuple(str(d).lower() for d in (draft or ())),
            tuple(sorted((str(k), str(v)) for k, v in (variant or {}).items())))
