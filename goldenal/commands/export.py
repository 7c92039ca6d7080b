"""Export one cell, e.g. as a speculation_profile.json (schema "1.0").

    goldenal export minimaxm3_eagle3 --k 3 --thinking on --format speculation-profile
    goldenal export measurements/run-2026-11 --k 3 --thinking on --out profile.json

CURVE is a curve id (of --golden-dir), a curve file, or a run directory
(loaded and refused as `goldenal fit` does, then fitted; simulated runs only
with --allow-simulated, exported as "measured": false).  The profile carries
marginal_accept_rates (S(i), read by vLLM's synthetic sampler) and
conditional_accept_rates (a(i), read by Dynamo's mocker and AIConfigurator),
the per-step mean, accept_length_model (chain_analytic for chain drafting,
measured_per_k for DSpark/DFlash/tree) and a validation block.  Vectors are
measured from counts (a run, or the curve's <curve-id>.distribution.json);
without counts a chain curve gives the implied survival AL(i) - AL(i-1),
refused when impossible (a negative marginal, a conditional rate above 1;
--monotone exports its isotonic fit instead, rescaled so 1 + sum equals the
committed AL), a block-parallel cell the constant rate reproducing its mean.

In Python: goldenal.apply.export.export_profile(curve, k=3, thinking="on").
"""

EXIT_CODES = """\
  0  exported
  1  no such curve or cell
  2  usage error or unreadable input
"""

import json
import sys

from goldenal.commands._selection import _positive_int, add_golden_dir_argument, golden_dir
from goldenal.commands.fit import (add_fit_arguments, add_identity_arguments, fit_kwargs,
                                   identity_from_args)


def configure(parser):
    parser.add_argument("curve", metavar="CURVE", help="curve id, curve file or run directory")
    parser.add_argument("--k", required=True, type=_positive_int, metavar="K",
                        help="num_speculative_tokens of the cell")
    parser.add_argument("--thinking", required=True, choices=["on", "off"],
                        help="thinking mode of the cell")
    parser.add_argument("--format", choices=["speculation-profile"], default="speculation-profile",
                        help="output format (speculation_profile.json, schema 1.0)")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    parser.add_argument("--monotone", action="store_true",
                        help="chain curves without counts: the isotonic survival profile, "
                             "rescaled so 1 + sum is the committed AL")
    parser.add_argument("--allow-simulated", action="store_true",
                        help='accept a simulated run (the profile then says "measured": false)')
    add_golden_dir_argument(parser)
    add_identity_arguments(parser)
    add_fit_arguments(parser)


def run(args):
    from goldenal.commands._output import check_destination, warnings_to_stderr
    from goldenal.apply.export import export_profile, write_profile

    check_destination(args.out, "--out")
    with warnings_to_stderr():
        profile = export_profile(args.curve, k=args.k, thinking=args.thinking,
                                 golden_dir=golden_dir(args), monotone=args.monotone,
                                 fit_kwargs=fit_kwargs(args), identity=identity_from_args(args),
                                 allow_simulated=args.allow_simulated)
    if args.out:
        write_profile(profile, args.out)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(json.dumps(profile, indent=2, default=str) + "\n")
    return 0
