"""Check that a synthetic-acceptance run realized its golden AL.

Reads the realized AL back from a run directory or measurement files and
compares it with the golden target, selected as `goldenal lookup` selects it.
The tolerance follows from the step count and the engine's per-step schedule
(f or f+1 accepted drafts per step; 4 sigma by default, plus the target's
two-decimal rounding).  Per-position counts, where present, must follow the
min-variance schedule [1]*f, p, 0...: a smooth decaying profile is real
acceptance (the knob was silently ignored).  --profile names another: "curve"
(the curve's own, as emit/inject --distribution write it), "geometric" (what
llama.cpp realises for its bare length knob), rates P0,P1,... as pinned, or
"none" (the mean only).  Hitting the mean but not the profile is a miss that
says so.

    goldenal verify measurements/m3-throughput/ --model minimax-m3 \\
        --draft Inferact/MiniMax-M3-EAGLE3 --k 3 --thinking on
    goldenal verify server.log --target 2.83 --k 3
    goldenal verify run/ --model goldenal-tiny --k 3 --thinking on --profile curve

stdout: "hit: ...", "missed: ..." or "incomplete: N windows refused (first:
path:line: reason) ..." (one line; --format json for the record).

In Python: goldenal.verify(run_or_paths, target, k=K) -> Verification.
"""

EXIT_CODES = """\
  0  hit
  1  missed, or no golden value for the cell
  2  unreadable input, or refused windows (--allow-incomplete judges the readable
     ones)
"""

from goldenal.commands._selection import (_non_negative_float, _positive_float,
                                          add_selection_arguments, golden_dir, selection_kwargs)
from goldenal.engines import ENGINES
from goldenal.core.errors import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, UsageError


def configure(parser):
    parser.add_argument("paths", nargs="+", metavar="RUN",
                        help="run directory (run.yaml or collector layout) or measurement files")
    # --thinking is needed with --model/--curve, not with --target
    add_selection_arguments(parser, model_flag=True, thinking_required=False)
    parser.add_argument("--target", metavar="AL",
                        help="verify against this AL instead of looking one up")
    parser.add_argument("--engine", choices=ENGINES,
                        help="engine whose schedule to assume (default: from the data)")
    parser.add_argument("--z", type=_positive_float, default=4.0,
                        help="allowed distance in standard errors (default 4)")
    parser.add_argument("--slack", type=_non_negative_float, default=0.0,
                        help="extra absolute allowance for systematic end-of-request effects "
                             "(default 0)")
    parser.add_argument("--profile", metavar="P", default="min-variance",
                        help="expected per-position survival: min-variance (default), curve (the "
                             "curve's own profile; needs --model/--curve), geometric (llama.cpp's "
                             "length knob), none (mean only), or rates P0,P1,...")
    parser.add_argument("--allow-incomplete", action="store_true",
                        help="judge the readable windows even when some were refused "
                             "(default: verdict 'incomplete', exit 2)")
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="one line (default) or the Verification record as JSON")


def run(args):
    from goldenal.commands._output import print_result
    from goldenal.measuring.verify import verify

    if args.target is not None:
        target = args.target
    else:
        if args.model is None and args.curve is None:
            raise UsageError("give --model (or --curve) and --thinking to look the target up, "
                             "or --target AL")
        if args.thinking is None:
            raise UsageError("--thinking is required to look the target up")
        from goldenal.api import lookup

        target = lookup(args.model, **selection_kwargs(args))
    paths = args.paths[0] if len(args.paths) == 1 else args.paths
    profile = args.profile
    if profile == "curve":
        if args.target is not None:
            raise UsageError("--profile curve needs the golden cell (--model or --curve), not "
                             "--target")
        from goldenal.apply.distribution import acceptance_rates
        from goldenal.golden.registry import load_registry

        registry = load_registry(golden_dir(args))
        profile = acceptance_rates(registry.curves[target.curve], k=target.k,
                                   thinking=target.thinking)
    elif profile not in ("min-variance", "geometric", "none"):
        try:
            profile = [float(x) for x in profile.split(",")]
        except ValueError:
            raise UsageError(f"--profile must be min-variance, curve, geometric, none or rates "
                             f"P0,P1,..., got {args.profile!r}") from None
    try:
        result = verify(paths, target, k=args.k, thinking=args.thinking, engine=args.engine,
                        z=args.z, slack=args.slack, allow_incomplete=args.allow_incomplete,
                        profile=profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print_result(args.format == "json", result.to_dict, lambda: f"{result}\n")
    if result.verdict == "incomplete":
        return EXIT_USAGE
    return EXIT_OK if result.hit else EXIT_REFUSED
