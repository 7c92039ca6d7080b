"""Domain exceptions and the exit codes the CLI maps them to.

Exit codes (the same for every command):

==  =====================================================================
0   success (``validate``: no errors; ``audit``: no error findings)
1   refused or found wanting: no such golden value, validation errors,
    audit findings, a run that missed its target, a change needed (``--check``)
2   usage error or unreadable input: bad flags, malformed files
3   conflict: a committed golden value would be overwritten
==  =====================================================================
"""

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_CONFLICT = 3


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
        return where + self.message


class ParseError(GoldenALError):
    """An input file is not in the expected format."""


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


class LowSampleWarning(RuntimeWarning):
    """A statistic was computed from too little data to be trusted."""
