"""Plan a measurement: the requests per cell an interval of a stated half-width needs.

    goldenal plan measurements/pilot-2026-12 --half-width 0.05
    goldenal plan measurements/pilot-2026-12 --half-width 0.05 --runs 10 --format json

PILOT is a run directory (as for `goldenal fit`) with per-request records,
e.g. 20-50 requests per cell from `goldenal measure`.  From each cell's
requests the plan estimates the spread of a request's accepted drafts around
the cell's ratio and prints the requests whose interval half-width is at most
--half-width AL (Student t, n - 1 degrees of freedom, at least 10 requests),
and the most any cell needs.  Where the pilot's requests split into some that
accept every draft and some short of K, the plan asks at least for enough
requests that 10 fall short of K with 90% probability (with fewer, the
interval rests on those few), and says so.  --runs N (10 or more)
plans N independent runs (e.g. server logs of a collector without single
requests) and the requests each needs; a pilot of 10 or more runs (files)
plans in runs.  Log windows alone show no single request and cannot be
planned from (docs/statistics.md, "Planning a measurement", gives the
simulator's numbers).

stdout: a table per cell and "needed: N requests per cell" (--format json:
the record).

In Python: goldenal.plan_measurement(goldenal.load_run(path), half_width=0.05).
"""

EXIT_CODES = """\
  0  planned
  1  no cell of the pilot can be planned from (the reasons are printed)
  2  unreadable pilot or bad flags
"""

import math
import sys

from goldenal.core.errors import EXIT_OK, EXIT_REFUSED


def _runs(text):
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 10:
        raise argparse.ArgumentTypeError(f"must be 10 or more (fewer independent runs give no "
                                         f"interval), got {value}")
    return value


def configure(parser):
    from goldenal.commands._selection import _checked, _level
    from goldenal.commands.fit import add_identity_arguments

    parser.add_argument("pilot", nargs="+", metavar="PILOT", help="pilot run directory")
    half_width = _checked(float, lambda v: 0 < v < float("inf"), "a positive number of AL")
    parser.add_argument("--half-width", type=half_width, required=True, metavar="AL",
                        help="target half-width of every cell's interval, in AL (e.g. 0.05)")
    parser.add_argument("--runs", type=_runs, metavar="N",
                        help="split the requests into N (>= 10) independent runs")
    parser.add_argument("--confidence-level", type=_level, default=0.95, metavar="LEVEL",
                        help="level of the planned intervals (default 0.95)")
    add_identity_arguments(parser)
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="json: the plan of every cell")


def render_text(plan):
    pct = f"{100 * plan.confidence_level:g}%"
    out = [f"plan: {pct} interval of half-width {plan.half_width:g} AL"
           + (f", requests split into {plan.runs} runs" if plan.runs else ""),
           f"{'thinking':<8} {'K':>2}  {'pilot':>12}  {'half-width now':>14}  "
           f"{'needed':>16}  {'gives':>7}"]
    for c in plan.cells:
        now = "-" if c.pilot_half_width is None else f"{c.pilot_half_width:.3f}"
        pilot = f"{c.pilot_units} {c.unit_kind}" if c.unit_kind else "-"
        planned = c.units_needed is not None
        needed = f"{c.units_needed} {c.unit_kind}" if planned else "-"
        gives = f"{c.planned_half_width:.3f}" if planned else "-"
        out.append(f"{c.thinking or '-':<8} {c.k:>2}  {pilot:>12}  {now:>14}  {needed:>16}  "
                   f"{gives:>7}")
    out += [f"not planned: {reason}" for reason in dict.fromkeys(c.reason for c in plan.cells
                                                                  if c.reason)]
    out += [f"{c.thinking or '-'} K={c.k}: {c.note}" for c in plan.cells if c.note]
    if plan.needed is not None:
        each = plan.runs and math.ceil(plan.needed / plan.runs)
        out.append(f"needed: {plan.needed} {plan.unit_kind} per cell"
                   + (f" ({plan.runs} runs of {each} requests)" if plan.runs else ""))
    return "\n".join(out) + "\n"


def run(args):
    from goldenal.commands._output import print_result
    from goldenal.commands.fit import identity_from_args
    from goldenal.stats.output import load_runs
    from goldenal.stats.plan import plan_measurement

    pilot = load_runs(args.pilot, identity=identity_from_args(args))
    plan = plan_measurement(pilot, half_width=args.half_width,
                            confidence_level=args.confidence_level, runs=args.runs)
    print_result(args.format == "json", plan.to_dict, lambda: render_text(plan))
    if plan.needed is None:
        print("error: no cell of the pilot can be planned from; measure a pilot with "
              "per-request records (goldenal measure), see docs/statistics.md, \"Planning a "
              "measurement\"", file=sys.stderr)
        return EXIT_REFUSED
    return EXIT_OK
