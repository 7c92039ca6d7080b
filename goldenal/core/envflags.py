"""Boolean environment variables, read one way: an unknown spelling is an error naming the
variable, never a silent ``False``."""

from goldenal.core.errors import UsageError

#: spellings of goldenal's own switches, true ones first
SPELLINGS = (("1", "true", "yes", "on"), ("0", "false", "no", "off"))

#: the InferenceX runner's switches are on only as ``true``
#: (``runners/inject_synthetic_acceptance.py``: ``.strip().lower() == "true"``;
#: its launchers test ``"${EVAL_ONLY:-false}" == "true"``)
RUNNER_SPELLINGS = (("true",), ("false",))


def env_flag(environ, name, *, default=False, spellings=SPELLINGS):
    """The boolean ``environ[name]`` holds: ``default`` when unset or empty, else a UsageError."""
    raw = environ.get(name)
    value = "" if raw is None else raw.strip().lower()
    if not value:
        return default
    true, false = spellings
    if value in true:
        return True
    if value in false:
        return False
    raise UsageError(f"{name}={raw!r} is not a boolean; use one of "
                     f"{', '.join(true + false)} (or leave it unset)")
