"""The AgentX golden-AL policy as code: which committed value a config must carry.

Rules (POLICY.md of the project's references, after InferenceX's
``golden_al_distribution/README.md`` and review checklist):

* only committed cells: no interpolation, no extrapolation, no fallback to
  another draft head, sampling variant or thinking mode;
* the curve is the one of the draft head (and variant) actually served;
* a cell recorded as ``N/A`` (a failed measurement) has no golden value;
* a golden AL lies in [1, K+1].

On the ``goldenal lookup`` hot path: standard-library imports only.
"""

from goldenal.errors import PolicyError, UnknownCurve, UsageError
from goldenal.registry import NOT_AVAILABLE, GoldenValue

_THINKING = {"on": "on", "off": "off", "thinking_on": "on", "thinking_off": "off",
             "true": "on", "false": "off", "enabled": "on", "disabled": "off"}


def normalize_thinking(thinking):
    """``"on"``/``"off"`` from the spellings recipes use (``thinking_on``, ``true``...)."""
    if isinstance(thinking, bool):
        return "on" if thinking else "off"
    mode = _THINKING.get(str(thinking).strip().lower())
    if mode is None:
        raise UsageError(f"`thinking` must be 'on' or 'off', got {thinking!r}")
    return mode


def normalize_k(k):
    """K as a positive int; ``"3"`` is accepted, ``3.5``, ``0`` and ``True`` are not."""
    if isinstance(k, bool):
        raise UsageError(f"`k` must be a positive integer, got {k!r}")
    if isinstance(k, str) and k.strip().isdigit():
        k = int(k)
    if not isinstance(k, int) or k < 1:
        raise UsageError(f"`k` must be a positive integer, got {k!r}")
    return k


def normalize_variant(variant):
    """A variant as a dict; ``None`` means "not specified", ``"none"`` means no variant."""
    if variant is None or isinstance(variant, dict):
        return variant
    if isinstance(variant, str):
        variant = [variant]
    out = {}
    for item in variant:
        if item.strip().lower() in ("none", "base", "default"):
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"`variant` entries are KEY=VALUE (or 'none'), got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _squash(name):
    """Case- and punctuation-insensitive form of a model name."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def model_matches(curve, model):
    """True when ``model`` (key, HF id, local path or prefix) names the curve's model."""
    wanted = {_squash(model)}
    if "/" in model:
        wanted.add(_squash(model.rstrip("/").rsplit("/", 1)[-1]))
    return any(_squash(name) in wanted for name in curve.names)


