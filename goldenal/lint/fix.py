"""``audit --fix`` / ``--diff``: apply the safe fixes, the replacement of a literal value.

A fix is applied only when it cannot change what the config means beyond the
knob: the finding replaces a value (GAL201 wrong cell, GAL202 TensorRT-LLM
value not AL - 1); nothing at that line was assumed (no GAL304/GAL305 there);
every finding on that line asks for the same replacement; the old value
occurs exactly once on the line as a whole number; and auditing a scratch
copy of the tree with the fix applied raises no new finding on that line (a
literal shared through an anchor by a variant that needs another cell).
"""

import difflib
import os
import re
import shutil
import tempfile
from typing import NamedTuple

from goldenal.files import write_text_atomic

FIXABLE = ("GAL201", "GAL202")
ASSUMPTIONS = ("GAL304", "GAL305")


class FixResult(NamedTuple):
    """What ``fix_findings`` changed (or would change): per-file diffs and counts.

    ``skipped`` holds ``(finding, reason)`` for every finding with a suggested
    fix that was not applied.
    """

    diff: str
    fixed: tuple
    skipped: tuple
    files: tuple


ASSUMED = {"GAL305": "assumed thinking mode: no thinking-mode signal for this config (GAL305)",
           "GAL304": "a piece of the cell could not be determined for this line (GAL304)"}
SHARED_LINE = "findings on this line ask for different values (a line shared by several configs)"
SHARED_ANCHOR = ("the literal also serves another config that needs another value "
                 "(a shared anchor or variable)")
NOT_LITERAL = {
    "GAL203": "the fix rewrites the flag into its length form, not one literal; apply it by hand",
    "GAL205": "the fix adds a key to the config, not a literal replacement; apply it by hand",
    "GAL308": "--fix never removes suppression comments; delete it by hand",
}


def _indirect(found, count):
    if count == 0:
        return (f"indirect value: {found} is not written on the finding's line "
                "(set through a variable or computed)")
    return f"{found} occurs {count} times on the line; which one is meant is ambiguous"


def place(finding, lines):
    """Point a value finding at the literal a person edits, with the fix as an edit.

    When ``finding.found`` occurs exactly once on its line as a whole number,
    the finding's column moves to it, the knob's use site goes into
    ``related`` (when it is elsewhere on the line) and ``edit`` holds the
    replacement by ``expected``.  A GAL308 finding's edit removes the
    suppression comment.  Other findings are returned unchanged.
    """
    if not lines or not 0 < finding.line <= len(lines):
        return finding
    text = lines[finding.line - 1].rstrip("\r")
    if finding.code == "GAL308":
        at = text.find("goldenal", max(finding.col - 1, 0))
        start = text.rfind("#", 0, at if at >= 0 else len(text))
        if start < 0:
            return finding
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        return finding._replace(edit=(finding.line, start + 1, len(text) + 1, ""))
    if finding.code not in FIXABLE or finding.found is None or finding.expected is None:
        return finding
    hits = list(_number(finding.found).finditer(text))
    if len(hits) != 1:
        return finding
    col = hits[0].start() + 1
    related = finding.related
    if col != finding.col:
        knob = finding.message.split("=", 1)[0].split()[0] if "=" in finding.message else "knob"
        related = ((finding.line, finding.col, f"{knob} is set here"),) + tuple(related)
    return finding._replace(col=col, related=related,
                            edit=(finding.line, col, hits[0].end() + 1, finding.expected))


def _number(text):
    """The literal as a whole number token: ``2.8`` must not match inside ``2.83``."""
    return re.compile(r"(?<![\w.])" + re.escape(text) + r"(?![\w.])")


def plan_fixes(findings):
    """``{(path, line): (found, expected, [findings])}`` for the safe fixes, and the rest.

    The rest is a list of ``(finding, reason)``.
    """
    by_line, blocked = {}, {}
    for f in findings:
        if f.code in ASSUMPTIONS:
            blocked.setdefault((f.path, f.line), f.code)
    plans, skipped = {}, []
    for f in findings:
        if f.code not in FIXABLE or f.found is None or f.expected is None:
            if f.fix is not None and f.code not in FIXABLE:
                skipped.append((f, NOT_LITERAL.get(f.code, "not a literal replacement; apply "
                                                             "it by hand")))
            continue
        by_line.setdefault((f.path, f.line), []).append(f)
    for key, group in by_line.items():
        wanted = {(f.found, f.expected) for f in group}
        if key in blocked or len(wanted) != 1:
            why = ASSUMED[blocked[key]] if key in blocked else SHARED_LINE
            skipped.extend((f, why) for f in group)
            continue
        found, expected = wanted.pop()
        plans[key] = (found, expected, group)
    return plans, skipped


def _apply(plans, root):
    """``{path: (before, after, fixed findings)}`` for the plans, plus the findings skipped."""
    by_file, skipped = {}, []
    for (path, line), plan in plans.items():
        by_file.setdefault(path, {})[line] = plan
    out = {}
    for path, per_line in by_file.items():
        with open(os.path.join(root, path), encoding="utf-8", newline="") as fh:
            before = fh.read()
        lines, fixed = before.splitlines(keepends=True), []
        for line, (found, expected, group) in sorted(per_line.items()):
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            count = len(_number(found).findall(text))
            if count != 1:
                skipped.extend((f, _indirect(found, count)) for f in group)
                continue
            lines[line - 1] = _number(found).sub(expected, text)
            fixed.extend(group)
        if fixed:
            out[path] = (before, "".join(lines), fixed)
    return out, skipped


def _new_findings_at(changes, root, audit_tree):
    """Fixed lines at which auditing a scratch copy with the changes finds new values wrong."""
    with tempfile.TemporaryDirectory(prefix="goldenal-fix-") as tmp:
        copy = os.path.join(tmp, "tree")
        shutil.copytree(root, copy, symlinks=True)
        for path, (_, after, _) in changes.items():
            write_text_atomic(os.path.join(copy, path), after)
        findings = audit_tree(copy)
    fixed_lines = {(f.path, f.line) for _, _, group in changes.values() for f in group}
    return {(f.path, f.line) for f in findings
            if f.severity == "error" and (f.path, f.line) in fixed_lines}


def fix_findings(findings, root, audit_tree, *, write=True):
    """Apply (or, with ``write=False``, only diff) the safe fixes of ``findings``.

    Parameters
    ----------
    findings : list of Finding
        As :func:`goldenal.audit` returned them (paths relative to ``root``).
    root : str
        The audited root.
    audit_tree : callable
        ``audit_tree(root) -> list[Finding]``: the same audit, run on a scratch
        copy of ``root`` to check that a fix raises nothing new.
    write : bool
        Write the files (atomically); else only compute the diff.

    Returns
    -------
    FixResult
    """
    plans, skipped = plan_fixes(findings)
    changes, not_unique = _apply(plans, root)
    skipped += not_unique
    if changes:
        unsafe = _new_findings_at(changes, root, audit_tree)
        if unsafe:
            skipped += [(f, SHARED_ANCHOR) for key in unsafe for f in plans[key][2]]
            changes, _ = _apply({k: v for k, v in plans.items() if k not in unsafe}, root)
    diffs, fixed = [], []
    for path in sorted(changes):
        before, after, group = changes[path]
        fixed.extend(group)
        diffs.append("".join(difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}")))
        if write:
            write_text_atomic(os.path.join(root, path), after)
    return FixResult("".join(diffs), tuple(fixed), tuple(skipped), tuple(sorted(changes)))
