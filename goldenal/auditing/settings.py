"""``[tool.goldenal]`` in ``pyproject.toml``: audit settings kept with the recipes, found
as ruff finds its own (docs/cli.md, ``audit``); paths relative to the file."""

import os
from typing import NamedTuple

from goldenal.core.errors import ParseError
from goldenal.core.files import open_regular

_KEYS = {"select", "ignore", "exclude", "extend-exclude", "respect-gitignore", "golden-dir"}


class Settings(NamedTuple):
    """The ``[tool.goldenal]`` table, validated; ``path`` is the file it came from (or None)."""

    path: "str | None" = None
    select: "tuple | None" = None
    ignore: "tuple | None" = None
    exclude: "tuple | None" = None
    extend_exclude: tuple = ()
    respect_gitignore: bool = True
    golden_dir: "str | None" = None


def find_settings(start):
    """The nearest ``[tool.goldenal]`` from ``start`` up to its repository root (empty when
    none); ParseError for invalid TOML, an unknown key or a value of the wrong type."""
    from goldenal.core.files import repository_root

    chain = [os.path.abspath(start)]
    if not os.path.isdir(chain[0]):
        chain[0] = os.path.dirname(chain[0])
    top = repository_root(chain[0])
    while top is not None and chain[-1] != top:     # in no repository: its own directory only
        chain.append(os.path.dirname(chain[-1]))
    for directory in chain:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            settings = read_settings(candidate)
            if settings is not None:
                return settings
    return Settings()


def _strings(table, key, path):
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParseError(f"[tool.goldenal] `{key}` must be a list of strings", path=path)
    return tuple(value)


def read_settings(path):
    """The :class:`Settings` of one ``pyproject.toml``, or None when it has no ``[tool.goldenal]``."""
    try:
        import tomllib
    except ModuleNotFoundError:           # Python 3.10
        import tomli as tomllib
    try:
        with open_regular(path) as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(f"not valid TOML: {exc}", path=path) from None
    except OSError as exc:
        raise ParseError(f"unreadable: {exc.strerror or exc}", path=path) from None
    table = doc.get("tool", {}).get("goldenal")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ParseError("[tool.goldenal] must be a table", path=path)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ParseError(f"[tool.goldenal] has unknown key `{unknown[0]}`; known: "
                         + ", ".join(sorted(_KEYS)), path=path)
    respect = table.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ParseError("[tool.goldenal] `respect-gitignore` must be true or false", path=path)
    golden = table.get("golden-dir")
    if golden is not None and not isinstance(golden, str):
        raise ParseError("[tool.goldenal] `golden-dir` must be a string", path=path)
    base = os.path.dirname(os.path.abspath(path))
    return Settings(
        path=path, select=_strings(table, "select", path), ignore=_strings(table, "ignore", path),
        exclude=_strings(table, "exclude", path),
        extend_exclude=_strings(table, "extend-exclude", path) or (),
        respect_gitignore=respect,
        golden_dir=os.path.join(base, golden) if golden else None)
