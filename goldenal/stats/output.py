"""From measurement runs to a committed curve: load, merge, fit, write (all files or none)."""

from __future__ import annotations

import json
import os
import re
from types import SimpleNamespace

from goldenal.core.errors import ConflictError, GoldenALError, ParseError, PolicyError

# A load warning where the server's start-up config contradicts the identity
# ("path:line: server started with ..."; see goldenal.readers.run).
_SERVER_CONFLICT = re.compile(r"(.+?):(\d+): (server (?:started|loaded|ran) .*)\Z")

# Identity keys that must agree between runs fitted into one curve.
_IDENTITY_KEYS = ("model", "curve", "method", "draft", "variant")


class RunWarning(UserWarning):
    """A disagreement found while loading a run (see ``MeasurementRun.warnings``)."""


def draft_tuple(value):
    """A draft identity as a tuple of head ids (a single string is one head)."""
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _norm(key, value):
    if key == "draft":
        return draft_tuple(value)
    if key == "variant":
        return tuple(sorted((value or {}).items()))
    return value


def merge_runs(runs):
    """Merge runs of one curve (identities agree; a cell measured twice pools)."""
    runs = list(runs)
    first = runs[0]
    identity = dict(first.identity)
    cells = {key: tuple(obs) for key, obs in first.cells.items()}
    warnings = list(getattr(first, "warnings", ()))
    not_golden_path = getattr(first, "path", None)
    for run in runs[1:]:
        for key in _IDENTITY_KEYS:
            a, b = identity.get(key), run.identity.get(key)
            if a is not None and b is not None and _norm(key, a) != _norm(key, b):
                raise ParseError(f"identity conflict: {key} is {a!r} in {first.path} but "
                                 f"{b!r} here", path=getattr(run, "path", None))
            if a is None and b is not None:
                identity[key] = b
        for key, obs in run.cells.items():
            cells[key] = cells.get(key, ()) + tuple(obs)
        warnings.extend(getattr(run, "warnings", ()))
        if run.identity.get("simulated"):
            identity["simulated"] = True
        if run.identity.get("inconsistent"):
            identity["inconsistent"] = [*identity.get("inconsistent", ()),
                                        *run.identity["inconsistent"]]
        if run.identity.get("not_golden") and not identity.get("not_golden"):
            identity["not_golden"] = run.identity["not_golden"]
            not_golden_path = getattr(run, "path", None)
    return SimpleNamespace(path=getattr(first, "path", None), identity=identity, cells=cells,
                           warnings=tuple(warnings), not_golden_path=not_golden_path)


def load_runs(paths, *, identity=None):
    """Load run directories of one curve and merge them."""
    from goldenal.stats.curve import check_complete
    from goldenal.readers.run import load_run

    identity = {k: v for k, v in (identity or {}).items() if v not in (None, [], {})}
    runs = [load_run(os.fspath(p), **identity) for p in paths]

    for run in runs:
        check_complete(run)
        for warning in getattr(run, "warnings", ()):
            conflict = _SERVER_CONFLICT.match(warning)
            if conflict:
                # the server's own start-up config contradicts the run's identity
                raise ParseError(conflict.group(3) + "; correct run.yaml (or the flags)",
                                 path=conflict.group(1), line=int(conflict.group(2)))
    return merge_runs(runs)


def load_run_for_fit(path, identity=None, *, allow_simulated=False):
    """One run directory loaded and refused exactly as ``goldenal fit`` does."""
    import warnings

    merged = load_runs([path], identity=identity)
    if not allow_simulated:
        refuse_simulated(merged)
    for message in merged.warnings:
        # what `fit` prints about the run, for callers that fit it on the fly
        warnings.warn(message, RunWarning, stacklevel=2)
    return merged


def fit_runs(paths, *, identity=None, **fit_kwargs):
    """Load run directories and fit them as one curve (see :func:`load_runs`)."""
    from goldenal.stats.curve import fit

    return fit(load_runs(paths, identity=identity), **fit_kwargs)


def refuse_simulated(run):
    """Raise PolicyError for a simulated run (never a source of committed curves)."""
    if run.identity.get("simulated"):
        raise PolicyError("the run is simulated (simulated: true): simulated runs validate the "
                          "statistics and are never committed; use --allow-simulated for a "
                          "scratch directory", path=getattr(run, "path", None))


def refuse_not_golden(run):
    """Raise PolicyError for a run marked ``not_golden`` (its values are no golden curve)."""
    reason = run.identity.get("not_golden")
    if reason:
        path = (getattr(run, "not_golden_path", None) or getattr(run, "path", None)
                or run.identity.get("run"))
        raise PolicyError(f"the run is not golden material (not_golden: {reason}); "
                          "use --allow-not-golden to write it to a scratch directory",
                          path=path)


def refuse_inconsistent(run):
    """Raise PolicyError for a run with cells ``measure`` marked ``inconsistent``."""
    cells = run.identity.get("inconsistent")
    if cells:
        raise PolicyError(f"{len(cells)} cell(s) marked inconsistent in run.yaml (the server's "
                          f"per-request counts and its counters disagree): {cells[0]}; "
                          "measure the cell again (measure --replace)",
                          path=getattr(run, "path", None) or run.identity.get("run"))


