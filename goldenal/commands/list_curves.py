"""List the curves of a golden directory, one row per curve.

    goldenal list
    goldenal list --wide
    goldenal list --golden-dir ../InferenceX/golden_al_distribution --format json

On a terminal the table fits its width: the widest columns are cut short with
"…" (--wide shows every value in full).  Piped, the table is tab-separated
with every value in full and a header line, for cut, awk or a spreadsheet.

The directory read is named on stderr: --golden-dir, else $GOLDENAL_DIR, else
the nearest golden_al_distribution/ in the current directory or its parents,
else the packaged curves.

In Python: goldenal.load_registry().to_frame().
"""

EXIT_CODES = """\
  0  listed
  2  usage error or unreadable golden directory
"""

import json
import os
import sys

from goldenal.commands._selection import add_golden_dir_argument, golden_dir

COLUMNS = ("id", "model", "method", "head", "variant", "thinking", "K", "source run")
# When the table is wider than the terminal, the source run is cut short first
# (from the left: a run's number is at the end of its address), then the widest
# of the wrapping columns narrows; each stage of _NARROWING goes down to its floor.
# A wrapping column never narrows below its header, nor an id below its longest word.
_CUT = "source run"
_WRAPPING = ("id", "model", "head", "variant")
_NARROWING = (((_CUT,), 18), (_WRAPPING, 10), ((_CUT,), 12), (_WRAPPING, 8), ((_CUT,), 8))
_GAP = "  "
_BREAKS = r"[^_/\-,:= ]*(?:[_/\-,:= ]+|$)"  # a value wraps after these characters, only there


def configure(parser):
    add_golden_dir_argument(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.add_argument("--wide", action="store_true",
                        help="on a terminal, show every value in full instead of fitting "
                             "the table to the terminal's width")


def rows(registry):
    from goldenal.golden.policy import k_span

    return [{"id": c.id, "model": c.model, "method": c.method or "?",
             "head": ", ".join(c.draft) or "-",
             "variant": ", ".join(f"{k}={v}" for k, v in sorted(c.variant.items())) or "-",
             "thinking": "/".join(m for m in ("on", "off") if c.cells.get(m)),
             "K": k_span(sorted({k for cells in c.cells.values() for k in cells})),
             "source run": c.source or "-"} for c in registry]


def _fit_widths(widths, columns, width, floors):
    """Column widths whose table fits ``width`` (when it can), stage by stage."""
    widths = list(widths)
    total = sum(widths) + len(_GAP) * (len(widths) - 1)
    for names, floor in _NARROWING:
        while total > width:
            narrowable = [i for i, col in enumerate(columns)
                          if col in names and widths[i] > max(floor, floors.get(col, 0))]
            if not narrowable:
                break
            widths[max(narrowable, key=lambda j: widths[j])] -= 1
            total -= 1
    return widths


def _ellipsis():
    """"…" where the output can encode it, else "~"."""
    try:
        "…".encode(sys.stdout.encoding or "ascii")
    except (LookupError, UnicodeEncodeError):
        return "~"
    return "…"


def _wrap(text, width):
    """``text`` as lines of at most ``width``, broken after ``_BREAKS``; a longer word is cut."""
    import re

    lines, line = [], ""
    for token in re.findall(_BREAKS, text):
        while len(token) > width:  # a token longer than the column: cut it
            if line:
                lines.append(line.rstrip())
                line = ""
            lines.append(token[:width])
            token = token[width:]
        if len((line + token).rstrip()) > width:
            lines.append(line.rstrip())
            line = token.lstrip()
        else:
            line += token
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def format_table(records, columns, width=None):
    """Aligned columns; with ``width``, long values wrap (rows set apart by a blank line)."""
    import re

    widths = [max([len(col)] + [len(str(r[col])) for r in records]) for col in columns]
    if width is not None:
        # an id is never broken inside a word (it is what --curve takes); the other
        # wrapping columns may cut a long word when the terminal is too narrow
        floors = {col: len(col) for col in _WRAPPING}
        floors["id"] = max([floors["id"]] + [len(w.rstrip()) for r in records
                                             for w in re.findall(_BREAKS, str(r.get("id", "")))
                                             if w.strip()])
        widths = _fit_widths(widths, columns, width, floors)
    mark = _ellipsis()

    def lines_of(column, cell, w):
        if column == _CUT and len(cell) > w:
            return [mark + cell[len(cell) - w + len(mark):]]
        return _wrap(cell, w)

    wrapped = [[lines_of(col, str(cell), w) for col, cell, w in zip(columns, row, widths)]
               for row in [columns] + [[r[col] for col in columns] for r in records]]
    tall = any(len(cell) > 1 for row in wrapped[1:] for cell in row)
    lines = []
    for n, row in enumerate(wrapped):
        if tall and n > 1:
            lines.append("")
        for i in range(max(len(cell) for cell in row)):
            parts = [(cell[i] if i < len(cell) else "").ljust(w) for cell, w in zip(row, widths)]
            lines.append(_GAP.join(parts).rstrip())
    return "\n".join(lines) + "\n"


def format_tsv(records, columns):
    """Tab-separated, a header line, every value in full: for pipes and scripts."""
    return "".join("\t".join(str(v).replace("\t", " ").replace("\n", " ") for v in row) + "\n"
                   for row in [columns] + [[r[col] for col in columns] for r in records])


def run(args):
    import shutil

    from goldenal.golden.registry import default_dir_source, load_registry

    directory = golden_dir(args)
    how = "--golden-dir" if args.golden_dir else None
    if directory is None or (how is None and directory == os.environ.get("GOLDENAL_DIR")):
        directory, how = default_dir_source()
    registry = load_registry(directory)
    # stdout stays the table (or JSON); which directory was read goes to stderr
    print(f"golden directory: {os.path.abspath(directory)} ({how})", file=sys.stderr)
    records = rows(registry)
    if args.format == "json":
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    elif not sys.stdout.isatty():
        sys.stdout.write(format_tsv(records, COLUMNS))
    else:
        width = None if args.wide else shutil.get_terminal_size().columns
        sys.stdout.write(format_table(records, COLUMNS, width=width))
    return 0
