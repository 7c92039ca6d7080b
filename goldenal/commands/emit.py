"""Print the golden AL as one engine's config fragment.

Looks one committed cell up (same selection flags as `goldenal lookup`) and
writes it the way the engine reads it:

    goldenal emit minimax-m3 --draft Inferact/MiniMax-M3-EAGLE3 --k 3 --thinking on \\
        --engine trtllm                 # AL - 1 = 1.83 in TensorRT-LLM's knob
    goldenal emit dsv4 --k 3 --thinking on --engine vllm --format json \\
        --spec-config '{"method":"mtp","num_speculative_tokens":3}'
    goldenal emit glm5.2 --k 3 --thinking on --engine sglang --format yaml

ENGINE_TABLE

Formats: shell (export lines), env (.env lines), json, yaml (an environment
mapping, or speculative-config: '<json>'), args (command-line arguments).
The fragment goes to stdout; notes (llama.cpp's length form) and refusals to
stderr (exit 1 for refusals).

In Python: goldenal.emit(model, engine="vllm", k=3, thinking="on", ...).
"""

EXIT_CODES = """\
  0  printed
  1  refused: no committed value for the cell, or --spec-config contradicting --k
  2  usage error or unreadable input
"""

import sys

from goldenal.commands._selection import (add_distribution_argument, add_selection_arguments,
                                          given, selection_kwargs)
from goldenal.engines import ENGINES, MODULES
from goldenal.engines.base import FORMATS

# what each engine's fragment sets, as its adapter says (``emit_help``)
__doc__ = __doc__.replace("ENGINE_TABLE", "\n".join(
    f"  {name}: " + m.ADAPTER.emit_help.replace("\n", "\n      ")
    for name, m in MODULES.items()))
_RATE = [m.ADAPTER for m in MODULES.values() if "rate" in m.ADAPTER.forms]
_LENGTH = [m.ADAPTER for m in MODULES.values() if m.ADAPTER.default_form == "rates"]


def configure(parser):
    add_selection_arguments(parser)
    parser.add_argument("--engine", required=True, choices=ENGINES, help="engine to spell for")
    parser.add_argument("--format", default="shell", choices=FORMATS,
                        help="output format (default: shell)")
    parser.add_argument("--spec-config", metavar="JSON",
                        help="vLLM: the rest of the speculative-config JSON to merge into")
    add_distribution_argument(parser, " (llama.cpp's default)")
    parser.add_argument("--rate", action="store_true", help="; ".join(
        f"{a.record.title}: {a.record.knob_for('rate')} (AL-1)/K instead of the length"
        for a in _RATE))
    parser.add_argument("--length", action="store_true", help="; ".join(
        f"{a.record.title}: {a.knob} AL (a geometric schedule) instead of the min-variance "
        f"{a.record.knob_for('rates')}" for a in _LENGTH))
    parser.add_argument("--dspark-config", metavar="JSON",
                        help="ATOM: the --dspark-config served (refused with confidence_schedule)")


def run(args):
    from goldenal.apply.emit import emit

    fragment = emit(args.model, **selection_kwargs(args),
                    **given(args, "engine format spec_config distribution dspark_config"),
                    form="rate" if args.rate else "length" if args.length else None)
    print(fragment.text)
    for note in fragment.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
