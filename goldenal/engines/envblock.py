"""Writing knobs into environment mappings and ``KEY=value`` files, in the block's own
indentation and quotes (InferenceX recipes mix ``'1'`` and ``"1"``)."""

from goldenal.core.errors import ParseError
from goldenal.engines.base import check_pinned, same_number
from goldenal.recipes import spans
from goldenal.recipes.env import env_file_values, quote_style, read_env_file


def plan_site_env(doc, site, desired, *, value_key, force):
    """Edits for a site's environment block, creating it (``<role>_environment``, or a 2.0
    recipe's ``env``) if absent."""
    if site.env is None and site.backend is not None:
        key = site.env_key or f"{site.role}_environment"
        written = spans.get_pair(site.backend, key)
        if written is not None:  # a scalar or a list: another block would repeat the key
            raise ParseError(f"{key} must be a mapping of environment variables",
                             path=doc.path, line=spans.line_of(written[1]))
        # srt-slurm merges the new block over the one the variant inherits: a companion
        # read there already with its value is not repeated
        items = [(k, v) for k, v in desired.items() if k == value_key or site.env_base is None
                 or spans.scalar(spans.get(site.env_base, k)) != v]
        edit = spans.add_block(doc.text, site.backend, key, items, value_style='"',
                               path=doc.path)
        return [edit], [(k, None, v) for k, v in items]
    return plan_env(doc, site.env, desired, value_key=value_key, force=force)


def _plan_keys(desired, found, value_key, force, path, edit):
    """``(edits, changes, missing)`` making ``found`` (key -> (old, line)) ``desired``; a
    different ``value_key`` needs ``force``, an equal number stays as written."""
    edits, changes, missing = [], [], []
    for key, value in desired.items():
        if key not in found:
            missing.append((key, value))
            changes.append((key, None, value))
            continue
        old, line = found[key]
        if key == value_key:
            _check_pinned(key, old, value, force=force, path=path, line=line)
            if not isinstance(value, spans.PerVariant) and same_number(old, value):
                continue
        if old != value:
            new = edit(key, value)
            if new is not None:
                edits.append(new)
                changes.append((key, old, value))
    return edits, changes, missing


def _check_pinned(key, old, value, **where):
    """:func:`check_pinned` for a value, or for each variant's of a :class:`spans.PerVariant`."""
    for each in value if isinstance(value, spans.PerVariant) else (value,):
        check_pinned(key, old, each, **where)


def plan_env(doc, env, desired, *, value_key, force):
    """``(edits, changes)`` making an environment mapping hold ``desired`` (ordered dict).

    A variant's own block layered over its base's (:class:`spans.Layers`) is written
    itself: a key it inherits with another value is added to it, never edited in the
    base, whose other variants read the base's value.  A :class:`spans.PerVariant` value
    replaces the key's value as the ``zip_override_*`` section writes it, for every
    variant at once."""
    own = env.layers[0] if isinstance(env, spans.Layers) else env
    nodes = {key: pair[1] for key, value in desired.items()
             for pair in (spans.get_pair(spans.as_written(own) if isinstance(
                 value, spans.PerVariant) else own, key),) if pair is not None}
    found = {key: (_one_value(node), spans.line_of(node)) for key, node in nodes.items()}
    if own is not env:
        for key, value in desired.items():
            pair = None if key in found else spans.get_pair(env, key)
            if pair is None:
                continue
            old = spans.scalar(pair[1])
            if key == value_key:
                _check_pinned(key, old, value, force=force, path=doc.path,
                              line=spans.line_of(pair[1]))
            if old == value or (key == value_key and same_number(old, value)):
                found[key] = (old, spans.line_of(pair[1]))   # inherited as it should be
    edits, changes, missing = _plan_keys(
        desired, found, value_key, force, doc.path,
        lambda key, value: spans.replace_scalar(doc.text, nodes[key], value, path=doc.path,
                                                null_style=quote_style(env)))
    if missing:
        edits.append(spans.add_to_mapping(doc.text, env, missing, value_style=quote_style(env),
                                          path=doc.path))
    return edits, changes


def _one_value(node):
    """The value every variant reads from a node: a scalar's, or a one-item list's."""
    if node.id == "sequence" and len(node.value) == 1:
        node = node.value[0]
    return spans.scalar(node)


def plan_env_file(path, desired, *, value_key, force, create=True, ref=None):
    """``(text, edits, changes)`` for a ``KEY=value`` file (created when missing and
    ``create``; ``ref``: where it was named)."""
    text = read_env_file(path, ref=ref, missing_ok=create)
    values = env_file_values(text, path)
    found = {key: (old, line) for key, (old, line, *_) in values.items()}

    def edit(key, value):
        _, _, start, end, quote = values[key]
        return spans.Edit(start, end, quote + value + quote)

    edits, changes, missing = _plan_keys(desired, found, value_key, force, path, edit)
    if missing:
        lead = "" if not text or text.endswith("\n") else "\n"
        edits.append(spans.Edit(len(text), len(text),
                                lead + "".join(f"{k}={v}\n" for k, v in missing)))
    return text, edits, changes
