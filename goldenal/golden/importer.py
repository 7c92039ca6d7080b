"""Import curves published in the upstream InferenceX format into a golden directory."""

import os

from goldenal.golden.curvefile import (check_curve_id, curve_from_file, parse_header, prune_sampling,
                                read_curve_file, read_manifest, write_curve)
from goldenal.golden.curves import head_unknown
from goldenal.core.errors import UsageError
from goldenal.golden.policy import normalize_variant
from goldenal.golden.registry import Curve, default_dir_source
from goldenal.golden.validation import refuse_invalid


def import_target(out_dir=None):
    """``out_dir``, else the default golden directory, never the packaged curves."""
    if out_dir is not None:
        return os.fspath(out_dir)
    directory, how = default_dir_source()
    if how == "packaged curves":
        raise UsageError(f"no golden directory to import into: give --golden-dir DIR (or set "
                         f"$GOLDENAL_DIR); the curves installed with goldenal ({directory}) "
                         "are never written by default")
    return directory


def import_curve(path, out_dir=None, *, curve_id=None, method=None, draft=None, variant=None,
                 aliases=(), replace_reason=None):
    """Import one upstream curve file (values and header provenance), its model key unchanged.

    Parameters
    ----------
    path : str
        Curve file in the upstream shape.
    out_dir : str, optional
        Golden directory to write to; default :func:`import_target`.
    curve_id : str, optional
        Default: the file stem.
    method, draft, variant, aliases
        Identity the header lacks (default: the manifest entry of the same id):
        method, draft head HF id(s), variant (``KEY=VALUE`` strings or a dict), names.
    replace_reason : str, optional
        Required to change a committed value; recorded in the manifest.

    Returns
    -------
    Curve
        The curve as written.

    Raises
    ------
    UsageError
        The method is per draft head (``eagle3``) and no head is known.
    """
    stem = curve_id is None     # an id from the file's name: the message names the file
    if stem:
        curve_id = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    check_curve_id(curve_id, path=path if stem else None)
    parsed = read_curve_file(path).check()
    out_dir = import_target(out_dir)
    provenance, hints = parse_header(parsed.header)
    existing = (read_manifest(out_dir) or {}).get(curve_id, {}) if os.path.isdir(out_dir) else {}
    base = curve_from_file(parsed, curve_id=curve_id)

    def pick(given, key, fallback):
        return given if given is not None else existing.get(key, fallback)

    if isinstance(draft, str):
        draft = [draft]
    variant = normalize_variant(variant, by_value=False)
    merged_aliases = list(existing.get("aliases", []))
    for name in [*base.aliases, *aliases]:
        if name not in merged_aliases and name != parsed.model:
            merged_aliases.append(name)
    curve = Curve(curve_id, parsed.model, parsed.cells,
                  file=existing.get("file") or f"{curve_id}.yaml",
                  method=pick(method, "method", hints.get("method")),
                  draft=pick(draft, "draft", hints.get("draft", [])),
                  variant=pick(variant, "variant", hints.get("variant", {})),
                  aliases=merged_aliases, provenance=prune_sampling(provenance, parsed.cells))
    if head_unknown(curve):
        # an EAGLE-3 curve belongs to one trained head; without it the audit cannot tell
        # which served head the values are for (docs/policy.md §2, rule 2)
        raise UsageError(f"curve {curve_id} was measured with method {curve.method}, whose "
                         "curves belong to one draft head, and neither the file's header nor "
                         "the manifest names it: pass --draft HF_ID", path=path)
    write_curve(out_dir, curve, replace_reason=replace_reason, check=refuse_invalid)
    return curve

