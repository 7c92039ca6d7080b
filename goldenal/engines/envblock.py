"""Writing knobs into environment mappings and ``KEY=value`` files.

Shared by the engines whose knob is an environment variable (SGLang and
TensorRT-LLM).  New entries copy the block's own style: the indentation of
its keys and the quote character most of its values use (InferenceX recipes
mix ``'1'`` and ``"1"``; a block with no quoted value gets ``"``).
"""

from goldenal.engines.base import check_pinned, same_number
from goldenal.recipes import spans
from goldenal.recipes.env import env_file_values, quote_style, read_env_file


def plan_site_env(doc, site, desired, *, value_key, force):
    """Edits for a site's environment block, creating ``<role>_environment`` if absent."""
    if site.env is None and site.backend is not None:
        key = f"{site.role}_environment"
        style = '"'
        edit = spans.add_block(doc.text, site.backend, key, list(desired.items()),
                               value_style=style, path=doc.path)
        return [edit], [(k, None, v) for k, v in desired.items()]
    return plan_env(doc, site.env, desired, value_key=value_key, force=force)


def plan_env(doc, env, desired, *, value_key, force):
    """Edits that make an environment mapping hold ``desired`` (ordered dict).

    ``value_key`` is the knob whose existing different value is refused
    without ``force``; companions (e.g. SGLang's method) are simply set.
    Returns ``(edits, changes)``.
    """
    edits, changes, missing = [], [], []
    for key, value in desired.items():
        pair = spans.get_pair(env, key)
        if pair is None:
            missing.append((key, value))
            changes.append((key, None, value))
            continue
        node = pair[1]
        old = spans.scalar(node)
        if key == value_key:
            check_pinned(key, old, value, force=force, path=doc.path, line=spans.line_of(node))
            if same_number(old, value):
                continue      # already golden: '2.5' stays '2.5', byte for byte
        edit = spans.replace_scalar(doc.text, node, value, path=doc.path)
        if edit is not None:
            edits.append(edit)
            changes.append((key, old, value))
    if missing:
        edits.append(spans.add_to_mapping(doc.text, env, missing, value_style=quote_style(env),
                                          path=doc.path))
    return edits, changes


def plan_env_file(path, desired, *, value_key, force, create=True, ref=None):
    """Edits for a ``KEY=value`` environment file; returns ``(text, edits, changes)``.

    The file is read by :func:`goldenal.recipes.env.read_env_file` (a regular
    file of bounded size; ``ref`` is where it was named); a missing one is
    created when ``create``.
    """
    text = read_env_file(path, ref=ref, missing_ok=create)
    found = env_file_values(text, path)
    edits, changes, missing = [], [], []
    for key, value in desired.items():
        if key not in found:
            missing.append((key, value))
            changes.append((key, None, value))
            continue
        old, line, start, end, quote = found[key]
        if key == value_key:
            check_pinned(key, old, value, force=force, path=path, line=line)
        if old != value and not (key == value_key and same_number(old, value)):
            edits.append(spans.Edit(start, end, quote + value + quote))
            changes.append((key, old, value))
    if missing:
        lead = "" if not text or text.endswith("\n") else "\n"
        edits.append(spans.Edit(len(text), len(text),
                                lead + "".join(f"{k}={v}\n" for k, v in missing)))
    return text, edits, changes


__all__ = ["plan_env", "plan_site_env", "plan_env_file", "quote_style", "env_file_values", "same_number"]
