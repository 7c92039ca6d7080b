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
    out = [f"curve     {curve.id}", f"model     {curve.model}",
           f"method    {curve.method or '?'}",
           f"head      {', '.join(curve.draft) or '- (none: native MTP or draft in the checkpoint)'}"]
    if curve.variant:
        out.append("variant   " + ", ".join(f"{k}={v}" for k, v in sorted(curve.variant.items())))
    if curve.aliases:
        out.append(f"aliases   {', '.join(curve.aliases)}")
    if curve.source:
        out.append(f"source    {curve.source}")
    out.append("")
    header = ["K"] + [f"thinking_{m}" for m in modes]
    out.append("  ".join(h.rjust(12) if i else h.rjust(2) for i, h in enumerate(header)))
    for k in ks:
        cells = [curve.cells[m].get(k, "-") for m in modes]
        out.append(str(k).rjust(2) + "  " + "  ".join(c.rjust(12) for c in cells))
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
