"""Did a synthetic-acceptance run realize its golden AL?  The tolerance and the
profile check are derived in docs/statistics.md, "Verifying a synthetic run"."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from goldenal.core.errors import ParseError
from goldenal.readers.records import record as _record, records

PROFILES = ("min-variance", "geometric", "none")


@dataclass(frozen=True)
class Verification:
    """Outcome of :func:`verify`: ``verdict`` "hit", "missed" or "incomplete" (windows
    refused without ``allow_incomplete``); ``sigma`` the standard error under the
    expected profile, ``sigma_distance`` the miss in sigmas (``inf`` when sigma is 0)."""

    verdict: str
    realized_al: float
    target: float
    target_text: str
    k: int | None
    tolerance: float
    sigma: float
    sigma_distance: float
    steps: int | None
    windows: int
    engine: str
    reason: str
    method: str = "counts"
    z: float = 4.0
    survival: tuple | None = field(default=None, repr=False)
    expected_survival: tuple | None = field(default=None, repr=False)
    profile_ok: bool | None = None
    notes: tuple = ()
    mean_hit: bool | None = None
    profile: str = "min-variance"

    @property
    def hit(self):
        return self.verdict == "hit"

    def __str__(self):
        return f"{self.verdict}: {self.reason}"

    def to_dict(self):
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["notes"] = list(self.notes)
        for key in ("survival", "expected_survival"):
            out[key] = None if out[key] is None else list(out[key])
        if math.isinf(out["sigma_distance"]):
            out["sigma_distance"] = None
        return out


def schedule(al, k):
    """The minimum-variance survival schedule ``[1]*f, p, 0...`` for ``al``, as floats."""
    from goldenal.core.acceptance import min_variance_schedule

    return tuple(float(r) for r in min_variance_schedule(str(al), k))


def _target_iv(target, k):
    text = getattr(target, "text", None)
    if text is None:
        if isinstance(target, bool) or not isinstance(target, (int, float, str, Decimal)):
            raise TypeError(f"`target` must be a GoldenValue or a number, got {target!r}")
        text = str(target).strip()
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"`target` is not a number: {text!r}") from None
    if not value.is_finite():
        raise ValueError(f"`target` must be a finite number, got {text!r}")
    k = k if k is not None else getattr(target, "k", None)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"`k` must be a positive integer, got {k!r}")
    if value < 1 or (k is not None and value > k + 1):
        raise ValueError(f"`target` {text} is outside [1, K+1] for K={k}")
    return text, float(value), k


def _observations(run_or_paths, k, thinking):
    from goldenal.readers import Observations, ingest, load_run
    from goldenal.readers.run import MeasurementRun, is_run_dir

    source = run_or_paths
    if isinstance(source, (str, os.PathLike)) and is_run_dir(source):
        source = load_run(source)
    if isinstance(source, MeasurementRun):
        keys = [key for key in source.cells if (k is None or key[1] == k)
                and (thinking is None or key[0] == thinking)]
        if not keys:
            have = ", ".join(f"thinking {t} K={kk}" for t, kk in sorted(source.cells))
            raise ParseError(f"the run has no cell thinking {thinking or 'any'}, K={k}; it has "
                             f"{have}", path=source.path)
        if len(keys) > 1:
            raise ParseError("the run has several matching cells (" + ", ".join(
                f"thinking {t} K={kk}" for t, kk in sorted(keys)) + "); pass thinking= and k=",
                path=source.path)
        return source.cells[keys[0]], keys[0][1], source.problems, source.sources
    obs = source if isinstance(source, Observations) else ingest(source, k=k)
    items = tuple(o for o in obs if k is None or o.k in (None, k))
    ks = {o.k for o in items if o.k is not None}
    if k is None and len(ks) > 1:
        raise ParseError(f"observations of several K ({sorted(ks)}); pass k=")
    return (items, k if k is not None else (ks.pop() if ks else None), obs.problems,
            obs.sources)


def _profile_iv(profile, text, value, k):
    """``(name, expected survival or None)`` for the ``profile`` argument."""
    if profile is None:
        profile = "min-variance"
    if isinstance(profile, str):
        if profile in ("min-variance", "none"):
            return profile, None
        if profile == "geometric":
            if k is None:
                raise ValueError("`profile` geometric needs K")
            return "geometric", tuple(_geometric_engine()[1].geometric_rates(text, k))
        raise ValueError(f"`profile` must be one of {', '.join(PROFILES)} or a list of "
                         f"survival rates, got {profile!r}")
    try:
        rates = tuple(float(r) for r in profile)
    except (TypeError, ValueError):
        raise ValueError(f"`profile` rates must be numbers, got {profile!r}") from None
    if k is not None and len(rates) != k:
        raise ValueError(f"`profile` has {len(rates)} rates, K is {k}")
    if any(not 0 <= r <= 1 for r in rates) or any(b > a for a, b in zip(rates, rates[1:])):
        raise ValueError(f"`profile` rates must be non-increasing survival probabilities in "
                         f"[0, 1], got {list(rates)}")
    if abs(1 + sum(rates) - value) > 0.005 + 1e-9:
        raise ValueError(f"`profile` rates give AL {1 + sum(rates):.4f}, not the target {text}")
    return "given", rates


def _variance(survival):
    """Per-step variance of the accepted count X with P(X >= i) = survival[i-1]."""
    mean = sum(survival)
    return max(0.0, sum((2 * i + 1) * s for i, s in enumerate(survival)) - mean * mean)


def verify(run_or_paths, target, k=None, *, thinking=None, engine=None, z=4.0, slack=0.0,
           allow_incomplete=False, profile="min-variance"):
    """Compare a synthetic-acceptance run's realized AL with its golden target.

    Parameters
    ----------
    run_or_paths : MeasurementRun, Observations, path or list of paths
        A run (a directory is loaded with :func:`goldenal.readers.load_run`) or files.
    target : GoldenValue or float or str
        The golden AL the run was set to (a :func:`goldenal.lookup` result carries K).
    k : int, optional
        K of the cell; default the target's K.
    thinking : {"on", "off"}, optional
        Cell of a run with both modes.
    engine : str, optional
        Engine whose schedule to assume; default the observations' engine.
    z : float
        Allowed distance in standard errors (default 4).
    slack : float
        Extra absolute allowance (requests ending inside a step accept fewer drafts).
    allow_incomplete : bool
        Judge the readable windows even when some were refused (else "incomplete").
    profile : {"min-variance", "geometric", "none"} or sequence of float
        The per-position survival the run must show; explicit rates must give the
        target's AL; "none" judges the mean only.

    Returns
    -------
    Verification

    Raises
    ------
    ParseError
        No readable windows, or no matching cell.

    Example
    -------
    >>> from goldenal.api import lookup                       # doctest: +SKIP
    >>> golden = lookup("minimax-m3", draft="Inferact/MiniMax-M3-EAGLE3", k=3, thinking="on")
    >>> verify("measurements/throughput-run/", golden).verdict     # doctest: +SKIP
    'hit'
    """
    if not z > 0:
        raise ValueError(f"`z` must be positive, got {z!r}")
    if not slack >= 0:
        raise ValueError(f"`slack` must be >= 0, got {slack!r}")
    if thinking is None:
        thinking = getattr(target, "thinking", None)
    text, value, k = _target_iv(target, k)
    items, k, problems, sources = _observations(run_or_paths, k, thinking)
    profile_name, expected_profile = _profile_iv(profile, text, value, k)
    counted = [o for o in items if not o.mean_only and o.drafts]
    means = [o for o in items if o.mean_only and o.mean_al is not None]
    if not counted and not means:
        first = next((p for p in problems if p.refused), None)
        raise ParseError("no readable windows to verify" + (f" ({first})" if first else ""))
    engine = engine or ",".join(sorted({o.engine for o in (counted or means)}))
    d = Decimal(text) - 1
    frac = d - int(d)
    var = float(frac * (1 - frac))  # exact decimal p(1-p): 0.83 -> 0.1411
    if expected_profile is not None:
        var = _variance(expected_profile)
    rounding = 0.005
    if counted:
        steps = sum(o.drafts for o in counted)
        realized = 1 + sum(o.accepted for o in counted) / steps
        method, windows = "counts", len(counted)
    else:
        realized = sum(o.mean_al for o in means) / len(means)
        windows = len(means)
        rounding += 0.005  # the printed means are themselves two-decimal figures
        # decode-log lines a fixed number of steps apart (the record's log_steps)
        per_line = [_record(o.engine).log_steps if o.format.endswith("-log") else None
                    for o in means]
        steps = None if None in per_line else sum(per_line)
        method = "printed means"
    sigma = math.sqrt(var / steps) if steps else 0.0
    tolerance = z * sigma + rounding + slack
    diff = realized - value
    if sigma > 0:
        distance = diff / sigma
    else:
        distance = 0.0 if abs(diff) <= rounding else math.copysign(math.inf, diff)
    mean_hit = abs(diff) <= tolerance
    survival, expected, profile_ok, profile_note = (None, None, None, None) \
        if profile_name == "none" else _profile(counted, k, text, z, slack, expected_profile)
    if profile_ok is False and steps:
        # another distribution: judge its mean against its own spread when wider
        observed = _variance(survival)
        wide = math.sqrt(observed / steps)
        if not mean_hit and observed > var and abs(diff) <= z * wide + rounding + slack:
            sigma, tolerance, distance = wide, z * wide + rounding + slack, diff / wide
            mean_hit = True
        if k is not None and profile_name != "geometric":
            matched, geometric = _geometric_note(survival, text, k, z, steps, any(
                _record(e).geometric_length for e in engine.split(",")))
            if geometric:
                profile_note += "; " + geometric
        else:
            matched = False
        if not matched:
            profile_note += "; " + _other_distributions()
    ok = mean_hit and profile_ok is not False
    match = (_match_words(profile_name, survival, expected, steps)
             if ok and survival is not None else None)
    reason = _reason(ok, mean_hit, realized, text, value, tolerance, distance, steps, k,
                     survival, profile_note, engine, method, match)
    notes = tuple(_config_notes(sources, text))
    if notes and not ok:
        reason += "; " + "; ".join(notes)
    verdict = "hit" if ok else "missed"
    refused = [p for p in problems if p.refused]
    if refused and not allow_incomplete:
        # a verdict on part of the windows could hide the ones that would miss
        reason = (f"{len(refused)} window{'s' if len(refused) != 1 else ''} refused (first: "
                  f"{refused[0]}); the readable windows give: {verdict}: {reason}")
        verdict = "incomplete"
    return Verification(verdict, realized, value, text, k, tolerance, sigma,
                        distance, steps, windows, engine, reason, method, z, survival, expected,
                        profile_ok, notes, mean_hit, profile_name)


def _config_notes(sources, text):
    """What the servers' start-up lines say about the knob (the readers' ``server_start``)."""
    out = []
    for src in sources:
        for start in src.facts.get("server_start", []):
            where = f"{src.path}:{start.line}"
            if not start.synthetic:
                out.append(f"{where}: the server started without synthetic acceptance "
                           f"({start.off})")
            elif start.pinned is not None and abs(start.pinned - float(text)) > 0.005:
                out.append(f"{where}: {start.stated}, not {text}")
    return out


def _other_distributions():
    """What else gives a profile neither the expected one nor the geometric one."""
    rates = ", ".join(filter(None, (rec.knob_for("rates") for rec in records().values())))
    return (f"another per-step distribution: explicit rates ({rates}), "
            "a geometric-decay knob (vLLM 0.19.x's rate knob, or ATOM before #1948), or "
            "real acceptance")


def _geometric_engine():
    """The record and module of the engine whose bare length knob is geometric."""
    import importlib

    rec = next(r for r in records().values() if r.geometric_length)
    return rec, importlib.import_module(f"goldenal.engines.{rec.name}")


def _geometric_note(survival, text, k, z, steps, geometric_engine=True):
    """``(matched, sentence or None)``: ``survival`` against the geometric schedule a bare
    length knob realises on the engine whose record says so."""
    rec, engine = _geometric_engine()
    knob = rec.value_knob
    rates_knob = rec.knob_for("rates")
    geo = engine.geometric_rates(text, k)
    i, sigmas = _deviation(survival, geo, steps)
    if not _outside(survival, geo, steps, z):
        return True, (f"it matches {rec.title}'s geometric schedule {_fmt_list(geo)} for {knob} "
                f"{text} (largest deviation {_fmt_sigmas(sigmas)}, position {i}), which a "
                f"bare {knob} realises and real acceptance at a constant per-position rate "
                f"gives as well; pin {rates_knob} "
                f"{','.join(engine.min_variance_rates(text, k))} (goldenal emit --engine "
                f"{rec.name} --distribution min-variance) for the min-variance one")
    if geometric_engine:
        return False, (f"nor is it {rec.title}'s geometric schedule {_fmt_list(geo)} for a bare "
                f"{knob} {text} (position {i}: {survival[i]:.3f} vs {geo[i]:.3f}, "
                f"{_fmt_sigmas(sigmas)})")
    return False, None


def _outside(survival, expected, steps, z, extra=0.0):
    """Positions off by more than ``z`` binomial standard errors, the rounding margin
    (counts rebuilt from three-decimal log rates: +-0.0005 per window) and ``extra``."""
    margin = 0.0005 + 1.0 / steps + extra
    return [i for i, (s, e) in enumerate(zip(survival, expected))
            if abs(s - e) > z * math.sqrt(e * (1 - e) / steps) + margin]


def _deviation(survival, expected, steps):
    """``(position, standard errors)`` of the largest deviation past the rounding margin;
    the observed rate's spread where the expected one has none (``inf``: neither has)."""
    margin = 0.0005 + 1.0 / steps
    worst = (0, 0.0)
    for i, (s, e) in enumerate(zip(survival, expected)):
        excess = max(0.0, abs(s - e) - margin)
        var = e * (1 - e) or s * (1 - s)
        sigmas = excess / math.sqrt(var / steps) if var > 0 else (
            0.0 if excess == 0 else math.inf)
        if sigmas > worst[1]:
            worst = (i, sigmas)
    return worst


