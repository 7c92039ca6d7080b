"""The cell-selection flags shared by lookup, emit, verify and export."""

import os


def add_selection_arguments(parser, *, model_required=False):
    """MODEL, --k, --thinking, --draft, --curve, --variant, --golden-dir."""
    parser.add_argument("model", nargs=None if model_required else "?", metavar="MODEL",
                        help="model key, HF id or InferenceX prefix (case-insensitive); "
                             "optional with --curve")
    parser.add_argument("--k", required=True, type=_positive_int, metavar="K",
                        help="num_speculative_tokens")
    parser.add_argument("--thinking", required=True, choices=["on", "off"],
                        help="thinking mode served")
    parser.add_argument("--draft", metavar="HEAD",
                        help="draft head HF id, or a local path ending in it")
    parser.add_argument("--curve", metavar="ID", help="curve id (file stem), e.g. "
                                                      "minimaxm3_eagle3_gqa")
    parser.add_argument("--variant", action="append", metavar="KEY=VALUE",
                        help="sampling variant, e.g. draft_sample_method=probabilistic; "
                             "'none' for a curve without one (repeatable)")
    add_golden_dir_argument(parser)


def add_golden_dir_argument(parser):
    parser.add_argument("--golden-dir", metavar="DIR", default=None,
                        help="golden directory (default: $GOLDENAL_DIR, else the packaged "
                             "curves); an InferenceX golden_al_distribution/ works as it is")


def _positive_int(text):
    import argparse

    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def selection_kwargs(args):
    """Keyword arguments for :func:`goldenal.registry.lookup` from parsed flags."""
    return {"k": args.k, "thinking": args.thinking, "draft": args.draft, "curve": args.curve,
            "variant": args.variant, "golden_dir": golden_dir(args)}


def golden_dir(args):
    return args.golden_dir or os.environ.get("GOLDENAL_DIR") or None
