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
    """What ``fix_findings`` changed (or would change): per-file diffs and counts."""

    diff: str
    fixed: tuple
    skipped: tuple
    files: tuple


def _number(text):
    """The literal as a whole number token: ``2.8`` must not match inside ``2.83``."""
    return re.compile(r"(?<![\w.])" + re.escape(text) + r"(?![\w.])")


def plan_fixes(findings):
    """``{(path, line): (found, expected, [findings])}`` for the safe fixes, and the rest."""
    by_line, blocked = {}, set()
    for f in findings:
        if f.code in ASSUMPTIONS:
            blocked.add((f.path, f.line))
    plans, skipped = {}, []
    for f in findings:
        if f.code not in FIXABLE or f.found is None or f.expected is None:
            continue
        by_line.setdefault((f.path, f.line), []).append(f)
    for key, group in by_line.items():
        wanted = {(f.found, f.expected) for f in group}
        if key in blocked or len(wanted) != 1:
            skipped.extend(group)
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
            if len(_number(found).findall(text)) != 1:
                skipped.extend(group)
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
            skipped += [f for key in unsafe for f in plans[key][2]]
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
