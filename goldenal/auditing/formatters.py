"""Output formats for audit findings: text, JSON (``schemas/findings.schema.json``),
GitHub annotations and SARIF 2.1.0; each returns the whole output text."""

import json

from goldenal.auditing.rules import RULES, one_line, printable

# the OASIS SARIF 2.1.0 schema (errata 01), the one GitHub code scanning reads
SARIF_SCHEMA = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                "sarif-schema-2.1.0.json")
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
ASSUMED = "GAL305"


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def summary(findings, printed=None):
    """``Found N findings (E errors, W warnings, I info)[; P of them printed]``."""
    n = len(findings)
    e = sum(f.severity == "error" for f in findings)
    w = sum(f.severity == "warning" for f in findings)
    fixable = sum(f.fix is not None for f in findings)
    tail = f"; {fixable} with a suggested fix" if fixable else ""
    if printed is not None and printed != n:
        tail += f"; {printed} of them printed"
    return (f"Found {_count(n, 'finding')} ({_count(e, 'error')}, {_count(w, 'warning')}, "
            f"{n - e - w} info){tail}.")


def run_summary(report):
    """``Checked C serve configs in F files read; skipped S files.`` for a report."""
    s = len(report.skipped)
    return (f"Checked {_count(report.configs_checked, 'serve config')} in "
            f"{_count(report.files_read, 'file')} read; skipped {_count(s, 'file')}"
            + (" (--show-skipped lists them)." if s else "."))


def format_text(findings, report=None, *, show_assumptions=True, show_skipped=False):
    """One ``path:line:col: CODE [*] message`` line per finding, then the summaries."""
    shown = [f for f in findings if show_assumptions or f.code != ASSUMED]
    hidden = len(findings) - len(shown)
    # a file's name may hold a line break: shown escaped, it cannot start a line of its own
    out = [f"{printable(f.path)}:{f.line}:{f.col}: {f.code}{' [*]' if f.fix else ''} {f.message}"
           for f in shown]
    out.append(summary(findings, printed=len(findings) - hidden))
    if hidden:
        every = "it" if len(findings) == 1 else f"all {len(findings)}"
        out.append(f"Assumed the thinking mode of {_count(hidden, 'serve config')} ({ASSUMED}, "
                   f"not printed; --show-assumptions prints {every}).")
    if report is not None:
        if show_skipped:
            out.extend(f"{printable(path)}: skipped: {one_line(reason)}"
                       for path, reason in report.skipped)
        out.append(run_summary(report))
    return "\n".join(out) + "\n"


def format_json(findings, report=None, **_):
    """A JSON array of finding objects (see the package's findings schema)."""
    return json.dumps([f.to_dict() for f in findings], indent=2) + "\n"


def _gh_escape(text, prop=False):
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def format_github(findings, report=None, **_):
    """GitHub Actions workflow commands (``::error file=...,line=...::message``)."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    out = []
    for f in findings:
        props = (f"file={_gh_escape(f.path, True)},line={f.line},col={f.col},"
                 f"title={_gh_escape(f.code + ' ' + f.name, True)}")
        out.append(f"::{level[f.severity]} {props}::{_gh_escape(f.message)}")
    return "\n".join(out) + ("\n" if out else "")


def _region(line, col, end_col=None):
    region = {"startLine": line, "startColumn": col}
    if end_col is not None:
        region["endColumn"] = end_col
    return region


def _location(path, line, col, end_col=None, message=None, ident=None):
    loc = {"physicalLocation": {"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                                "region": _region(line, col, end_col)}}
    if ident is not None:
        loc["id"] = ident
    if message:
        loc["message"] = {"text": message}
    return loc


def sarif_log(findings, report=None):
    """The SARIF 2.1.0 log; only a one-edit fix can spell the ``artifactChanges`` SARIF
    requires of a fix, any other stays a ``suggestedFix`` property."""
    from goldenal import __version__

    used = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(used)}
    rules = [{"id": r.code, "name": r.name,
              "shortDescription": {"text": r.summary},
              "fullDescription": {"text": r.what},
              "help": {"text": f"{r.why}\n\nFix: {r.use_instead}"},
              "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]}}
             for r in (RULES[code] for code in used)]
    results = []
    for f in findings:
        end = f.edit[2] if f.edit is not None and f.edit[0] == f.line and f.edit[1] == f.col \
            else None
        res = {
            "ruleId": f.code, "ruleIndex": index[f.code], "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [_location(f.path, f.line, f.col, end)],
        }
        if f.related:
            res["relatedLocations"] = [_location(f.path, ln, col, message=msg, ident=i)
                                       for i, (ln, col, msg) in enumerate(f.related)]
        props = {k: getattr(f, k) for k in ("found", "expected") if getattr(f, k) is not None}
        if f.fix and f.edit is None:
            props["suggestedFix"] = f.fix
        if props:
            res["properties"] = props
        if f.fix and f.edit is not None:
            line, col, end_col, text = f.edit
            res["fixes"] = [{
                "description": {"text": f.fix},
                "artifactChanges": [{
                    "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                    "replacements": [{"deletedRegion": _region(line, col, end_col),
                                      "insertedContent": {"text": text}}],
                }],
            }]
        results.append(res)
    run = {"tool": {"driver": {"name": "goldenal", "version": __version__,
                               "rules": rules}},
           # Python string indices: one column per code point
           "columnKind": "unicodeCodePoints",
           "originalUriBaseIds": {"%SRCROOT%": {"description": {
               "text": "the audited root; result paths are relative to it"}}},
           "results": results}
    if report is not None:
        run["invocations"] = [{
            "executionSuccessful": True,
            "toolExecutionNotifications": [
                {"level": "note", "message": {"text": f"skipped: {reason}"},
                 "locations": [_location(path, 1, 1)]}
                for path, reason in report.skipped],
        }]
        run["properties"] = {"filesRead": report.files_read,
                             "configsChecked": report.configs_checked,
                             "filesSkipped": len(report.skipped)}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def format_sarif(findings, report=None, **_):
    return json.dumps(sarif_log(findings, report), indent=2) + "\n"


FORMATTERS = {"text": format_text, "json": format_json, "github": format_github,
              "sarif": format_sarif}
