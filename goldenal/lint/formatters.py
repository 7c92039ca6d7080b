"""Output formats for audit findings: text, JSON, GitHub annotations, SARIF 2.1.0.

Each formatter takes the list of findings and returns the whole output text.
The JSON output follows ``schemas/findings.schema.json`` (shipped in the
package); the SARIF output is a SARIF 2.1.0 log with one run.
"""

import json

from goldenal.lint.rules import RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def summary(findings):
    """``Found N findings (E errors, W warnings, I info)``."""
    n = len(findings)
    e = sum(f.severity == "error" for f in findings)
    w = sum(f.severity == "warning" for f in findings)
    i = n - e - w
    fixable = sum(f.fix is not None for f in findings)
    tail = f"; {fixable} with a suggested fix" if fixable else ""
    word = "finding" if n == 1 else "findings"
    return (f"Found {n} {word} ({e} error{'' if e == 1 else 's'}, "
            f"{w} warning{'' if w == 1 else 's'}, {i} info){tail}.")


def format_text(findings):
    """One ``path:line:col: CODE [*] message`` line per finding, then the summary."""
    out = []
    for f in findings:
        mark = " [*]" if f.fix else ""
        out.append(f"{f.path}:{f.line}:{f.col}: {f.code}{mark} {f.message}")
    out.append(summary(findings))
    return "\n".join(out) + "\n"


def format_json(findings):
    """A JSON array of finding objects (see the package's findings schema)."""
    return json.dumps([f.to_dict() for f in findings], indent=2) + "\n"


def _gh_escape(text, prop=False):
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def format_github(findings):
    """GitHub Actions workflow commands (``::error file=...,line=...::message``)."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    out = []
    for f in findings:
        props = (f"file={_gh_escape(f.path, True)},line={f.line},col={f.col},"
                 f"title={_gh_escape(f.code + ' ' + f.name, True)}")
        out.append(f"::{level[f.severity]} {props}::{_gh_escape(f.message)}")
    return "\n".join(out) + ("\n" if out else "")


def sarif_log(findings):
    """The SARIF 2.1.0 log as a dict."""
    from goldenal import __version__

    used = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(used)}
    rules = []
    for code in used:
        r = RULES[code]
        rules.append({
            "id": r.code, "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.what},
            "help": {"text": f"{r.why}\n\nFix: {r.use_instead}"},
            "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
        })
    results = []
    for f in findings:
        res = {
            "ruleId": f.code, "ruleIndex": index[f.code], "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": f.line, "startColumn": f.col}}}],
        }
        props = {k: getattr(f, k) for k in ("found", "expected") if getattr(f, k) is not None}
        if props:
            res["properties"] = props
        if f.fix:
            res["fixes"] = [{"description": {"text": f.fix}}]
        results.append(res)
    return {
        "$schema": SARIF_SCHEMA, "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "goldenal", "version": __version__,
                                      "rules": rules}},
                  "results": results}],
    }


def format_sarif(findings):
    return json.dumps(sarif_log(findings), indent=2) + "\n"


FORMATTERS = {"text": format_text, "json": format_json, "github": format_github,
              "sarif": format_sarif}
