"""Show one curve: its identity, provenance and the K x thinking-mode matrix.

    goldenal show minimaxm3_eagle3_gqa
    goldenal show minimax-m3 --draft Inferact/MiniMax-M3-EAGLE3-GQA
    goldenal show kimi-k3 --variant probabilistic

NAME is a curve id or anything lookup takes as its model (a model key, an HF
id, an alias); --draft and --variant pick one of a model's curves.

In Python: goldenal.load_registry()["minimaxm3_eagle3_gqa"].to_frame(), or
goldenal.golden.policy.resolve_curve(registry, "minimax-m3", draft=...) for a model.
"""

EXIT_CODES = """\
  0  shown
  1  no such curve, or several match (the message names them)
  2  usage error or unreadable golden directory
"""

from goldenal.commands._selection import add_curve_arguments, add_golden_dir_argument, golden_dir


def configure(parser):
    parser.add_argument("name", metavar="NAME", nargs="?",
                        help="curve id, or a model key, HF id or alias (as for lookup)")
    add_curve_arguments(parser)
    add_golden_dir_argument(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")


def render(curve):
    modes = [m for m in ("on", "off") if curve.cells.get(m)]
    ks = sorted({k for m in modes for k in curve.cells[m]})
    head = ", ".join(curve.draft) or "- (none: native MTP or draft in the checkpoint)"
    variant = ", ".join(f"{k}={v}" for k, v in sorted(curve.variant.items()))
    out = [f"{label:<10}{value}" for label, value in (
        ("curve", curve.id), ("model", curve.model), ("method", curve.method or "?"),
        ("head", head), ("variant", variant), ("aliases", ", ".join(curve.aliases)),
        ("source", curve.source)) if value]
    out.append("\n K" + "".join(f"  {'thinking_' + m:>12}" for m in modes))
    for k in ks:
        out.append(f"{k:>2}" + "".join(f"  {curve.cells[m].get(k, '-'):>12}" for m in modes))
    return "\n".join(out) + "\n"


def run(args):
    from goldenal.commands._output import print_result
    from goldenal.golden.policy import resolve_curve
    from goldenal.golden.registry import load_registry

    registry = load_registry(golden_dir(args))
    curve = resolve_curve(registry, args.name, draft=args.draft, curve=args.curve,
                          variant=args.variant)
    print_result(args.format == "json", curve.to_dict, lambda: render(curve))
    return 0