def provenance_of(identity):
    prov = {}
    if identity.get("source"):
        prov["source_run"] = identity["source"]
    dataset = identity.get("dataset") or {}
    if isinstance(dataset, dict):
        for key, name in (("name", "dataset"), ("category", "category"),
                          ("output_len", "output_len")):
            if dataset.get(key):
                prov[name] = dataset[key]
    elif dataset:
        prov["dataset"] = str(dataset)
    if identity.get("sampling"):
        prov["sampling"] = identity["sampling"]
    engine = identity.get("engine") or {}
    if isinstance(engine, dict):
        name = engine.get("name")
        if name:
            prov["engine"] = f"{name} {engine['version']}" if engine.get("version") else name
        if engine.get("version"):
            prov["engine_version"] = str(engine["version"])
    elif engine:
        prov["engine"] = str(engine)
    for key in ("hardware", "date", "run"):
        if identity.get(key):
            prov[key] = str(identity[key])
    if identity.get("simulated"):
        prov["simulated"] = True
    if identity.get("not_golden"):
        prov["not_golden"] = identity["not_golden"]
    return prov


def curve_from_fit(curvefit, *, curve_id=None):
    """The registry :class:`~goldenal.golden.registry.Curve` of a fit (committed values)."""
    from goldenal.golden.registry import Curve

    ident = dict(curvefit.identity)
    if curve_id:
        ident["curve"] = curve_id
    if not ident.get("curve"):
        raise ParseError("no curve id: give --curve-id (curve=...) or `curve:` in run.yaml",
                         path=ident.get("path"))
    if not ident.get("model"):
        raise ParseError("no model key: give --model (model=...) or `model:` in run.yaml")
    prov = provenance_of(ident)
    prov["fit"] = {"confidence_level": curvefit.confidence_level,
                   "distribution": f"{ident['curve']}.distribution.json"}
    return Curve(ident["curve"], ident["model"], curvefit.values(), method=ident.get("method"),
                 draft=draft_tuple(ident.get("draft")), variant=ident.get("variant") or {},
                 aliases=tuple(ident.get("aliases") or ()), provenance=prov)


def _same_identity(directory, curve_id, identity):
    """The id of another curve of ``directory`` with the identity of ``identity``."""
    from goldenal.golden.curvefile import load_directory
    from goldenal.golden.curves import curve_identity

    if not identity or not os.path.isdir(directory):
        return None
    try:
        curves = load_directory(directory, collect=[])
    except (GoldenALError, OSError):  # an unreadable directory is refused by the write itself
        return None
    want = curve_identity(identity.get("model"), identity.get("method"), identity.get("draft"),
                          identity.get("variant"))
    for curve in curves:
        if curve.id != curve_id and curve_identity(curve.model, curve.method, curve.draft,
                                                   curve.variant) == want:
            return curve.id
    return None


def check_writable(directory, curve_id, *, replace_reason=None, identity=None):
    """Refuse a directory that already holds ``curve_id`` (or its identity) without a reason."""
    from goldenal.golden.curvefile import check_curve_id, read_manifest

    check_curve_id(curve_id)
    directory = os.fspath(directory)
    manifest = (read_manifest(directory) if os.path.isdir(directory) else None) or {}
    other = _same_identity(directory, curve_id, identity)
    if other is not None:
        other_file = (manifest.get(other) or {}).get("file") or f"{other}.yaml"
        if not replace_reason:
            raise ConflictError(f"the output directory already holds curve {other} with the "
                                f"same model, method, draft and variant as {curve_id}; pass "
                                f"--replace REASON to replace {other} (the reason is "
                                "recorded), or give the new curve another variant",
                                path=os.path.join(directory, other_file))
        return other
    file_name = (manifest.get(curve_id) or {}).get("file") or f"{curve_id}.yaml"
    curve_path = os.path.join(directory, file_name)
    if (os.path.exists(curve_path) or curve_id in manifest) and not replace_reason:
        raise ConflictError(f"the output directory already holds curve {curve_id}; pass "
                            "--replace REASON to replace it (the reason is recorded)",
                            path=curve_path)
    return curve_id


def mean_only_cells(curvefit):
    """The ``(thinking, k)`` keys of cells that rest on printed means only."""
    return [key for key, cell in curvefit.cells.items() if cell.mean_only]


def refuse_mean_only(curvefit):
    """Raise PolicyError when a golden value would come from printed means only."""
    keys = mean_only_cells(curvefit)
    if not keys:
        return
    cells = ", ".join(f"thinking {t} K={k}" for t, k in keys)
    first = curvefit.cells[keys[0]]
    raise PolicyError(f"{len(keys)} cell(s) rest on printed means only, without step counts "
                      f"({cells}): their average is not a pooled AL and has no interval; "
                      "measure with counts (metrics, per-request data), or pass "
                      "--allow-mean-only to commit them anyway",
                      path=first.sources[0] if first.sources else None)


def write_fit(curvefit, directory, *, replace_reason=None, allow_simulated=False,
              allow_mean_only=False, allow_not_golden=False):
    """Write a fitted curve: ``<id>.yaml`` + manifest entry + distribution file."""
    from goldenal.golden.curvefile import write_curve

    directory = os.fspath(directory)
    for allowed, refuse in ((allow_simulated, refuse_simulated),
                            (allow_not_golden, refuse_not_golden),
                            (allow_mean_only, refuse_mean_only), (False, refuse_inconsistent)):
        if not allowed:
            refuse(curvefit)
    curve = curve_from_fit(curvefit)
    target = check_writable(directory, curve.id, replace_reason=replace_reason,
                            identity=curvefit.identity)
    if target != curve.id:
        # the committed curve of this identity is replaced under its own id
        curve = curve_from_fit(curvefit, curve_id=target)
    dist_name = f"{curve.id}.distribution.json"
    doc = curvefit.to_dict()
    if replace_reason:
        doc["replace_reason"] = replace_reason
    text = json.dumps(doc, indent=1, allow_nan=False, default=str) + "\n"
    # curve, manifest, distribution and index in one transaction
    written = write_curve(directory, curve, replace_reason=replace_reason,
                          extra_files={dist_name: text})
    return written, os.path.join(directory, dist_name)