def _is_local_path(name):
    """A filesystem path (``/models/X``, ``./X``, ``a/b/X``), not an ``org/name`` HF id."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1


def draft_matches(curve, draft):
    """True when ``draft`` names one of the curve's heads.

    An HF id (``org/name``) must match exactly (case-insensitive): another
    organisation's head of the same name is another head.  A local path or a
    bare name matches by its last component, the way recipes stage heads
    (``/models/MiniMax-M3-EAGLE3-GQA``).
    """
    given = draft.strip().rstrip("/")
    exact = "/" in given and not _is_local_path(given)
    base = given.rsplit("/", 1)[-1].lower()
    for head in curve.draft:
        if given.lower() == head.lower():
            return True
        if not exact and base == head.rsplit("/", 1)[-1].lower():
            return True
    return False


def _span(ks):
    """``1-8`` or ``1-3, 5`` for a sorted list of K."""
    if not ks:
        return "none"
    parts, start, prev = [], ks[0], ks[0]
    for k in ks[1:] + [None]:
        if k is not None and k == prev + 1:
            prev = k
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if k is not None:
            start = prev = k
    return ", ".join(parts)


def _describe(curve):
    head = ", ".join(curve.draft) if curve.draft else f"native {curve.method or 'MTP'}"
    variant = ", ".join(f"{k}={v}" for k, v in sorted(curve.variant.items()))
    return head + (f" [{variant}]" if variant else "")


def _flag_for(curve, others):
    """The flag that picks ``curve`` among ``others``."""
    if curve.draft and sum(1 for o in others if o.draft == curve.draft) == 1:
        return f"--draft {curve.draft[0]}"
    return f"--curve {curve.id}"


def _unknown_model(registry, model):
    import difflib

    names = sorted({c.model for c in registry})
    pool = {}
    for c in registry:
        for name in c.names:
            pool.setdefault(name.lower(), c.model)
    close = difflib.get_close_matches(model.lower(), list(pool), n=3, cutoff=0.5)
    hint = sorted({pool[c] for c in close})
    msg = f"no curve for model {model!r}"
    if hint:
        msg += f"; did you mean {', '.join(hint)}?"
    msg += f" (models in {registry.directory}: {', '.join(names)})"
    return UnknownCurve(msg)


def candidates(registry, model=None, *, draft=None, curve=None, variant=None):
    """The curves that fit a request, before K and thinking mode are checked."""
    if curve is not None:
        found = [c for c in registry if c.id.lower() == curve.lower()]
        if not found:
            import difflib

            ids = sorted(c.id for c in registry)
            close = difflib.get_close_matches(curve, ids, n=3, cutoff=0.75)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownCurve(f"no curve {curve!r}{hint} (curves: {', '.join(ids)})")
        chosen = found[0]
        if model is not None and not model_matches(chosen, model):
            raise PolicyError(f"curve {chosen.id} is for model {chosen.model}, not {model!r}")
        if draft is not None and not draft_matches(chosen, draft):
            raise PolicyError(f"curve {chosen.id} was measured with {_describe(chosen)}, "
                              f"not draft {draft!r}; its value must not be served with that head")
        if variant is not None and variant != chosen.variant:
            raise PolicyError(f"curve {chosen.id} has variant {chosen.variant or 'none'}, "
                              f"not {variant or 'none'}")
        return [chosen]
    if model is None:
        raise UsageError("give a MODEL or `--curve`")
    found = [c for c in registry if model_matches(c, model)]
    if not found:
        raise _unknown_model(registry, model)
    if draft is not None:
        with_head = [c for c in found if draft_matches(c, draft)]
        if not with_head:
            heads = "; ".join(f"{_describe(c)} (curve {c.id})" for c in found)
            raise UnknownCurve(f"no curve for model {found[0].model} with draft {draft!r}; "
                               f"committed: {heads}")
        found = with_head
    if variant is not None:
        same = [c for c in found if c.variant == variant]
        if not same:
            have = "; ".join(f"{c.id}: {c.variant or 'none'}" for c in found)
            raise UnknownCurve(f"no curve for model {found[0].model} with variant "
                               f"{variant or 'none'}; committed: {have}")
        found = same
    return found


def select(registry, model=None, *, k, thinking, draft=None, curve=None, variant=None):
    """Apply the policy: exactly one committed cell, or a refusal naming what exists."""
    k = normalize_k(k)
    thinking = normalize_thinking(thinking)
    variant = normalize_variant(variant)
    found = candidates(registry, model, draft=draft, curve=curve, variant=variant)
    if len(found) > 1:
        options = "; ".join(f"{_flag_for(c, found)} for {_describe(c)}" for c in found)
        raise PolicyError(f"{len(found)} curves match model {found[0].model}; the draft head "
                          f"(and variant) served decides which applies: {options}")
    chosen = found[0]
    cells = chosen.cells.get(thinking)
    if not cells:
        have = ", ".join(f"thinking_{m}" for m in ("on", "off") if chosen.cells.get(m))
        raise PolicyError(f"curve {chosen.id} has no thinking_{thinking} values (only {have}); "
                          "there is no fallback to another thinking mode")
    text = cells.get(k)
    if text is None:
        raise PolicyError(f"no golden value for curve {chosen.id}, thinking {thinking}, K={k}; "
                          f"committed K: {_span(sorted(cells))} (no interpolation or "
                          "extrapolation)")
    if text == NOT_AVAILABLE:
        raise PolicyError(f"curve {chosen.id} records thinking {thinking}, K={k} as N/A "
                          "(failed measurement); there is no golden value to serve")
    return GoldenValue(text, k=k, thinking=thinking, curve=chosen, golden_dir=registry.directory)
