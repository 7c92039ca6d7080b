"""``speculation_profile.json`` (schema "1.0") as measurement observations.

The format is described in :mod:`goldenal.apply.export`, which writes it.
"""

import json
import os
import re

from goldenal.core.errors import ParseError
from goldenal.core.observation import Observation

SCHEMA_VERSION = "1.0"
_PROFILE_KEYS = re.compile(r'"schema_version"\s*:')


def sniff(head):
    """A ``speculation_profile.json``: a JSON object with the schema's two marker keys."""
    return head.lstrip().startswith("{") and bool(_PROFILE_KEYS.search(head)) \
        and '"marginal_accept_rates"' in head


def read(path, ctx):
    """Observations of a speculation profile (:func:`read_profile`), refusals into ``ctx``."""
    try:
        observations = read_profile(path)
    except ParseError as exc:
        return ctx.refuse(exc.line, exc.message)
    yield from observations


def _int_key(key, path):
    try:
        return int(key)
    except (TypeError, ValueError):
        raise ParseError(f"acceptance_length_histogram key {key!r} is not an integer",
                         path=path) from None


def read_profile(path):
    """A ``speculation_profile.json`` as observations (counted from its histogram, else
    mean-only; ``accept_length_by_k``: mean-only of their K), ParseError otherwise."""
    path = os.fspath(path)
    from goldenal.core.files import read_text

    try:
        doc = json.loads(read_text(path))
    except ValueError as exc:
        raise ParseError(f"not JSON: {exc}", path=path) from None
    if not isinstance(doc, dict):
        raise ParseError("a speculation profile is a JSON object", path=path)
    version = doc.get("schema_version")
    if str(version) != SCHEMA_VERSION:
        raise ParseError(f"schema_version {version!r} is not supported (expected "
                         f"{SCHEMA_VERSION!r})", path=path)
    if doc.get("measured") is False:
        raise ParseError("placeholder profile (measured: false) holds no measurement",
                         path=path)
    k = doc.get("num_speculative_tokens")
    if not isinstance(k, int) or k < 1:
        raise ParseError("num_speculative_tokens must be a positive integer", path=path)
    for key in ("marginal_accept_rates", "conditional_accept_rates"):
        vec = doc.get(key)
        if vec is not None and len(vec) != k:
            raise ParseError(f"{key} has {len(vec)} entries but num_speculative_tokens is {k}",
                             path=path)
    cond = doc.get("measurement_conditions") or {}
    thinking = cond.get("thinking") if cond.get("thinking") in ("on", "off") else None
    engine = str(cond.get("engine") or "unknown")
    mean = doc.get("mean_accept_length")
    out = []
    hist = doc.get("acceptance_length_histogram")
    if hist:
        h = {_int_key(length, path): int(n) for length, n in hist.items()}
        if min(h) < 1 or max(h) > k + 1:
            raise ParseError(f"histogram lengths must lie in 1..K+1 = 1..{k + 1}", path=path)
        steps = sum(h.values())
        per_pos = tuple(sum(n for length, n in h.items() if length - 1 >= i)
                        for i in range(1, k + 1))
        out.append(Observation(path, None, engine, "speculation-profile", k=k, drafts=steps,
                               accepted=sum((length - 1) * n for length, n in h.items()),
                               accepted_per_position=per_pos, mean_al=mean,
                               thinking=thinking))
    elif mean is not None:
        out.append(Observation(path, None, engine, "speculation-profile", k=k,
                               mean_al=float(mean), thinking=thinking))
    for key, value in (doc.get("accept_length_by_k") or {}).items():
        kk = _int_key(key, path)
        if kk == k or value is None:
            continue
        out.append(Observation(path, None, engine, "speculation-profile", k=kk,
                               mean_al=float(value), thinking=thinking))
    if not out:
        raise ParseError("profile has neither a mean nor a histogram", path=path)
    return out
