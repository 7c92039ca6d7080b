"""Plot golden curves to a PNG, SVG or PDF file (the format follows the extension).

Kinds:
  al         AL against K, a line per curve and thinking mode (solid = on,
             dashed = off), committed values as filled markers, the ceiling
             AL = K + 1 dotted.
  positions  per-position survival S(i) and conditional acceptance a_i of one
             cell (measured, with intervals, for a run; implied by AL(i) -
             AL(i-1) for a committed curve) beside vLLM's minimum-variance
             schedule for the same AL; a panel per curve and thinking mode.
             --k picks the cell (default: the largest K whose implied profile
             is possible).  Values no acceptance process can have (survival
             below 0, conditional acceptance above 1) are not drawn, and the
             figure says so.
  diff       the second curve minus the first, cell by cell, with the interval
             of each difference where a side has a standard error (a run, or
             a curve with its distribution file), else the +-0.01 bound of
             two-decimal rounding.

CURVE is a curve id (see `goldenal list`), a model name (all its curves), a
curve file (.yaml, read with its golden directory), or a run directory,
loaded and refused as `goldenal fit` does (simulated runs only with
--allow-simulated) and fitted (seed 0), drawn with its intervals.

Examples:
  goldenal plot minimaxm3_eagle3 minimaxm3_eagle3_gqa --out heads.png
  goldenal plot glm5.2_mtp --kind positions --k 4 --thinking on --out pos.svg
  goldenal plot minimaxm3_eagle3 minimaxm3_eagle3_gqa --kind diff --out d.pdf
  goldenal plot minimaxm3_eagle3 measurements/minimaxm3-eagle3-sim-2026-11 --allow-simulated \\
      --out run.png

In Python: goldenal.plot.plot_al_curve, plot_positions, plot_diff, figure.
"""

EXIT_CODES = """\
  0  plotted
  1  no such curve, cell or thinking mode
  2  usage error, unreadable input, or an output format matplotlib cannot write
"""

import sys

from goldenal.commands._selection import add_golden_dir_argument
from goldenal.core.errors import UsageError


def configure(parser):
    parser.add_argument("curves", nargs="+", metavar="CURVE",
                        help="curve id, model name (all of its curves), curve file or run "
                             "directory")
    parser.add_argument("--kind", choices=("al", "positions", "diff"), default="al",
                        help="what to draw (default: al)")
    parser.add_argument("--thinking", choices=("on", "off"),
                        help="one thinking mode only (default: both)")
    parser.add_argument("--k", type=int, metavar="K",
                        help="cell of --kind positions (default: the largest K whose "
                             "implied profile is possible)")
    add_golden_dir_argument(parser)
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="output file: .png, .svg or .pdf")
    parser.add_argument("--allow-simulated", action="store_true",
                        help="accept a simulated run directory (refused by default, as by fit)")


def resolve_curves(registry, names, *, allow_simulated=False):
    """What each CURVE names, once each: a run's fit, a file's curve, an id's, a model's all."""
    import os

    from goldenal.commands._output import warnings_to_stderr
    from goldenal.core.errors import UnknownCurve
    from goldenal.golden.policy import candidates
    from goldenal.golden.registry import load_registry
    from goldenal.stats import fit
    from goldenal.stats.output import load_run_for_fit

    out = []
    for name in names:
        if os.path.isdir(name):
            with warnings_to_stderr(prefix=f"{name}: "):
                out.append(fit(load_run_for_fit(name, allow_simulated=allow_simulated), rng=0))
            continue
        if os.path.isfile(name) and name.endswith((".yaml", ".yml")):
            directory, base = os.path.split(os.path.abspath(name))
            found = [c for c in load_registry(directory) if c.file == base][:1]
            if not found:
                raise UnknownCurve(f"no curve of {directory} is stored in {base}", path=name)
        else:
            try:
                found = candidates(registry, curve=name)
            except UnknownCurve:
                try:
                    found = candidates(registry, name)
                except UnknownCurve:
                    ids = ", ".join(sorted(c.id for c in registry))
                    raise UnknownCurve(f"no curve or model {name!r} (curves: {ids})") from None
        out += [curve for curve in found if curve not in out]
    return out


def run(args):
    import os

    from goldenal import plot
    from goldenal.stats.diff import diff_curves
    from goldenal.golden.registry import load_registry

    ext = os.path.splitext(args.out)[1].lower().lstrip(".")
    if ext not in plot.FORMATS:
        raise UsageError(f"--out must end in .png, .svg or .pdf, got {args.out!r}")
    if args.k is not None and args.kind != "positions":
        raise UsageError("--k applies to --kind positions only")
    if args.k is not None and args.k < 1:
        raise UsageError(f"--k must be a positive integer, got {args.k}")
    registry = load_registry(args.golden_dir)
    curves = resolve_curves(registry, args.curves, allow_simulated=args.allow_simulated)
    if args.kind == "diff" and len(curves) != 2:
        ids = ", ".join(plot.curve_name(c) for c in curves)
        raise UsageError(f"--kind diff needs exactly two curves, got {len(curves)} ({ids})")
    try:
        # colours by registry order: a curve looks the same in every figure
        colors = plot.stable_colors(sorted(registry.curves),
                                    [plot.curve_name(c) for c in curves])
        fig = plot.figure(curves, kind=args.kind, thinking=args.thinking, k=args.k,
                          diff=diff_curves, golden_dir=registry.directory, colors=colors)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    plot.save_figure(fig, args.out)
    print(args.out)
    print(f"wrote {args.kind} plot of {', '.join(plot.curve_name(c) for c in curves)}",
          file=sys.stderr)
    return 0
