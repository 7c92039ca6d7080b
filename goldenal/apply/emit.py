"""Render the golden AL as one engine's configuration fragment (``goldenal emit``); every
default realises the minimum-variance schedule ``goldenal verify`` confirms without flags."""

from dataclasses import dataclass

from goldenal.apply.distribution import acceptance_rates
from goldenal.core.acceptance import min_variance_schedule
from goldenal.core.errors import PolicyError, UnknownCurve, UsageError
from goldenal.engines import MODULES, adapter
from goldenal.engines.base import FORMATS
from goldenal.golden.policy import resolve_served, select
from goldenal.golden.registry import load_registry


@dataclass(frozen=True)
class Fragment:
    """An emitted fragment and the golden cell it carries."""

    text: str
    engine: str
    format: str
    knob: str
    value: str
    al: str
    k: int
    thinking: str
    curve: str
    rates: "tuple | None" = None
    notes: tuple = ()

    def __str__(self):
        return self.text


def emit(model=None, *, engine, k, thinking, draft=None, curve=None, variant=None,
         golden_dir=None, format="shell", spec_config=None, distribution=False, form=None,
         dspark_config=None):
    """The golden AL of one cell, spelled for one engine.

    Parameters
    ----------
    model, k, thinking, draft, curve, variant, golden_dir
        Cell selection, as in :func:`goldenal.lookup`.
    engine : str
        One of :data:`goldenal.engines.ENGINES`.
    format : {"shell", "env", "json", "yaml", "args"}
    spec_config : str, optional
        vLLM: the rest of the speculative-config JSON to merge the knobs into.
    distribution : bool or {"curve", "min-variance"}
        Engines with a rates knob: rates instead of the length, the curve's own profile
        (True or ``"curve"``) or the schedule ``[1]*f, p, 0...`` the length knobs realise.
    form : {"length", "rate"}, optional
        ATOM: ``"rate"``, its (AL - 1) / K knob; llama.cpp: ``"length"``, its
        length knob (a geometric schedule) instead of the rates.
    dspark_config : str, optional
        ATOM: the DSpark config JSON served; refused with the confidence scheduler.

    Returns
    -------
    Fragment
        ``str(fragment)`` is the text to paste; ``notes`` are sentences for the reader.

    Example
    -------
    >>> emit("minimax-m3", engine="trtllm", k=3, thinking="on",
    ...      draft="Inferact/MiniMax-M3-EAGLE3").value
    '1.83'
    """
    try:
        eng = adapter(engine)
    except ValueError:
        raise UsageError(f"`engine` must be one of {', '.join(MODULES)}, got {engine!r}") from None
    if format not in FORMATS:
        raise UsageError(f"`format` must be one of {', '.join(FORMATS)}, got {format!r}")
    if distribution is True:
        distribution = "curve"
    if distribution not in (False, None, "curve", "min-variance"):
        raise UsageError("`distribution` must be curve or min-variance, got "
                         f"{distribution!r}")
    rec = eng.record
    if distribution and not rec.knob_for("rates"):
        raise UsageError(f"`distribution` is for {_takers(lambda a: a.record.knob_for('rates'))}")
    options = {"spec_config": spec_config, "dspark_config": dspark_config}
    for name, given in options.items():
        if given is not None and name not in eng.emit_options:
            raise UsageError(f"`{name}` is for "
                             f"{_takers(lambda a: name in a.emit_options, name=False)}")
    if form is not None and not eng.forms:
        raise UsageError(f"`form` is for {_takers(lambda a: a.forms, forms=True)}")
    if form is not None and form not in eng.forms:
        raise UsageError(f"`form` for {rec.title} must be {' or '.join(eng.forms)}, got {form!r}")
    if form == "length" and distribution and eng.default_form == "rates":
        raise UsageError(f"`distribution` writes {rec.title}'s rates form, not {rec.value_knob}")
    registry = load_registry(golden_dir)
    golden = select(registry, model, k=k, thinking=thinking, draft=draft, curve=curve,
                    variant=variant)
    if spec_config is not None:
        _check_spec_config(eng.parse_spec_config(spec_config), golden, registry)
    rates = None
    if distribution or (eng.default_form == "rates" and form != "length"):
        rates = tuple(survival_rates(distribution or "min-variance", registry, golden.curve,
                                     golden.k, golden.text, golden.thinking))
    options = {name: value for name, value in options.items() if name in eng.emit_options}
    text, knob, value, notes = eng.emit(golden.text, k=golden.k, fmt=format, rates=rates,
                                        form=form, **options)
    return Fragment(text=text, engine=engine, format=format, knob=knob, value=value,
                    al=golden.text, k=golden.k, thinking=golden.thinking, curve=golden.curve,
                    rates=rates, notes=notes)


def _takers(takes, *, name=True, forms=False):
    """The engines whose adapter ``takes`` an option, as a message names them."""
    out = []
    for engine in MODULES:
        eng = adapter(engine)
        if not takes(eng):
            continue
        rec, said = eng.record, eng.record.title
        if forms:
            alt = [f for f in eng.forms if f != eng.default_form]
            said += " (" + ", ".join(f"{f}: {rec.value_knob if f == 'length' else rec.knob_for(f)}"
                                     for f in alt) + ")"
        elif name:
            said += f" ({rec.knob_for('rates')})"
        out.append(said)
    return " and ".join(out)


def survival_rates(distribution, registry, curve_id, k, al_text, thinking):
    """Per-position survival rates of one cell: the curve's profile or min-variance."""
    if distribution == "min-variance":
        return [float(r) for r in min_variance_schedule(al_text, k)]
    if curve_id is None:
        raise UsageError("--distribution needs the golden curve, not an explicit AL")
    return acceptance_rates(registry.curves[curve_id], k=k, thinking=thinking)


def _check_spec_config(spec, golden, registry):
    """Refuse a speculative-config that serves another curve or K than the cell's."""
    n = spec.get("num_speculative_tokens")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        raise UsageError(f"--spec-config num_speculative_tokens must be an integer, got "
                         f"{n!r} ({type(n).__name__})")
    if n is not None and n != golden.k:
        raise PolicyError(f"--spec-config has num_speculative_tokens {n}, but --k is {golden.k}")
    head = spec.get("model")
    method = spec.get("method")
    try:
        resolve_served(registry, models=(golden.model,), draft=str(head) if head else None,
                       method=str(method) if method else None,
                       draft_sample_method=spec.get("draft_sample_method"),
                       # the fragment adds rejection_sample_method "synthetic"
                       rejection_sample_method="synthetic", curve=golden.curve)
    except (PolicyError, UnknownCurve) as exc:
        raise PolicyError(f"--spec-config does not serve curve {golden.curve}: {exc}") from None
