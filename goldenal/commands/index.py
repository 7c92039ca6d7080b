"""Rebuild a golden directory's compiled lookup index (index.tsv).

`goldenal lookup` reads the index instead of parsing YAML; the index records
a checksum of every file it was built from and is ignored once any differs.
`goldenal import` and `goldenal fit` rebuild it; run this after editing a
curve file by hand.

    goldenal index golden_al_distribution

In Python: goldenal.golden.curvefile.write_index(directory).
"""

EXIT_CODES = """\
  0  indexed
  2  unreadable golden directory
"""

import sys


def configure(parser):
    parser.add_argument("directory", nargs="?", metavar="DIR", help="golden directory")


def run(args):
    from goldenal.golden.curvefile import write_index
    from goldenal.golden.registry import default_dir

    registry = write_index(args.directory or default_dir())
    print(f"indexed {len(registry)} curves in {registry.directory}", file=sys.stderr)
    return 0
