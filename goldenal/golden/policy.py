"""The golden-AL policy as code (docs/policy.md §2): which committed value a config must carry.
On the ``goldenal lookup`` hot path: standard-library imports only."""

import functools

from goldenal.golden.curves import NOT_AVAILABLE
from goldenal.core.errors import PolicyError, UnknownCurve, UsageError


class GoldenValue:
    """One golden AL with the identity of the cell it came from.

    ``str()`` is the committed spelling (``"2.83"``), ``engine_value(engine)`` the engine's
    knob value (``"1.83"`` for trtllm).  It compares, orders and hashes as ``float(value)``
    does (``lookup(...) == 2.83`` holds); to compare cells, use ``(v.curve, v.thinking, v.k)``.
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

    def __hash__(self):
        return hash(float(self.text))

    def engine_value(self, engine):
        """The value the engine's knob takes (exact decimals)."""
        from goldenal.engines.knobs import knob_value

        return knob_value(engine, self.text)

    @property
    def knob_value(self):
        """The knob value for ``engine`` (the committed AL when none was named)."""
        return self.engine_value(self.engine) if self.engine else self.text

    def to_dict(self, engine=None):
        from goldenal.engines.knobs import KNOBS

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


def _float_comparison(op):
    # float's own comparisons, so equality, ordering and hashing agree with each other
    # and with every number float agrees with (a Decimal compares exactly, hence unequal
    # to the float 2.83, as it is)
    def compare(self, other):
        if isinstance(other, GoldenValue):
            other = float(other.text)
        return getattr(float(self.text), op)(other)
    return compare


for _op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(GoldenValue, _op, _float_comparison(_op))


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
    if isinstance(k, str) and k.strip().isdigit():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"`k` must be a positive integer, got {k!r}")
    return k


# A ``--variant`` given by one of its values alone (``--variant probabilistic``): the
# curve whose variant holds that value, whatever the key.
BY_VALUE = object()


def normalize_variant(variant, *, by_value=True):
    """A variant as a dict (None: unspecified, ``"none"``: none); ``by_value``: see BY_VALUE."""
    if variant is None or isinstance(variant, dict):
        return variant
    if isinstance(variant, str):
        variant = [variant]
    out = {}
    for item in variant:
        if item.strip().lower() in ("none", "base", "default"):
            continue
        key, sep, value = item.partition("=")
        # a bare name of a setting (``draft_sample_method``) is a key without its value
        if by_value and not sep and key.strip() and not key.strip().endswith("_method"):
            out[key.strip()] = BY_VALUE
            continue
        if not sep or not key.strip() or not value.strip():
            shapes = "KEY=VALUE, a value alone or 'none'" if by_value else "KEY=VALUE (or 'none')"
            raise UsageError(f"`variant` entries are {shapes}, got {item!r}")
        out[key.strip()] = value.strip()
    return out


@functools.lru_cache(maxsize=4096)
def _squash(name):
    """Case- and punctuation-insensitive form of a model name (cached: audit asks often)."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def model_matches(curve, model):
    """True when ``model`` (key, HF id, local path or prefix) names the curve's model."""
    wanted = {_squash(model)}
    if "/" in model:
        wanted.add(_squash(model.rstrip("/").rsplit("/", 1)[-1]))
    return any(_squash(name) in wanted for name in curve.names)


def draft_matches(curve, draft):
    """True when ``draft`` names a head: an HF id exactly, a path or bare name by its last part."""
    given = draft.strip().rstrip("/")
    # an ``org/name`` HF id, not a path (``/models/X``, ``./X``, ``a/b/X``)
    exact = given.count("/") == 1 and not given.startswith(("/", ".", "~"))
    base = given.rsplit("/", 1)[-1].lower()
    for head in curve.draft:
        if given.lower() == head.lower():
            return True
        if not exact and base == head.rsplit("/", 1)[-1].lower():
            return True
    return False