def _fmt_sigmas(sigmas):
    return "off by more than rounding where no spread is possible" if math.isinf(sigmas) \
        else f"{sigmas:.1f} sigma"


def _match_words(profile_name, survival, expected, steps):
    """How strongly the observed profile matched the expected one, and what that shows."""
    i, sigmas = _deviation(survival, expected, steps)
    schedule = (f"{_geometric_engine()[0].title}'s geometric schedule"
                if profile_name == "geometric" else _PROFILE_WORDS[profile_name])
    words = (f"per-position profile matches {schedule} (largest "
             f"deviation {_fmt_sigmas(sigmas)}, position {i})")
    if any(e in (0.0, 1.0) for e in expected):  # no real acceptance shows exactly 0 or 1
        return words + (": the signature of a pinned knob (real acceptance does not accept "
                        "exactly all or exactly none of the drafts at a position)")
    rate = ("at a constant per-position rate" if profile_name == "geometric"
            else "with these per-position rates")
    return words + (f"; real acceptance {rate} gives this profile as well, so it does not "
                    "show that the knob took effect")


def _profile(counted, k, text, z, extra=0.0, expected=None):
    """Observed vs schedule survival; (survival, expected, ok or None, note)."""
    if not counted or k is None:
        return None, None, None, None
    rows = [o.accepted_per_position for o in counted]
    if any(r is None or len(r) != k for r in rows):
        return None, None, None, None
    steps = sum(o.drafts for o in counted)
    survival = tuple(sum(r[i] for r in rows) / steps for i in range(k))
    name = "min-variance schedule" if expected is None else "expected profile"
    if expected is None:
        expected = schedule(Decimal(text), k)
    if not _outside(survival, expected, steps, z, extra):
        return survival, expected, True, None
    i, sigmas = _deviation(survival, expected, steps)
    note = (f"per-position survival {_fmt_list(survival)} is not the {name} "
            f"{_fmt_list(expected)} (largest deviation at position {i}: {survival[i]:.3f} vs "
            f"{expected[i]:.3f}, {_fmt_sigmas(sigmas)})")
    return survival, expected, False, note


