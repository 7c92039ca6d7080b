"""Import curves published in the upstream InferenceX format.

Reads each FILE (values and header comments), writes it in the project's
layout with a header in goldenal's words, adds or updates its manifest entry,
recompiles the lookup index, and names each file written.  Flags give the
identity the header lacks; an existing manifest entry supplies the rest.  A
curve of a method tied to one draft head (eagle3) is refused unless --draft,
the header or the manifest names the head (exit 2).  A committed value is
never changed without --replace REASON.  The golden directory is
--golden-dir, else $GOLDENAL_DIR, else the nearest golden_al_distribution/;
the curves installed with goldenal are never written.

    goldenal import ../InferenceX/golden_al_distribution/minimaxm3_eagle3_gqa.yaml \\
        --method eagle3 --draft Inferact/MiniMax-M3-EAGLE3-GQA \\
        --alias MiniMaxAI/MiniMax-M3 --alias minimaxm3

In Python: goldenal.import_curve(path, out_dir, method=..., draft=..., aliases=...).
"""

EXIT_CODES = """\
  0  imported
  2  unreadable curve file, bad flags, or a directory as validate would reject it
  3  a committed value would change (--replace REASON)
"""

import sys


def configure(parser):
    parser.add_argument("files", nargs="+", metavar="FILE", help="upstream curve YAML file(s)")
    from goldenal.commands._output import add_written_golden_dir

    add_written_golden_dir(parser, "golden directory to write (default: $GOLDENAL_DIR, "
                                    "else the nearest golden_al_distribution/; never the "
                                    "installed curves)")
    parser.add_argument("--curve-id", help="curve id (default: the file stem; one FILE only)")
    parser.add_argument("--method", help="mtp, eagle3, dspark, ...")
    parser.add_argument("--draft", action="append", metavar="HEAD",
                        help="draft head HF id (repeatable; omit for native MTP; required "
                             "for eagle3 unless the header or manifest names it)")
    parser.add_argument("--no-draft", action="store_true",
                        help="the curve has no separate draft head")
    parser.add_argument("--variant", action="append", metavar="KEY=VALUE",
                        help="sampling variant setting (repeatable), or 'none'")
    parser.add_argument("--alias", action="append", default=[], metavar="NAME",
                        help="another name of the model: HF id, quantized checkpoint, prefix")
    parser.add_argument("--replace", metavar="REASON",
                        help="allow changing committed values; the reason is recorded")


def run(args):
    import os

    from goldenal.commands._output import written_golden_dir
    from goldenal.golden.curves import INDEX_NAME, MANIFEST_NAME
    from goldenal.core.errors import UsageError
    from goldenal.golden.importer import import_curve, import_target

    golden_dir = import_target(written_golden_dir(args))
    if args.curve_id is not None and len(args.files) > 1:
        raise UsageError("--curve-id needs exactly one FILE")
    draft = [] if args.no_draft else args.draft
    for path in args.files:
        curve = import_curve(path, golden_dir, curve_id=args.curve_id, method=args.method,
                             draft=draft, variant=args.variant, aliases=args.alias,
                             replace_reason=args.replace)
        cells = sum(len(c) for c in curve.cells.values())
        print(f"imported {curve.id}: {curve.model}, {cells} cells", file=sys.stderr)
        for name in (curve.file, MANIFEST_NAME, INDEX_NAME):
            print(f"wrote {os.path.join(golden_dir, name)}", file=sys.stderr)
    return 0