def k_span(ks):
    """``1-8`` or ``1-3, 5`` for a sorted list of K."""
    runs = []       # [first, last] of each run of consecutive K
    for k in ks:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def _describe(curve):
    head = ", ".join(curve.draft) if curve.draft else f"native {curve.method or 'MTP'}"
    variant = ", ".join(f"{k}={v}" for k, v in sorted(curve.variant.items()))
    return head + (f" [{variant}]" if variant else "")


def _short_variant(curve, others):
    """The first ``--variant`` value that picks ``curve`` among ``others``, or None."""
    if not curve.variant:
        return "none" if sum(1 for o in others if not o.variant) == 1 else None
    for value in dict.fromkeys(str(v) for v in curve.variant.values()):  # manifest order
        if value.lower() == "none":
            continue
        given = {value: BY_VALUE}
        if [o for o in others if variant_matches(o, given)] == [curve]:
            return value
    return None


def _flag_for(curve, others):
    """The shortest flags that pick ``curve`` among ``others``."""
    same_head = [o for o in others if o.draft == curve.draft]
    if curve.draft and len(same_head) == 1:
        return f"--draft {curve.draft[0]}"
    short = _short_variant(curve, same_head)
    if short is not None:
        if len(same_head) < len(others) and curve.draft:
            return f"--draft {curve.draft[0]} --variant {short}"
        if len(same_head) == len(others):
            return f"--variant {short}"
    return f"--curve {curve.id}"


def _variant_choice(found):
    """``--variant A|B (A: k=v; B: k=w)`` when variants alone tell ``found`` apart, else None."""
    flags = [_flag_for(c, found) for c in found]
    if not all(f.startswith("--variant ") for f in flags):
        return None
    values = [f[len("--variant "):] for f in flags]
    shown = "; ".join(f"{v}: {show_variant(c.variant)}" for v, c in zip(values, found)
                      if c.variant)
    return f"--variant {'|'.join(values)} ({shown})"


def _choose_among(found):
    """What to add to pick one of several curves, for a refusal."""
    choice = _variant_choice(found)
    if choice:
        return f"the sampling variant served decides which applies: {choice}"
    options = "; ".join(f"{_flag_for(c, found)} for {_describe(c)}" for c in found)
    return f"the draft head (and variant) served decides which applies: {options}"


def _close_names(pool, name, n, cutoff):
    """The values of ``pool`` (lower-case name -> shown) whose names are close to ``name``."""
    import difflib

    return [pool[c] for c in difflib.get_close_matches(name.lower(), list(pool), n=n,
                                                        cutoff=cutoff)]


def _name_pool(registry, *, ids=False):
    """Lower-case curve id (with ``ids``) or model name -> the id or model to suggest."""
    pool = {}
    for c in registry if ids else ():
        pool.setdefault(c.id.lower(), c.id)
    for c in registry:
        for name in c.names:
            pool.setdefault(name.lower(), c.model)
    return pool


def _unknown_model(registry, model):
    hint = sorted(set(_close_names(_name_pool(registry), model, 3, 0.5)))
    msg = f"no curve for model {model!r}" + (f"; did you mean {', '.join(hint)}?" if hint else "")
    names = ", ".join(sorted({c.model for c in registry}))
    return UnknownCurve(msg + f" (models in {getattr(registry, 'directory', 'the registry')}: "
                        f"{names})")


# -- the served identity -------------------------------------------------------

# The values of the engines' method settings (their records' method spellings) mapped to
# a curve family.
_METHOD_CLASSES = {"mtp": "mtp", "nextn": "mtp", "deepseek_mtp": "mtp",
                   "qwen3_next_mtp": "mtp", "glm4_moe_mtp": "mtp", "eagle3": "eagle3",
                   "dspark": "dspark",
                   # llama.cpp's speculative types (common/speculative.cpp)
                   "draft-mtp": "mtp", "draft-eagle3": "eagle3", "draft-dspark": "dspark"}
