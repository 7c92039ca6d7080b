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
exit codes:
  0  the value printed
  1  no committed value for the cell (the message names what exists)
  2  usage error or unreadable golden directory
"""

import sys

from goldenal.commands._selection import add_selection_arguments, selection_kwargs
from goldenal.engines import ENGINES, env_assignment


_VALUED = {"--k": "k", "--thinking": "thinking", "--draft": "draft", "--curve": "curve",
           "--variant": "variant", "--engine": "engine", "--format": "format",
           "--golden-dir": "golden_dir"}
_CHOICES = {"thinking": ("on", "off"), "engine": ENGINES, "format": ("value", "json", "env")}


class _Args:
    """What argparse would produce, for the common well-formed lookup."""

    def __init__(self, **values):
        self.__dict__.update(values)


def fast_args(argv):
    """Parse a well-formed ``lookup`` command line without importing argparse.

    Importing argparse (and ``re``, which it needs) costs most of an
    interpreter start-up, and lookup runs inside ``$(...)`` in every recipe.
    Anything unusual (help, abbreviations, repeated flags, a bad value) returns
    None, and the caller falls back to argparse for its exact messages; the
    result is otherwise identical to argparse's (a property test checks it).
    """
    values = {"model": None, "k": None, "thinking": None, "draft": None, "curve": None,
              "variant": None, "engine": None, "format": "value", "golden_dir": None}
    seen = set()
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-"):
            flag, eq, value = token.partition("=")
            name = _VALUED.get(flag)
            if name is None or (name in seen and name != "variant"):
                return None
            if not eq:
                i += 1
                if i == len(tokens):
                    return None
                value = tokens[i]
            if not value or value.startswith("-"):
                return None
            if name in _CHOICES and value not in _CHOICES[name]:
                return None
            if name == "k":
                if not (value.isascii() and value.isdigit()) or int(value) < 1:
                    return None
                value = int(value)
            if name == "variant":
                value = (values["variant"] or []) + [value]
            values[name] = value
            seen.add(name)
        elif values["model"] is None:
            values["model"] = token
        else:
            return None
        i += 1
    if values["k"] is None or values["thinking"] is None:
        return None
    return _Args(run=run, **values)


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
