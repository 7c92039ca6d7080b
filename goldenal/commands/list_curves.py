"""List the curves of a golden directory, one row per curve.

    goldenal list
    goldenal list --golden-dir ../InferenceX/golden_al_distribution --format json

In Python: goldenal.load_registry().to_frame().
"""

import json
import sys

from goldenal.commands._selection import add_golden_dir_argument, golden_dir

COLUMNS = ("id", "model", "method", "head", "variant", "thinking", "K", "source run")


def configure(parser):
    add_golden_dir_argument(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")


def rows(registry):
    from goldenal.policy import k_span

    out = []
    for c in registry:
        ks = sorted({k for cells in c.cells.values() for k in cells})
        out.append({
            "id": c.id, "model": c.model, "method": c.method or "?",
            "head": ", ".join(c.draft) or "-",
            "variant": ", ".join(f"{k}={v}" for k, v in sorted(c.variant.items())) or "-",
            "thinking": "/".join(m for m in ("on", "off") if c.cells.get(m)),
            "K": k_span(ks), "source run": c.source or "-",
        })
    return out


def format_table(records, columns):
    """Plain aligned columns (no dependency, stable for tests and diffs)."""
    widths = [max(len(col), *(len(str(r[col])) for r in records)) if records else len(col)
              for col in columns]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths)).rstrip()]
    for r in records:
        lines.append("  ".join(str(r[col]).ljust(w) for col, w in zip(columns, widths)).rstrip())
    return "\n".join(lines) + "\n"


def run(args):
    from goldenal.registry import load_registry

    registry = load_registry(golden_dir(args))
    records = rows(registry)
    if args.format == "json":
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    else:
        sys.stdout.write(format_table(records, COLUMNS))
    return 0
