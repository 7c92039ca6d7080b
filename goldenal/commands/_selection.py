"""The cell-selection flags shared by lookup, emit, inject and verify, and argparse types."""

import os


def add_selection_arguments(parser, *, model_flag=False, k_required=True,
                            thinking_required=True):
    """Lookup's selection flags (``--model`` where positionals are files)."""
    model_help = "model key, HF id or InferenceX prefix (case-insensitive); optional with --curve"
    if model_flag:
        parser.add_argument("--model", "-m", metavar="MODEL", help=model_help)
    else:
        parser.add_argument("model", nargs="?", metavar="MODEL", help=model_help)
    parser.add_argument("--k", required=k_required, type=_positive_int, metavar="K",
                        help="num_speculative_tokens" + ("" if k_required else
                                                         " (when the files do not state it)"))
    parser.add_argument("--thinking", required=thinking_required, choices=["on", "off"],
                        help="thinking mode served" + ("" if thinking_required else
                                                       " (needed to select a golden cell)"))
    add_curve_arguments(parser)
    add_golden_dir_argument(parser)


def add_curve_arguments(parser):
    """--draft, --curve, --variant: which of a model's curves."""
    parser.add_argument("--draft", metavar="HEAD",
                        help="draft head HF id, or a local path ending in it")
    parser.add_argument("--curve", metavar="ID",
                        help="curve id (file stem), e.g. minimaxm3_eagle3_gqa")
    parser.add_argument("--variant", action="append", metavar="KEY=VALUE",
                        help="sampling variant, e.g. draft_sample_method=probabilistic or "
                             "just probabilistic; 'none' for a curve without one (repeatable)")


def add_distribution_argument(parser, default_note=""):
    parser.add_argument("--distribution", nargs="?", const="curve", default=None,
                        choices=("curve", "min-variance"),
                        help="vLLM and llama.cpp: per-position rates instead of the length; "
                             "curve (the default): the curve's own profile; min-variance: the "
                             "schedule vLLM's length realises" + default_note)


def add_golden_dir_argument(parser):
    parser.add_argument("--golden-dir", metavar="DIR", default=None,
                        help="golden directory, an InferenceX one as it is (default: "
                             "$GOLDENAL_DIR, else the nearest golden_al_distribution/ here or "
                             "above, else the packaged curves)")


def _checked(convert, ok, what):
    """An argparse type: ``convert(text)`` if ``ok`` of it, else "expected WHAT, got TEXT"."""
    def parse(text):
        import argparse

        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value
    return parse


def _digits(text):
    if not text.strip().isdigit():
        raise ValueError(text)
    return int(text)


_INF = float("inf")  # the float bounds below also refuse nan (no comparison holds)
_positive_int = _checked(_digits, lambda v: v >= 1, "a positive integer")
_non_negative_int = _checked(_digits, lambda v: v >= 0, "an integer >= 0")
_resamples = _checked(_digits, lambda v: v >= 100, "an integer >= 100")  # fewer: no interval
_level = _checked(float, lambda v: 0 < v < 1, "a number between 0 and 1")
_positive_float = _checked(float, lambda v: 0 < v < _INF, "a positive number")
_non_negative_float = _checked(float, lambda v: 0 <= v < _INF, "a non-negative number")


def selection_kwargs(args):
    """Keyword arguments for :func:`goldenal.lookup` from parsed flags."""
    return {"k": args.k, "thinking": args.thinking, "draft": args.draft, "curve": args.curve,
            "variant": args.variant, "golden_dir": golden_dir(args)}


def golden_dir(args):
    return args.golden_dir or os.environ.get("GOLDENAL_DIR") or None


def given(args, names):
    """``{name: args.name}`` for the space-separated ``names``: flags passed on as they are."""
    return {name: getattr(args, name) for name in names.split()}
