"""Load a golden directory fast: ``index.tsv`` (the compiled curve files and manifest) while
each source file's CRC matches, else the YAML.  On the ``lookup`` hot path: no YAML, no json."""

import os
import zlib

from goldenal.golden.curves import (  # noqa: F401 (re-exported: the value types)
    INDEX_FORMAT, INDEX_NAME, MANIFEST_NAME, NOT_AVAILABLE, THINKING_MODES, Curve, Registry,
    file_checksums)
from goldenal.core.errors import RegistryError


def packaged_dir():
    """The golden directory shipped with goldenal (in the wheel or the checkout)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # goldenal/
    inside = os.path.join(here, "golden_al_distribution")
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(here), "golden_al_distribution")


GOLDEN_DIR_NAME = "golden_al_distribution"


def discover_dir(start=None):
    """The nearest ``golden_al_distribution/`` in ``start`` (default the cwd) or its parents."""
    from goldenal.core.files import nearest_holding

    found = nearest_holding(start or os.getcwd(), GOLDEN_DIR_NAME, os.path.isdir)
    return found and os.path.join(found, GOLDEN_DIR_NAME)


def default_dir_source():
    """``(directory, how)``: ``$GOLDENAL_DIR``, else :func:`discover_dir`, else packaged."""
    env = os.environ.get("GOLDENAL_DIR")
    if env:
        return env, "$GOLDENAL_DIR"
    found = discover_dir()
    if found:
        return found, "nearest golden_al_distribution/ from the current directory"
    return packaged_dir(), "packaged curves"


def default_dir():
    return default_dir_source()[0]


def _split_list(field):
    return [item for item in field.split(",") if item]


def _read_index(directory):
    """The curves of the compiled index (docs/architecture.md), or None if absent or stale."""
    from goldenal.core.files import read_regular

    try:
        raw = read_regular(os.path.join(directory, INDEX_NAME))
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
        Default :func:`default_dir_source`.  Without a manifest (upstream InferenceX), the
        identity comes from the packaged curves, else from file stems and headers.

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
    from goldenal.golden.curvefile import load_directory

    registry = load_directory(directory)
    if not os.path.exists(os.path.join(directory, MANIFEST_NAME)):
        registry = _packaged_identity(registry)
    return registry


def _packaged_identity(registry):
    """An upstream directory's identity, from the packaged entry of the same id and model."""
    from goldenal.golden.curvefile import read_manifest
    from goldenal.golden.curves import head_unknown

    packaged = packaged_dir()
    if os.path.realpath(packaged) == os.path.realpath(registry.directory):
        return registry
    try:
        known = read_manifest(packaged) or {}
    except (RegistryError, OSError):
        known = {}
    curves = {}
    for cid, c in registry.curves.items():
        entry = known.get(cid)
        if entry is not None and entry.get("model") == c.model:
            aliases = list(entry.get("aliases") or ())
            aliases += [a for a in c.aliases if a not in aliases]
            c = Curve(cid, c.model, c.cells, file=c.file, method=entry.get("method"),
                      draft=entry.get("draft") or (), variant=entry.get("variant"),
                      aliases=aliases, provenance=c.provenance, lines=c.lines)
        curves[cid] = c
    unknown = sorted(cid for cid, c in curves.items() if head_unknown(c))
    warnings = list(registry.warnings)
    if unknown:
        warnings.append(
            f"{registry.directory} has no {MANIFEST_NAME}, and curves {', '.join(unknown)} "
            "do not name their draft heads: a config serving one of those models with a "
            "draft head is checked against every such curve of its model, and is wrong only "
            "when it matches none (`goldenal import --draft` names a head)")
    return Registry(curves, directory=registry.directory, warnings=warnings)


def finish_interrupted_write(directory):
    """A write's journal is present: wait for its writer, or finish what a crash left."""
    from goldenal.core.files import locked_directory

    try:
        with locked_directory(directory):
            pass
    except OSError as exc:
        raise RegistryError(f"a write of this directory was interrupted and cannot be finished "
                            f"here ({exc.filename}: {exc.strerror}); run `goldenal index` with "
                            "write access to finish it", path=directory) from None

