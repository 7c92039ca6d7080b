"""The cell-selection flags shared by lookup, emit, inject and verify, and argparse types."""

import os


def add_selection_arguments(parser, *, model_flag=False, k_required=True,
                            thinking_required=True):
    """Lookup's selection flags: MODEL, --k, --thinking, --draft, --curve, --variant, --golden-dir.

    Commands whose positional arguments are files take the model as ``--model``
    (``model_flag``); those that read K or the thinking mode from the files
    (inject, verify) make them optional.
    """
    model_help = ("model key, HF id or InferenceX prefix (case-insensitive); "
                  "optional with --curve")
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
    parser.add_argument("--curve", metavar="ID", help="curve id (file stem), e.g. "
                                                      "minimaxm3_eagle3_gqa")
    parser.add_argument("--variant", action="append", metavar="KEY=VALUE",
                        help="sampling variant, e.g. draft_sample_method=probabilistic or "
                             "just probabilistic; 'none' for a curve without one (repeatable)")


def add_golden_dir_argument(parser):
    parser.add_argument("--golden-dir", metavar="DIR", default=None,
                        help="golden directory (default: $GOLDENAL_DIR, else the nearest "
                             "golden_al_distribution/ in the current directory or its parents, "
                             "else the packaged curves); an InferenceX golden_al_distribution/ "
                             "works as it is")


def _positive_int(text):
    import argparse

    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _non_negative_int(text):
    import argparse

    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return int(text)


def _resamples(text):
    """``--n-resamples``: an integer of at least 100 (fewer make no interval)."""
    import argparse

    if not text.strip().isdigit() or int(text) < 100:
        raise argparse.ArgumentTypeError(f"expected an integer >= 100, got {text!r}")
    return int(text)


def _level(text):
    """``--confidence-level``: a number strictly between 0 and 1."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def _finite_float(text, *, positive=False, non_negative=False):
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (positive and value <= 0) or (non_negative and value < 0):
        kind = "a positive" if positive else "a non-negative" if non_negative else "a finite"
        raise argparse.ArgumentTypeError(f"expected {kind} number, got {text!r}")
    return value


def _positive_float(text):
    return _finite_float(text, positive=True)


def _non_negative_float(text):
    return _finite_float(text, non_negative=True)


def selection_kwargs(args):
    """Keyword arguments for :func:`goldenal.lookup` from parsed flags."""
    return {"k": args.k, "thinking": args.thinking, "draft": args.draft, "curve": args.curve,
            "variant": args.variant, "golden_dir": golden_dir(args)}


def golden_dir(args):
    return args.golden_dir or os.environ.get("GOLDENAL_DIR") or None
