"""Environment blocks: a YAML mapping of variables, and ``KEY=value`` files, a file named by a
config staying in its directory (:func:`resolve_env_file`), read only when regular and small."""

import errno
import os
import re
from collections import Counter

from goldenal.core.errors import DuplicateKeyError, ParseError
from goldenal.core.files import inside, read_regular
from goldenal.recipes import spans
from goldenal.recipes.shell import ASSIGNMENT

# far above any environment file of KEY=value lines; reads stay bounded
ENV_FILE_LIMIT = 1 << 20
# a comment line of its own: ``# env-file: extra.env`` (``env_file`` too)
ENV_FILE_RE = re.compile(r"^[ \t]*#[ \t]*env[-_]file[ \t]*:[ \t]*(\S+)[ \t\r]*$", re.M)


def quote_style(env):
    """The quote character most values of an environment mapping use, as written: the
    variants of one ``zip_override_*`` section, reading its lists at different indices,
    write alike into the section they share."""
    if isinstance(env, spans.Layers):
        env = spans.Layers(*(spans.as_written(layer) for layer in env.layers))
    styles = Counter(v.style for _, v in spans.pairs(spans.as_written(env))
                     if spans.is_scalar(v) and v.style in ("'", '"'))
    return styles.most_common(1)[0][0] if styles else '"'


def env_file_values(text, path=None):
    """``{KEY: (value, line, start, end, quote)}`` of a ``KEY=value`` text; no key twice."""
    out = {}
    for m in ASSIGNMENT.finditer(text):
        raw = m.group("raw")
        quote = raw[0] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else ""
        value = raw[1:-1] if quote else raw
        line = text.count("\n", 0, m.start()) + 1
        key = m.group("key")
        if key in out:
            raise DuplicateKeyError(key, path=path, line=line, first_line=out[key][1])
        out[key] = (value, line, m.start("raw"), m.end("raw"), quote)
    return out


def env_file_reference(text):
    """``(name, line)`` of the ``# env-file: PATH`` comment in a config's text, or None."""
    m = ENV_FILE_RE.search(text)
    if m is None:
        return None
    return m.group(1), text.count("\n", 0, m.start(1)) + 1


def resolve_env_file(config_path, name, line):
    """The env file a config names, relative to its directory; a path leading out is refused."""
    directory = os.path.dirname(os.fspath(config_path))
    shown = directory or "."
    if os.path.isabs(name):
        raise ParseError(f"env-file {name} is an absolute path; name a file in the config's "
                         f"directory ({shown})", path=config_path, line=line)
    full = os.path.join(directory, name)
    if not inside(shown, full):
        lexical = os.path.relpath(os.path.normpath(full), shown)
        how = "" if lexical.split(os.sep)[0] == ".." else "through a symbolic link "
        raise ParseError(f"env-file {name} leads {how}outside the config's directory "
                         f"({shown}); name a file inside it", path=config_path, line=line)
    return full


def read_env_file(path, *, ref=None, missing_ok=True):
    """A ``KEY=value`` file's text, if regular and small; ``ref``: where it was named."""
    path = os.fspath(path)
    where = dict(zip(("path", "line"), ref)) if ref else {"path": path}
    try:
        data = read_regular(path, ENV_FILE_LIMIT)
    except FileNotFoundError:
        if missing_ok:
            return ""
        raise ParseError(f"env-file {path} does not exist" if ref else "does not exist",
                         **where) from None
    except OSError as exc:
        sep = " " if exc.errno in (errno.EINVAL, errno.EFBIG) else ": "
        raise ParseError(f"env-file {path}{sep}{exc.strerror}" if ref else exc.strerror,
                         **where) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(f"env-file {path} is not a UTF-8 text file" if ref
                         else "not a UTF-8 text file", **where) from None