# SGLang's ``EAGLE`` (and TensorRT-LLM's ``Eagle``) runs chain drafting: native MTP
# layers (NextN) or an EAGLE-3 head, whichever the draft path holds.
_CHAIN = "chain"
_CHAIN_NAMES = ("eagle", "eagle-3")

# vLLM rejection_sample_method values that are the engine default, not a curve's
# variant ("strict" in 0.19/0.20, "standard" from 0.21 on; docs/engines.md §1.1).
_DEFAULT_REJECTION = ("strict", "standard")
# ``rejection_sample_method: synthetic`` replaces the verifier the curve was
# measured with; the served file no longer says which one that was.
SYNTHETIC = "synthetic"
REPLACED = object()


def method_class(method):
    """The method's family (SGLang's ``EAGLE`` may be MTP or EAGLE-3), or None."""
    if method is None or not str(method).strip():
        return None
    name = str(method).strip().lower()
    if name in _CHAIN_NAMES:
        return _CHAIN
    return _METHOD_CLASSES.get(name, "mtp" if name.endswith("_mtp") else name)


def method_matches(curve, method):
    """True when a served ``method`` (any engine's spelling) is the curve's method."""
    served = method_class(method)
    if served is None:
        return True
    own = method_class(curve.method) or "mtp"
    if served == _CHAIN:
        return own in ("mtp", "eagle3")
    return own == served


def served_variant(draft_sample_method=None, rejection_sample_method=None):
    """The variant a served config runs; ``synthetic`` rejection fits any (REPLACED)."""
    out = {}
    if draft_sample_method is not None and str(draft_sample_method).strip():
        out["draft_sample_method"] = str(draft_sample_method).strip()
    rsm = None if rejection_sample_method is None else str(rejection_sample_method).strip()
    if rsm == SYNTHETIC:
        out["rejection_sample_method"] = REPLACED
    elif rsm and rsm not in _DEFAULT_REJECTION:
        out["rejection_sample_method"] = rsm
    return out


def variant_matches(curve, variant):
    """True when ``variant`` is the curve's; REPLACED matches anything, BY_VALUE any value."""
    own = curve.variant
    by_value = {k.lower() for k, v in variant.items() if v is BY_VALUE}
    if by_value:
        if not by_value <= {str(v).lower() for v in own.values()}:
            return False
        variant = {k: v for k, v in variant.items() if v is not BY_VALUE}
        own = {k: v for k, v in own.items() if k in variant}
    for key in set(own) | set(variant):
        wanted = variant.get(key)
        if wanted is REPLACED:
            continue
        if key not in own or key not in variant or str(own[key]) != str(wanted):
            return False
    return True


def show_variant(variant):
    """``k=v, ...`` as messages show a variant (``none`` for none)."""
    shown = [k if v is BY_VALUE else f"{k}={v}" for k, v in sorted(variant.items())
             if v is not REPLACED]
    return ", ".join(shown) or "none"


def _head_fits(curve, draft, method):
    """Does a served draft path belong to the curve?  (SGLang stages MTP layers as one.)"""
    if draft_matches(curve, draft):
        return True
    if curve.draft:
        return False
    return method_class(method) in ("mtp", _CHAIN) or model_matches(curve, draft)


