"""Markdown reports (``diff_markdown``, ``fit_markdown``) for pull requests and CI: they say
how each interval was computed, so a reviewer knows which are optimistic."""

from __future__ import annotations

import math

from goldenal.stats.results import INTERVAL_METHODS, level_label


def _fmt(x, spec="+.3f"):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    digits = int(spec.rstrip("f").split(".")[1])
    return format(round(x, digits) + 0.0, spec)  # no "-0.000"


def _methods_section(methods):
    methods = [m for m in dict.fromkeys(methods) if m]
    return (["", "### How the intervals were computed", ""]
            + [f"- **{m}**: {INTERVAL_METHODS.get(m, m)}" for m in methods]) if methods else []


def diff_markdown(diff):
    """Markdown report of a curve comparison."""
    pct = level_label(diff.confidence_level)
    out = [f"## goldenal diff: `{diff.a.label}` → `{diff.b.label}`", "",
           f"A is {diff.a.kind}, B is {diff.b.kind}; delta = B − A; a cell is *outside* when "
           f"|delta| exceeds the {pct} band of the combined standard error.", "",
           f"| thinking | K | A | B | B − A | ± {pct} | z | verdict |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in diff.rows:
        verdict = f"**{r.status}**" if r.status == "outside" else r.status
        band = _fmt(diff.quantile * r.se, ".3f") if r.se else "–"
        out.append(f"| {r.thinking} | {r.k} | {r.a or '–'} | {r.b or '–'} | {_fmt(r.delta)} | "
                   f"{band} | {_fmt(r.z, '+.1f')} | {verdict} |")
    if diff.judged:
        chance = diff.judged * (1 - diff.confidence_level)
        out += ["", f"{diff.judged} cells judged; about {chance:.1f} of them would fall "
                "outside by chance alone."]
    out += ["", "### Flagged cells", ""]
    out += [f"- thinking {r.thinking}, K={r.k}: {r.a} → {r.b} ({r.delta:+.3f}, {r.z:+.1f} SE)"
            for r in diff.outside] or ["None: every difference with an interval is inside it."]
    if diff.no_interval:
        out += ["", f"{diff.no_interval} cells have no interval on either side (committed "
                "values without a distribution file); their deltas are shown but not judged."]
    out += _methods_section(m for r in diff.rows for m in (r.a_method, r.b_method))
    return "\n".join(out) + "\n"


def fit_markdown(curvefit):
    """Markdown report of a fitted curve: cells, cross-K model, flags, methods."""
    pct = level_label(curvefit.confidence_level)
    ident = curvefit.identity
    run = getattr(curvefit, "run_id", None)
    run = f" from run `{run}`" if run and run != curvefit.curve_id else ""
    out = [f"## goldenal fit: `{curvefit.curve_id or '?'}`{run}", ""]
    who = [str(ident.get("model") or "?"), str(ident.get("method") or "?")]
    if ident.get("draft"):
        who.append("draft " + ", ".join(ident["draft"]))
    out.append(" · ".join(who) + ("  (simulated run)" if ident.get("simulated") else ""))
    out += ["", f"| thinking | K | AL | estimate | {pct} interval | method | steps | "
            "model AL | z |", "|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for (thinking, k), cell in curvefit.cells.items():
        model = curvefit.models.get(thinking)
        pred = model.predicted.get(k) if model is not None else None
        z = getattr(model, "z_scores", {}).get(k) if model is not None else None
        if cell.failed:
            out.append(f"| {thinking} | {k} | N/A | – | – | – | – | "
                       f"{_fmt(pred, '.3f')} | – |")
            continue
        lo, hi = cell.confidence_interval
        interval = f"[{lo:.3f}, {hi:.3f}]" if math.isfinite(lo) else "–"
        out.append(f"| {thinking} | {k} | {cell.text} | {cell.mean_acceptance_length:.4f} | "
                   f"{interval} | {cell.interval_method} | {cell.n_steps or '–'} | "
                   f"{_fmt(pred, '.3f')} | {_fmt(z, '+.1f')} |")
    out += ["", "### Cross-K model", ""]
    if not curvefit.chain:
        if ident.get("method"):
            out.append(f"{ident['method']}: block-parallel or tree drafting re-plans the draft "
                       "when K changes, so every cell stands alone (no pooled model).")
        else:
            out.append("Drafting method unknown: every cell stands alone (give the method to "
                       "pool the cells of a chain-drafting curve).")
    for thinking, model in curvefit.models.items():
        if model is None:
            continue
        kind = ("pooled chain model (survival censored at K)" if model.kind == "chain"
                else "monotone survival profile of the means")
        out.append(f"- thinking {thinking}: {kind}; {model.message}")
        for p in model.parametric:
            verdict = "describes the data" if p.adequate else "does not describe the data"
            params = ", ".join(f"{k}={v:.4f}" for k, v in p.params.items())
            stat = f"{p.statistic_name} = {p.statistic:.3g}"
            if p.pvalue is not None:
                stat += f", df {p.df}, p = {p.pvalue:.3g}"
            out.append(f"  - {p.form} ({params}): {stat}; {verdict}")
    out += ["", "### Flagged cells", ""]
    out += [f"- {f.message}" for f in curvefit.flags] or [
        "None: every cell agrees with the cross-K model within its uncertainty."]
    out += ["", "Committed values are the measured cells (two decimals, `printf \"%.2f\"` "
            "rounding); model values are diagnostics."]
    out += _methods_section(c.interval_method for c in curvefit.cells.values())
    if curvefit.warnings:
        out += ["", "### Warnings", ""] + [f"- {w}" for w in curvefit.warnings]
    return "\n".join(out) + "\n"
