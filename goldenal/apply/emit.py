"""Render the golden AL as one engine's configuration fragment.

:func:`emit` looks one committed cell up (same selection as
:func:`goldenal.lookup`) and spells it for an engine in one of five formats:

========  ==============================================================
shell     ``export NAME=value`` lines (vLLM: ``SPEC_CONFIG`` holding the JSON)
env       ``NAME=value`` lines for a ``.env`` file
json      vLLM: the speculative-config JSON (merged into ``spec_config``);
          others: a JSON object of the variables
yaml      an srt-slurm environment mapping, or ``speculative-config: '<json>'``
args      command-line arguments (``--speculative-config '<json>'``,
          ``--spec-decode-acceptance-length 2.83``, ``--spec-synth-rates 1,0.83,0``)
========  ==============================================================

Every default is a knob whose per-position schedule ``goldenal verify``
confirms without extra flags: the minimum-variance one of every engine's
length knob.  llama.cpp's length flag realises a geometric schedule instead
(:mod:`goldenal.engines.llamacpp`), so its default is the rates form with the
minimum-variance rates; ``form="length"`` writes the length flag, with a note
saying so.
"""

from dataclasses import dataclass

from goldenal.engines import ENGINES, adapter
from goldenal.engines.base import FORMATS
from goldenal.core.errors import UsageError


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
    engine : {"vllm", "sglang", "trtllm", "atom", "llamacpp"}
    format : {"shell", "env", "json", "yaml", "args"}
    spec_config : str, optional
        vLLM: the rest of the speculative-config JSON to merge the knobs into.
    distribution : bool or {"curve", "min-variance"}
        vLLM and llama.cpp: per-position rates instead of the length
        (``synthetic_acceptance_rates``, ``--spec-synth-rates``).  True or
        ``"curve"``: the curve's own per-position profile (see
        :mod:`goldenal.apply.distribution`); ``"min-variance"``: the schedule
        ``[1]*f, p, 0...`` that the other engines' length knobs realise.
    form : {"length", "rate"}, optional
        ATOM: ``"rate"``, the rate flag ``(AL - 1) / K`` instead of the length.
        llama.cpp: ``"length"``, ``--spec-synth-len AL`` (a geometric schedule)
        instead of the minimum-variance ``--spec-synth-rates``.
    dspark_config : str, optional
        ATOM: the ``--dspark-config`` JSON served; refused with the confidence
        scheduler.

    Returns
    -------
    Fragment
        ``str(fragment)`` is the text to paste; ``notes`` are sentences for
        the reader (llama.cpp's length form: the schedule it realises).

    Example
    -------
    >>> print(emit("minimax-m3", engine="trtllm", k=3, thinking="on",
    ...            draft="Inferact/MiniMax-M3-EAGLE3"))
    export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.83
    """
    if engine not in ENGINES:
        raise UsageError(f"`engine` must be one of {', '.join(ENGINES)}, got {engine!r}")
    if format not in FORMATS:
        raise UsageError(f"`format` must be one of {', '.join(FORMATS)}, got {format!r}")
    if distribution is True:
        distribution = "curve"
    if distribution not in (False, None, "curve", "min-variance"):
        raise UsageError("`distribution` must be curve or min-variance, got "
                         f"{distribution!r}")
    if distribution and engine not in ("vllm", "llamacpp"):
        raise UsageError("`distribution` is for vLLM (synthetic_acceptance_rates) and "
                         "llama.cpp (--spec-synth-rates)")
    if spec_config is not None and engine != "vllm":
        raise UsageError("`spec_config` is for vLLM's speculative-config JSON")
    if form is not None and engine not in ("atom", "llamacpp"):
        raise UsageError("`form` is for ATOM (rate: --spec-decode-acceptance-rate) and "
                         "llama.cpp (length: --spec-synth-len)")
    if engine == "llamacpp" and form not in (None, "length"):
        raise UsageError(f"`form` for llama.cpp must be length, got {form!r}")
    if engine == "llamacpp" and form == "length" and distribution:
        raise UsageError("`distribution` writes llama.cpp's rates form, not --spec-synth-len")
    from goldenal.golden.policy import select
    from goldenal.golden.registry import load_registry

    registry = load_registry(golden_dir)
    golden = select(registry, model, k=k, thinking=thinking, draft=draft, curve=curve,
                    variant=variant)
    eng = adapter(engine)
    options = {}
    rates = None
    if engine == "vllm":
        if spec_config is not None:
            _check_spec_config(spec_config, golden, registry)
        options["spec_config"] = spec_config
        if distribution:
            rates = _rates(distribution, golden, registry)
            options["rates"] = rates
    notes = ()
    if engine == "llamacpp":
        from goldenal.engines.llamacpp import length_note

        if form == "length":
            notes = (length_note(golden.text, golden.k),)
        else:
            rates = _rates(distribution or "min-variance", golden, registry)
            options["rates"] = rates
    if engine == "atom":
        options["form"] = form
        options["dspark_config"] = dspark_config
    text = eng.fragment(golden.text, k=golden.k, fmt=format, **options)
    value = eng.convert(golden.text, k=golden.k, form=form)
    knob = eng.knob
    if engine == "vllm" and rates is not None:
        knob, value = "synthetic_acceptance_rates", "[" + ", ".join(repr(r) for r in rates) + "]"
    if engine == "llamacpp" and rates is not None:
        from goldenal.engines.llamacpp import RATES_KNOB, rates_text

        knob, value = RATES_KNOB, rates_text(rates)
    if engine == "atom" and form == "rate":
        from goldenal.engines.atom import RATE_KNOB

        knob = RATE_KNOB
    return Fragment(text=text, engine=engine, format=format, knob=knob, value=value,
                    al=golden.text, k=golden.k, thinking=golden.thinking, curve=golden.curve,
                    rates=rates, notes=notes)


def _rates(distribution, golden, registry):
    """Per-position survival rates of one cell: the curve's profile or min-variance."""
    if distribution == "min-variance":
        from goldenal.core.acceptance import min_variance_schedule

        return tuple(float(r) for r in min_variance_schedule(golden.text, golden.k))
    from goldenal.apply.distribution import acceptance_rates

    return tuple(acceptance_rates(registry.curves[golden.curve], k=golden.k,
                                  thinking=golden.thinking))


def _check_spec_config(spec_config, golden, registry):
    """Refuse a speculative-config whose K, method, head or variant contradicts the cell.

    The curve must be the one the JSON serves, by the resolver inject and
    audit use (:func:`goldenal.golden.policy.resolve_served`).
    """
    from goldenal.engines.vllm import parse_speculative_config
    from goldenal.core.errors import PolicyError
    from goldenal.golden.policy import resolve_served

    spec = parse_speculative_config(spec_config)
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
    except PolicyError as exc:
        raise PolicyError(f"--spec-config does not serve curve {golden.curve}: {exc}") from None
    except Exception as exc:
        if type(exc).__name__ == "UnknownCurve":
            raise PolicyError(f"--spec-config does not serve curve {golden.curve}: "
                              f"{exc}") from None
        raise
