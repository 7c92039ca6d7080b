"""Commands in Markdown: the fenced code blocks a README or recipe guide shows.

People copy launch commands from documentation, so a knob pinned in a guide
is audited like one in a script.  :func:`fenced_code` keeps the lines inside
shell-like fenced blocks (```` ```bash ````, ```` ```sh ````, ```` ```console ````,
``~~~``, or no language) and blanks every other line, so line numbers stay
those of the document; a ``$ `` prompt is blanked too, keeping columns.
"""

import re

# CommonMark: up to three spaces, then three or more backticks or tildes, then an info string
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)")
MARKDOWN = (".md", ".markdown")      # file-name endings of Markdown documents
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console", "zsh", "shell-session", "text"}


def fenced_code(lines):
    """``lines`` with everything outside shell-like fenced code blocks blanked.

    Parameters
    ----------
    lines : list of str
        The document's lines.

    Returns
    -------
    list of str
        The same number of lines: code lines as written (a leading ``$ ``
        prompt replaced by spaces), every other line empty.

    Example
    -------
    >>> fenced_code(["# Guide", "```bash", "export X=1", "```"])
    ['', '', 'export X=1', '']
    """
    out = []
    fence = None            # the closing fence's character and length while inside a block
    keep = False
    for line in lines:
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = (m.group(2)[0], len(m.group(2)))
                keep = m.group(3).lower() in SHELL_LANGUAGES
            out.append("")
            continue
        if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= fence[1] and \
                not line[m.end():].strip():
            fence = None
            out.append("")
            continue
        if not keep:
            out.append("")
            continue
        stripped = line.lstrip()
        if stripped.startswith("$ "):
            line = line.replace("$ ", "  ", 1)
        out.append(line)
    return out