def _fmt_list(values):
    return "[" + ", ".join(f"{v:.3f}".rstrip("0").rstrip(".") if v in (0.0, 1.0) else f"{v:.3f}"
                           for v in values) + "]"


def _smooth(survival):
    """Real acceptance: every position strictly inside (0, 1) and decreasing."""
    return survival is not None and len(survival) > 1 and all(
        0.0 < s < 1.0 for s in survival) and all(a > b for a, b in zip(survival, survival[1:]))


_PROFILE_WORDS = {"min-variance": "the min-variance schedule", "given": "the expected profile"}


def _reason(ok, mean_hit, realized, text, value, tolerance, distance, steps, k, survival,
            profile_note, engine, method, match):
    over = f"over {steps} steps" if steps else "no step count: rounding only"
    where = (f"realized AL {realized:.4f} vs target {text} (tolerance +-{tolerance:.4f} {over}, "
             f"{_fmt_sigma(distance)})")
    if ok:
        return where + (f"; {match}" if match else "")
    parts = [where]
    f = int(Decimal(text) - 1)
    if not mean_hit:
        if _smooth(survival):
            parts.append(f"per-position survival {_fmt_list(survival)} decays smoothly like "
                         "real acceptance: the synthetic-acceptance knob was silently ignored")
        elif k is not None and abs(realized - (k + 1)) <= tolerance:
            parts.append("every draft was accepted: a clamp at K+1, or a value meant for a "
                         "larger K")
        elif value != 1 + f and abs(realized - (1 + f)) <= tolerance:
            parts.append(f"the realized AL is the integer part 1+{f}: the fractional part was "
                         "dropped (an integer-only parse)")
        else:
            parts.append("the knob was ignored or mis-set")
    elif profile_note:
        # the mean cannot tell a pinned knob from real acceptance that lands near the
        # target; only the per-position profile can, and only as far as it goes
        parts.append("the mean matches, but the mean alone cannot tell a pinned knob from "
                     "real acceptance near the target; the per-position profile tells them "
                     "apart where it can: "
                     + profile_note)
    recs = [_record(e) for e in engine.split(",") if e in records()]
    hints = [rec.silent_paths for rec in recs if rec.silent_paths]
    if hints and not mean_hit:
        parts.append("check " + "; ".join(hints))
    for rec in recs:
        if rec.batch_draw and method == "counts":
            # one draw per batch step: request-steps are not independent
            parts.append(f"note: {rec.title} draws one length per batch step, so the "
                         "tolerance assuming independent request-steps is too tight for "
                         "batched runs")
    return "; ".join(parts)


def _fmt_sigma(distance):
    if math.isinf(distance):
        return "off the exact schedule"
    return f"{distance:+.1f} sigma"
