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
exit codes:
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
# An id never narrows below its longest word (see format_table).
_CUT = "source run"
_WRAPPING = ("id", "model", "head", "variant")
_NARROWING = (((_CUT,), 18), (_WRAPPING, 10), ((_CUT,), 12), (_WRAPPING, 8), ((_CUT,), 8))
_GAP = "  "


def configure(parser):
    add_golden_dir_argument(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.add_argument("--wide", action="store_true",
                        help="on a terminal, show every value in full instead of fitting "
                             "the table to the terminal's width")


def rows(registry):
    from goldenal.golden.policy import k_span

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


def _fit_widths(widths, columns, width, words=None):
    """Column widths whose table fits ``width`` (when it can), stage by stage.

    A wrapping column never gets narrower than its header or the longest word
    ``words`` gives for it (column -> length), so that column is never broken
    inside a word.
    """
    widths = list(widths)
    words = words or {}
    total = sum(widths) + len(_GAP) * (len(widths) - 1)
    for names, floor in _NARROWING:
        while total > width:
            narrowable = [i for i, col in enumerate(columns)
                          if col in names and widths[i] > max(
                              floor, len(col) if col in _WRAPPING else 0,
                              words.get(col, 0) if col in _WRAPPING else 0)]
            if not narrowable:
                break
            i = max(narrowable, key=lambda j: widths[j])
            widths[i] -= 1
            total -= 1
    return widths


def _ellipsis():
    """"…" where the output can encode it, else "~"."""
    try:
        "…".encode(sys.stdout.encoding or "ascii")
    except (LookupError, UnicodeEncodeError):
        return "~"
    return "…"


# a value wraps after these characters, and only there
_BREAKS = r"[^_/\-,:= ]*(?:[_/\-,:= ]+|$)"


def _words(text):
    """The pieces ``_wrap`` keeps whole (their trailing spaces dropped)."""
    import re

    return [t.rstrip() for t in re.findall(_BREAKS, text) if t.strip()]


def _wrap(text, width):
    """``text`` as lines of at most ``width``, broken after ``_ / - , : =`` or a space; a
    word longer than ``width`` (only when the caller allows it) is cut."""
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
    """Aligned columns; with ``width``, long values wrap onto more lines to fit it.

    Rows that take more than one line are separated by a blank line.
    """
    widths = [max(len(col), *(len(str(r[col])) for r in records)) if records else len(col)
              for col in columns]
    if width is not None:
        # an id is never broken inside a word (it is what --curve takes); the other
        # wrapping columns may cut a long word when the terminal is too narrow
        words = {col: max((len(w) for r in records for w in _words(str(r[col]))), default=0)
                 for col in columns if col == "id"}
        widths = _fit_widths(widths, columns, width, words)
    lines = []
    blocks = [list(columns)] + [[str(r[col]) for col in columns] for r in records]
    mark = _ellipsis()

    def lines_of(column, cell, w):
        if column == _CUT and len(cell) > w:
            return [mark + cell[len(cell) - w + len(mark):]]
        return _wrap(cell, w)

    wrapped = [[lines_of(col, cell, w) for col, cell, w in zip(columns, row, widths)]
               for row in blocks]
    tall = any(len(cell) > 1 for row in wrapped[1:] for cell in row)
    for n, row in enumerate(wrapped):
        if tall and n > 1:
            lines.append("")
        for i in range(max(len(cell) for cell in row)):
            parts = [(cell[i] if i < len(cell) else "").ljust(w) for cell, w in zip(row, widths)]
            lines.append(_GAP.join(parts).rstrip())
    return "\n".join(lines) + "\n"


def format_tsv(records, columns):
    """Tab-separated, a header line, every value in full: for pipes and scripts."""
    def clean(value):
        return str(value).replace("\t", " ").replace("\n", " ")

    lines = ["\t".join(columns)]
    lines += ["\t".join(clean(r[col]) for col in columns) for r in records]
    return "\n".join(lines) + "\n"


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
    elif args.wide:
        sys.stdout.write(format_table(records, COLUMNS))
    else:
        width = shutil.get_terminal_size().columns
        sys.stdout.write(format_table(records, COLUMNS, width=width))
    return 0
