"""Print the committed golden AL for one cell (model x draft head x thinking x K).

stdout carries the value alone, spelled exactly as committed, so recipes can write

    SYNTHETIC_ACCEPT_LEN=$(goldenal lookup minimax-m3 \\
        --draft Inferact/MiniMax-M3-EAGLE3-GQA --k 3 --thinking on)     # 2.78

The policy is exact: only committed cells, no interpolation, extrapolation or
fallback to another head, variant or thinking mode.  A refusal goes to stderr
and names what exists (exit 1); malformed flags exit 2.

  --engine trtllm      prints the value its knob takes (AL - 1: accepted drafts)
  --format env         NAME=value of the engine's environment knob, else
                       SYNTHETIC_ACCEPTANCE_LENGTH (InferenceX runner)
  --format json        the value with the cell's identity and provenance

In Python: goldenal.lookup(model, k=3, thinking="on", draft=...).
"""

EXIT_CODES = """\
  0  the value printed
  1  no committed value for the cell (the message names what exists)
  2  usage error or unreadable golden directory
"""

import sys
from types import SimpleNamespace  # loaded at interpreter start-up: costs nothing

from goldenal.commands._selection import add_selection_arguments, selection_kwargs
from goldenal.engines import ENGINES, env_assignment


_VALUED = {"--k": "k", "--thinking": "thinking", "--draft": "draft", "--curve": "curve",
           "--variant": "variant", "--engine": "engine", "--format": "format",
           "--golden-dir": "golden_dir"}
_CHOICES = {"thinking": ("on", "off"), "engine": ENGINES, "format": ("value", "json", "env")}


def fast_args(argv):
    """Parse a plain ``lookup`` command line without argparse (a start-up cost), else None.

    The result is argparse's (a property test checks it); argparse reports anything unusual."""
    values = dict.fromkeys(("model", "k", "thinking", "draft", "curve", "variant", "engine",
                            "golden_dir"))
    values["format"] = "value"
    seen = set()
    tokens = iter(argv)
    for token in tokens:
        if not token.startswith("-"):
            if values["model"] is not None:
                return None
            values["model"] = token
            continue
        flag, eq, value = token.partition("=")
        name = _VALUED.get(flag)
        if name is None or (name in seen and name != "variant"):
            return None
        if not eq:
            value = next(tokens, None)
        if not value or value.startswith("-") or value not in _CHOICES.get(name, (value,)):
            return None
        if name == "k":
            if not (value.isascii() and value.isdigit()) or int(value) < 1:
                return None
            value = int(value)
        elif name == "variant":
            value = (values["variant"] or []) + [value]
        values[name] = value
        seen.add(name)
    if values["k"] is None or values["thinking"] is None:
        return None
    return SimpleNamespace(run=run, **values)  # what argparse would produce


def configure(parser):
    add_selection_arguments(parser)
    parser.add_argument("--engine", choices=ENGINES,
                        help="print the value that engine's knob takes")
    parser.add_argument("--format", choices=["value", "json", "env"], default="value",
                        help="output format (default: value)")


def run(args):
    from goldenal.api import lookup

    value = lookup(args.model, engine=args.engine, **selection_kwargs(args))
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(value.to_dict(), indent=2) + "\n")
    elif args.format == "env":
        sys.stdout.write(env_assignment(args.engine, value.text) + "\n")
    else:
        sys.stdout.write(value.knob_value + "\n")
    return 0