def candidates(registry, model=None, *, draft=None, curve=None, variant=None, method=None):
    """The curves fitting a request before K and thinking mode are checked."""
    if curve is not None:
        found = [c for c in registry if c.id.lower() == curve.lower()]
        if not found:
            ids = sorted(c.id for c in registry)
            close = _close_names({i.lower(): i for i in ids}, curve, 3, 0.75)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownCurve(f"no curve {curve!r}{hint} (curves: {', '.join(ids)})")
        chosen = found[0]
        if model is not None and not model_matches(chosen, model):
            raise PolicyError(f"curve {chosen.id} is for model {chosen.model}, not {model!r}")
        if draft is not None and not _head_fits(chosen, draft, method):
            raise PolicyError(f"curve {chosen.id} was measured with {_describe(chosen)}, "
                              f"not draft {draft!r}; its value must not be served with that head")
        if method is not None and not method_matches(chosen, method):
            raise PolicyError(f"curve {chosen.id} was measured with method "
                              f"{chosen.method or 'mtp'}, not {method}")
        if variant is not None and not variant_matches(chosen, variant):
            raise PolicyError(f"curve {chosen.id} has variant {show_variant(chosen.variant)}, "
                              f"not {show_variant(variant)}")
        return [chosen]
    if model is None:
        raise UsageError("give a MODEL or `--curve`")
    found = [c for c in registry if model_matches(c, model)]
    if not found:
        raise _unknown_model(registry, model)
    if method is not None:
        same = [c for c in found if method_matches(c, method)]
        if not same:
            have = "; ".join(f"{c.method or 'mtp'} (curve {c.id})" for c in found)
            raise UnknownCurve(f"no {method} curve for model {found[0].model}; "
                               f"committed: {have}")
        found = same
    if draft is not None:
        with_head = [c for c in found if _head_fits(c, draft, method)]
        if not with_head:
            heads = "; ".join(f"{_describe(c)} (curve {c.id})" for c in found)
            raise UnknownCurve(f"no curve for model {found[0].model} with draft {draft!r}; "
                               f"committed: {heads}")
        found = with_head
    if variant is not None:
        same = [c for c in found if variant_matches(c, variant)]
        if not same:
            have = _variant_choice(found) or "; ".join(f"{c.id}: {show_variant(c.variant)}"
                                                       for c in found)
            raise UnknownCurve(f"no curve for model {found[0].model} with variant "
                               f"{show_variant(variant)}; committed: {have}")
        found = same
    return found


def served_sampling(site_or_cfg):
    """``(draft_sample_method, rejection_sample_method)`` as a site or config serves them."""
    variant = getattr(site_or_cfg, "variant", None) or {}
    dsm = variant.get("draft_sample_method")
    rsm = getattr(site_or_cfg, "rejection_sample_method", None) or \
        variant.get("rejection_sample_method")
    spec = (getattr(site_or_cfg, "extra", None) or {}).get("spec")
    if isinstance(spec, dict):
        dsm = spec.get("draft_sample_method", dsm)
        rsm = spec.get("rejection_sample_method", rsm)
    return dsm, rsm


def _served_text(models, draft, method, served):
    """A one-line description of what a config serves, for messages."""
    variant = show_variant(served) if any(v is not REPLACED for v in served.values()) else ""
    parts = [models and f"model {models[0]}", draft and f"draft {draft}",
             method and f"method {method}", variant and f"variant {variant}"]
    return ", ".join(p for p in parts if p) or "no identity"


