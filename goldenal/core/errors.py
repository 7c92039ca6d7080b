"""Domain exceptions, each carrying its exit code, the same in every command (whose
``--help`` lists those it returns)."""

import re

EXIT_OK = 0
EXIT_REFUSED = 1    # no such golden value, validation errors, findings, a change needed
EXIT_USAGE = 2      # bad flags, unreadable or malformed input
EXIT_CONFLICT = 3   # a committed golden value would be overwritten


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text):
    """``text`` with every control character and line separator escaped (``\\x0a``): a
    file's name or text in an error or a finding must not start a line of its own, where
    it could pass for another one, nor move the terminal's cursor."""
    return _CONTROL.sub(lambda m: (f"\\x{ord(m.group()):02x}" if m.group() < "\u0100"
                                   else f"\\u{ord(m.group()):04x}"), text)


class GoldenALError(Exception):
    """Base class of every error goldenal reports as one line."""

    exit_code = EXIT_USAGE

    def __init__(self, message, *, path=None, line=None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line

    def __str__(self):
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line else "") + ": "
        return printable(where + self.message)


class ParseError(GoldenALError):
    """An input file is not in the expected format."""


class DuplicateKeyError(ParseError):
    """A mapping names one key twice: engines read the last, a reader could check the first."""

    def __init__(self, key, *, path=None, line=None, col=None, first_line=None, within=""):
        first = f" (first at line {first_line})" if first_line else ""
        super().__init__(f"duplicate key {key!r}{within}{first}", path=path, line=line)
        self.key = key
        self.col = col
        self.first_line = first_line


class UsageError(GoldenALError):
    """An argument is malformed (exit code 2, as for argparse's usage errors)."""


class RegistryError(GoldenALError):
    """A golden directory is unreadable or inconsistent."""


class UnknownCurve(GoldenALError):
    """No committed curve or cell matches the request."""

    exit_code = EXIT_REFUSED


class PolicyError(GoldenALError):
    """The request is well-formed but the golden-AL policy refuses it."""

    exit_code = EXIT_REFUSED


class ConflictError(GoldenALError):
    """Writing would overwrite a committed golden value."""

    exit_code = EXIT_CONFLICT


class ConvergenceError(GoldenALError):
    """No usable fit exists for the data given."""

    exit_code = EXIT_REFUSED


class ServerError(GoldenALError):
    """A server is unreachable, or does not answer as an OpenAI-compatible engine."""


class CounterReset(GoldenALError):
    """A counter went down between two scrapes: the server restarted inside the window."""

    exit_code = EXIT_REFUSED


class RoundedCounters(GoldenALError):
    """A server printed its counters rounded, so a window of them cannot be counted exactly."""

    exit_code = EXIT_REFUSED


class LowSampleWarning(RuntimeWarning):
    """A statistic was computed from too little data to be trusted."""


def yaml_error(exc, path=None, *, text=None, prefix="not valid YAML"):
    """A PyYAML error as one ParseError line, located (``text`` gives a reader error's line)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    detail = getattr(exc, "problem", None) or getattr(exc, "context", None)
    if detail is None and hasattr(exc, "reason") and hasattr(exc, "character"):
        char = exc.character
        if isinstance(char, bytes):
            detail = f"cannot decode byte #x{char[0]:02x}: {exc.reason}"
        else:
            code = char if isinstance(char, int) else ord(char)
            detail = f"unacceptable character #x{code:04x}: {exc.reason}"
        position = getattr(exc, "position", None)
        if line is None and text is not None and isinstance(position, int):
            line = text.count("\n", 0, position) + 1
    if detail is None:
        detail = str(exc).split("\n", 1)[0]
    detail = " ".join(str(detail).split())
    return ParseError(f"{prefix}: {detail}", path=path, line=line)
