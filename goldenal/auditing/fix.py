"""``audit --fix`` / ``--diff``: the safe fixes, each a literal value replaced in place
(when a fix is safe: docs/cli.md, ``audit``)."""

import difflib
import errno
import os
import re
from typing import NamedTuple

from goldenal.core.files import locked_directories, read_regular, replace_beneath

FIXABLE = ("GAL201", "GAL202")
ASSUMPTIONS = ("GAL304", "GAL305")


class FixResult(NamedTuple):
    """What :func:`fix_findings` did: a unified diff (bytes); ``skipped``: (finding, reason)."""

    diff: str
    fixed: tuple
    skipped: tuple
    files: tuple


ASSUMED = {"GAL305": "assumed thinking mode: no thinking-mode signal for this config (GAL305)",
           "GAL304": "a piece of the cell could not be determined for this line (GAL304)"}
SHARED_LINE = "findings on this line ask for different values (a line shared by several configs)"
SHARED_ANCHOR = ("the literal also serves another config that needs another value "
                 "(a shared anchor, variable or base section)")
# where the literal is a base section's value a variant inherits
GIVE_VARIANTS = "; `goldenal inject` gives a variant inheriting it its own value"
LINKED = ("reached through a symbolic link; --fix never writes through one "
          "(fix the file it names)")
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
    """Point a value finding at the literal to edit (``found``, once on the line as a whole
    number), the knob's site in ``related``, the fix in ``edit``."""
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
    """``{(path, line): (found, expected, [findings])}`` of safe fixes; ``[(finding, why)]``."""
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


def _lines(data):
    r"""``data`` split after every ``\n`` (the audit's line numbering), ends kept."""
    lines = data.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def _replace_once(line, found, expected):
    """``(count, new line)``; ``surrogateescape`` keeps the bytes around ``found`` as they were."""
    text = line.decode("utf-8", "surrogateescape")
    pattern = _number(found)
    count = len(pattern.findall(text))
    if count != 1:
        return count, line
    return 1, pattern.sub(lambda m: expected, text).encode("utf-8", "surrogateescape")


def _not_written(exc):
    """Why a file could not be fixed, for the "Not fixed" line."""
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return LINKED
    return f"not written: {exc.strerror if isinstance(exc, OSError) else exc}"


def _apply(plans, root, read=None):
    """``{path: (before, after, fixed)}`` and the skipped; ``read``: bytes already read."""
    by_file, skipped = {}, []
    for (path, line), plan in plans.items():
        by_file.setdefault(path, {})[line] = plan
    out = {}
    for path, per_line in by_file.items():
        try:
            before = read[path] if read and path in read else read_regular(path, beneath=root)
        except (OSError, ValueError) as exc:
            why = _not_written(exc)
            skipped.extend((f, why) for _, _, group in per_line.values() for f in group)
            continue
        lines, fixed = _lines(before), []
        for line, (found, expected, group) in sorted(per_line.items()):
            text = lines[line - 1] if 0 < line <= len(lines) else b""
            count, new = _replace_once(text, found, expected)
            if count != 1:
                skipped.extend((f, _indirect(found, count)) for f in group)
                continue
            lines[line - 1] = new
            fixed.extend(group)
        if fixed:
            out[path] = (before, b"".join(lines), fixed)
    return out, skipped


def _rejected(changes, root, audit_tree):
    """``{(path, line): why}`` of the fixes where auditing the fixed texts finds wrong
    values, ``why`` naming a config the fix would break and the value it needs."""
    def real(path):
        return os.path.realpath(os.path.join(root, path))

    overlay = {os.path.join(root, path): after for path, (_, after, _) in changes.items()}
    fixed = {(real(f.path), f.line): (f.path, f.line)
             for _, _, group in changes.values() for f in group}
    variants = {(real(f.path), f.line) for _, _, group in changes.values() for f in group
                if "variant " in (_label(f.message) or "")}
    out = {}
    for f in audit_tree(overlay):
        key = fixed.get((real(f.path), f.line))
        if f.severity != "error" or key is None or key in out:
            continue
        config = _label(f.message)
        why = (SHARED_ANCHOR if not (config and f.expected) else
               SHARED_ANCHOR.replace("another value (", f"another value ({config} needs "
                                     f"{f.expected}; ", 1))
        if (real(f.path), f.line) in variants or "variant " in (config or ""):
            why = why[:-1] + GIVE_VARIANTS + ")"
        out[key] = why
    return out


def _label(message):
    """The config a finding's message names in its closing brackets, or None."""
    return message.rsplit(" [", 1)[1].removesuffix("]") if " [" in message else None


def _diff(path, before, after):
    name = os.fsencode(path)
    lines = difflib.diff_bytes(difflib.unified_diff, _lines(before), _lines(after),
                               fromfile=b"a/" + name, tofile=b"b/" + name)
    return b"".join(line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n"
                    for line in lines)


def fix_findings(findings, root, audit_tree, *, write=True):
    """Apply (``write=False``: only diff) the safe fixes; ``audit_tree(overlay)`` audits again
    with ``{path: bytes}`` in place of those files.  OSError: a lock held too long."""
    plans, skipped = plan_fixes(findings)
    if not write or not plans:
        return _fix(plans, skipped, root, audit_tree, write=write)
    directories = {os.path.dirname(os.path.realpath(os.path.join(root, path)))
                   for path, _ in plans}
    with locked_directories(d for d in directories if os.path.isdir(d)):
        # the files to fix, read under the lock, and the audit of exactly those bytes
        read, unreadable = {}, {}
        for path in sorted({path for path, _ in plans}):
            try:
                read[path] = read_regular(path, beneath=root)
            except (OSError, ValueError) as exc:
                unreadable[path] = exc
        fresh = audit_tree({os.path.join(root, path): data for path, data in read.items()})
        plans, skipped = plan_fixes(fresh)
        late = {key for key in plans if key[0] not in read}
        for key in sorted(late):
            why = (_not_written(unreadable[key[0]]) if key[0] in unreadable
                   else "changed while the audit ran; run --fix again")
            skipped += [(f, why) for f in plans.pop(key)[2]]
        return _fix(plans, skipped, root, audit_tree, write=True, read=read)


def _fix(plans, skipped, root, audit_tree, *, write, read=None):
    changes, not_applied = _apply(plans, root, read)
    skipped += not_applied
    while changes:
        unsafe = _rejected(changes, root, audit_tree)
        if not unsafe:
            break
        # drop what the check rejected, then check what is left on its own
        skipped += [(f, unsafe[key]) for key in sorted(unsafe) for f in plans[key][2]]
        plans = {k: v for k, v in plans.items() if k not in unsafe}
        changes, _ = _apply(plans, root, read)
    diffs, fixed, files = [], [], []
    for path in sorted(changes):
        before, after, group = changes[path]
        if write:
            try:
                replace_beneath(root, path, after, expected=before)
            except (OSError, ValueError) as exc:
                skipped += [(f, _not_written(exc)) for f in group]
                continue
        fixed.extend(group)
        files.append(path)
        diffs.append(_diff(path, before, after))
    return FixResult(b"".join(diffs), tuple(fixed), tuple(skipped), tuple(files))