def resolve_served(registry, *, models=(), draft=None, method=None, draft_sample_method=None,
                   rejection_sample_method=None, model=None, draft_flag=None, curve=None,
                   variant=None):
    """The one curve a served config must carry, as inject, emit and audit all choose it."""
    served = served_variant(draft_sample_method, rejection_sample_method)
    ident = _served_text(models, draft, method, served)
    pool = None
    for name in models:
        if name and any(model_matches(c, name) for c in registry):
            pool = [c for c in registry if model_matches(c, name)]
            break
    if pool is None and draft and model is None and curve is None:
        # a draft head names its model (the file may give only the head's path)
        heads = [c for c in registry if c.draft and draft_matches(c, draft)]
        if heads:
            pool = [c for c in registry if c.model == heads[0].model]
    if pool is None and model is None and curve is None:
        if models:
            raise UnknownCurve(f"no committed curve for model {models[0]}; if it is an "
                               "alias of a curve's model, name that model or the curve "
                               f"({ident})")
        raise PolicyError(f"cannot tell which golden curve applies ({ident}); "
                          "name the model or the curve")
    pool_model = model if pool is None else pool[0].model
    found = list(registry) if pool is None else pool
    if pool_model is not None:
        # the config's own identity, exactly
        found = candidates(found, pool_model, draft=draft, method=method, variant=served)
    if any(v is not None for v in (model, draft_flag, curve, variant)):
        chosen = candidates(registry, model, draft=draft_flag, curve=curve,
                            variant=normalize_variant(variant))
        both = [c for c in chosen if c in found]
        if curve is not None and both:
            # an explicit curve must still be the one the config serves
            both = candidates(both, curve=curve, draft=draft, method=method, variant=served)
        if not both:
            given = " ".join(f"--{k.replace('_flag', '')} {v}" if k != "model" else str(v)
                             for k, v in (("model", model), ("draft_flag", draft_flag),
                                          ("curve", curve), ("variant", variant))
                             if v is not None)
            raise PolicyError(f"{given} contradicts the file, which serves {ident} "
                              f"({', '.join(c.id for c in found)})")
        found = both
    if len(found) != 1:
        raise PolicyError(f"{len(found)} curves fit {ident}: "
                          + ", ".join(c.id for c in found) + "; " + _choose_among(found))
    return found[0]


def resolve_curve(registry, name=None, *, draft=None, curve=None, variant=None):
    """The one curve a curve id or model ``name`` and the selection flags pick (``show``)."""
    variant = normalize_variant(variant)
    if name is not None and curve is None and any(c.id.lower() == name.lower()
                                                  for c in registry):
        name, curve = None, name
    if name is None and curve is None:
        raise UsageError("give a curve id or a model")
    if name is not None and curve is None and not any(model_matches(c, name) for c in registry):
        raise _unknown_name(registry, name)
    return _one(candidates(registry, name, draft=draft, curve=curve, variant=variant))


def _one(found):
    """The only curve of ``found``; PolicyError naming what picks each of several."""
    if len(found) > 1:
        raise PolicyError(f"{len(found)} curves match model {found[0].model}; "
                          + _choose_among(found))
    return found[0]


def _unknown_name(registry, name):
    """Neither a curve id nor a model name: suggest the closest of either."""
    hint = list(dict.fromkeys(_close_names(_name_pool(registry, ids=True), name, 4, 0.6)))
    ids = sorted(c.id for c in registry)
    models = sorted({c.model for c in registry})
    msg = f"no curve {name!r}" + (f"; did you mean {', '.join(hint)}?" if hint else "")
    return UnknownCurve(msg + f" (curves: {', '.join(ids)}; models: {', '.join(models)})")


def select(registry, model=None, *, k, thinking, draft=None, curve=None, variant=None):
    """Apply the policy: exactly one committed cell, or a refusal naming what exists."""
    k = normalize_k(k)
    thinking = normalize_thinking(thinking)
    variant = normalize_variant(variant)
    chosen = _one(candidates(registry, model, draft=draft, curve=curve, variant=variant))
    cells = chosen.cells.get(thinking)
    if not cells:
        have = ", ".join(f"thinking_{m}" for m in ("on", "off") if chosen.cells.get(m))
        raise PolicyError(f"curve {chosen.id} has no thinking_{thinking} values (only {have}); "
                          "there is no fallback to another thinking mode")
    text = cells.get(k)
    if text is None:
        raise PolicyError(f"no golden value for curve {chosen.id}, thinking {thinking}, K={k}; "
                          f"committed K: {k_span(sorted(cells))} (no interpolation or "
                          "extrapolation)")
    if text == NOT_AVAILABLE:
        raise PolicyError(f"curve {chosen.id} records thinking {thinking}, K={k} as N/A "
                          "(failed measurement); there is no golden value to serve")
    return GoldenValue(text, k=k, thinking=thinking, curve=chosen, golden_dir=registry.directory)
