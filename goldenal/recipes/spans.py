"""Byte-exact editing of YAML and JSON text through located spans.

Documents are composed (never constructed) with libyaml into nodes carrying their offsets;
edits are ``(start, end, replacement)`` spans spliced into the text, so nothing is
re-dumped, JSON inside a YAML string (vLLM's speculative config) included.
"""

import itertools
import json
import re
from dataclasses import dataclass

import yaml

from goldenal.core.errors import ParseError, PolicyError
# the one YAML composer, re-exported: spans are read from its located nodes
from goldenal.core.yamldoc import (  # noqa: F401
    MERGE_TAG, NULLS as _NULLS, NULL_TAG as _NULL, PLAIN_TAG as _PLAIN, col_of, compose,
    duplicate_keys, line_of, refuse_duplicate_keys, tag_of)

@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``replacement``."""

    start: int
    end: int
    replacement: str


class OverlappingEdits(ValueError):
    """Two edits want one stretch of text to say different things (``first``, ``second``)."""

    def __init__(self, first, second):
        super().__init__(f"overlapping edits at offset {second.start}")
        self.first, self.second = first, second


def apply_edits(text, edits):
    """Splice non-overlapping edits into ``text`` (identical edits are merged)."""
    out, pos, last = [], 0, None
    # one node reached twice edits once; insertions at one offset keep their planned order
    for edit in sorted(dict.fromkeys(edits), key=lambda e: (e.start, e.end)):
        if edit.start < pos:
            raise OverlappingEdits(last, edit)
        last = edit
        out.append(text[pos:edit.start])
        out.append(edit.replacement)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)


# top-level keys start a line; a leading literal lets the regex engine skip ahead
_TOP_KEY = re.compile(r"\n([A-Za-z_][\w.-]*)\s*:")


def keep_sections(text, keep):
    """``text`` with other top-level sections blanked (line numbers kept); None when not safe."""
    keys = list(_TOP_KEY.finditer("\n" + text))
    names = [m.group(1) for m in keys]
    if not keys or "base" in names or all(name in keep for name in names):
        return None
    # m.start() is the newline before the key in "\n" + text: the key's offset in text
    out = [text[:keys[0].start()]]
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        chunk = text[m.start():end]
        out.append(chunk if m.group(1) in keep else "\n" * chunk.count("\n"))
    return "".join(out)


# -- node helpers -----------------------------------------------------------

class Layers:
    """Mappings read as one, the first with a key winning: a multi-variant recipe's variant.

    As srt-slurm merges an ``override_*`` section over ``base`` (``deep_merge`` in its
    ``src/srtctl/core/config.py``): mappings merge key by key, anything else replaces, and
    a null in an overriding layer deletes the key."""

    id = "mapping"
    flow_style = False

    def __init__(self, *layers):
        self.layers = [layer for layer in layers if layer is not None]
        first = self.layers[0]
        self.start_mark, self.end_mark = first.start_mark, first.end_mark
        self.value = first.value

    def _overrides(self, layer, value):
        return layer is not self.layers[-1] and is_null(value)

    def pairs(self):
        seen, out = set(), []
        for layer in self.layers:
            mine = pairs(layer)
            deleted = {k.value for k, v in mine if is_scalar(k) and self._overrides(layer, v)}
            _add_unseen(out, [(k, v) for k, v in mine    # a collection as a key names nothing
                              if is_scalar(k) and k.value not in deleted], seen)
            seen |= deleted
        return out

    def lookup(self, names):
        found = []
        for layer in self.layers:
            pair = get_pair(layer, names)
            if pair is None:
                continue
            if self._overrides(layer, pair[1]):
                break           # deleted here: nothing below shows through
            found.append(pair[1])
        if len(found) > 1 and is_map(found[0]):
            maps = list(itertools.takewhile(is_map, found))
            return Layers(*maps) if len(maps) > 1 else maps[0]
        return found[0] if found else None


class Reading:
    """A mapping as srtctl reads it, each value through :meth:`pick`."""

    id = "mapping"

    def __init__(self, node):
        self.node = node
        self.start_mark, self.end_mark = node.start_mark, node.end_mark
        self.value, self.flow_style = node.value, node.flow_style

    def pick(self, value):
        raise NotImplementedError

    def pairs(self):
        return [(key, self.pick(value)) for key, value in pairs(self.node)]


def as_written(node):
    """A mapping as the file writes it, not as one variant or combination reads it."""
    return node.node if isinstance(node, Reading) else node


class ZipSlice(Reading):
    """One variant of a ``zip_override_*`` section: each list in it read at ``index`` (a
    one-item list at 0), as srt-slurm slices it (``_apply_zip_slice`` in its
    ``src/srtctl/core/config.py``); a list of lists gives lists."""

    def __init__(self, node, index):
        super().__init__(node)
        self.index = index

    def pick(self, value):
        if value.id == "sequence" and value.value:
            return value.value[0 if len(value.value) == 1 else self.index]
        return ZipSlice(value, self.index) if is_map(value) else value


# What one string of a sweep may expand to: a file's templates stay about its size.
MAX_TEMPLATE = 1 << 16


class Swept(Reading):
    """A ``sweep`` recipe at one combination of its parameters (name -> value node): each
    ``{name}`` in a string replaced by the value as Python writes it, a string that is
    just the placeholder of a list becoming the list; keys stay, ``sweep`` goes
    (``expand_template`` and ``generate_sweep_configs`` in srt-slurm's
    ``src/srtctl/core/sweep.py``).  A replaced scalar is a new node at the old one's
    place, ``templated``: its text is not the file's."""

    def __init__(self, node, params, *, top=True, path=None):
        super().__init__(node)
        self.params, self.top, self.path = params, top, path

    def pairs(self):
        return [pair for pair in super().pairs()
                if not (self.top and is_scalar(pair[0]) and pair[0].value == "sweep")]

    def pick(self, value):
        if is_map(value):
            return Swept(value, self.params, top=False, path=self.path)
        if value.id == "sequence":
            return yaml.SequenceNode(value.tag, [self.pick(v) for v in value.value],
                                     value.start_mark, value.end_mark, value.flow_style)
        if tag_of(value) != "tag:yaml.org,2002:str":
            return value
        text = value.value
        for name, given in self.params.items():
            placeholder = "{" + name + "}"
            if placeholder not in text:
                continue
            if given.id == "sequence":
                if text == placeholder:
                    return given
                written = ",".join(python_str(v) for v in given.value)
            else:
                written = python_str(given)
            if len(text) + text.count(placeholder) * len(written) > MAX_TEMPLATE:
                raise ParseError(f"a sweep template expands past {MAX_TEMPLATE} characters",
                                 path=self.path, line=line_of(value))
            text = text.replace(placeholder, written)
        if text == value.value:
            return value
        node = yaml.ScalarNode(value.tag, text, value.start_mark, value.end_mark, value.style)
        node.templated = True
        return node


def python_str(node):
    """``str()`` of the value PyYAML's safe loader makes of a node (``2.50`` -> ``2.5``,
    ``true`` -> ``True``): what srtctl writes into a template."""
    if not is_scalar(node):
        return str(to_python(node))
    if not node.style and node.value not in _NULLS:     # plain
        try:
            value = yaml.safe_load(node.value)
        except yaml.YAMLError:
            value = None
        if isinstance(value, (bool, int, float)):
            return str(value)
    return "None" if scalar(node) is None else node.value


def zip_length(node, path=None):
    """How many variants a ``zip_override_*`` section makes: the length its lists share
    (one-item lists broadcast); srt-slurm refuses empty or unequal lists."""
    lengths, inside = {}, set()

    def walk(mapping):
        if id(mapping) in inside:
            raise ParseError("a zip_override section contains itself (through an alias)",
                             path=path, line=line_of(mapping))
        inside.add(id(mapping))
        for _, value in pairs(mapping):
            if value.id == "sequence":
                lengths.setdefault(len(value.value), value)
            elif is_map(value):
                walk(value)
        inside.discard(id(mapping))

    walk(node)
    if 0 in lengths:
        raise ParseError("a zip_override list is empty: srt-slurm has nothing to zip",
                         path=path, line=line_of(lengths[0]))
    longer = sorted(n for n in lengths if n != 1)
    if len(longer) > 1:
        raise ParseError(f"zip_override lists of lengths {longer[0]} and {longer[1]}: srt-slurm "
                         "zips lists of one length (or of one item)", path=path,
                         line=line_of(lengths[longer[1]]))
    return longer[0] if longer else 1


def is_map(node):
    return node is not None and node.id == "mapping"


def is_scalar(node):
    return node is not None and node.id == "scalar"


def pairs(node):
    """Effective ``(key_node, value_node)`` pairs, ``<<`` merges resolved, once per node."""
    if isinstance(node, (Layers, Reading)):
        return node.pairs()
    if not is_map(node):
        return []
    cached = node.__dict__.get("_pairs")
    if cached is not None:
        return cached
    node._pairs = []    # a mapping that merges itself (through an alias) adds nothing
    own, merged = [], []
    for key, value in node.value:
        if key.value == "<<" and tag_of(key) == MERGE_TAG:
            for src in value.value if value.id == "sequence" else [value]:
                merged.extend(pairs(src))
        else:
            own.append((key, value))
    if merged:
        _add_unseen(own, merged, {k.value for k, _ in own if is_scalar(k)})
    node._pairs = own
    return own


def _add_unseen(out, more, seen):
    for key, value in more:
        if is_scalar(key) and key.value not in seen:
            seen.add(key.value)
            out.append((key, value))


def _index(node):
    """``{key text: (key_node, value_node)}`` of a mapping's first pair per key."""
    index = {}
    for pair in pairs(node):
        if pair[0].id == "scalar":
            index.setdefault(pair[0].value, pair)
    node._index = index
    return index


def _first_spelling(node, index, names):
    """The pair of whichever of ``names`` is written first in a mapping, or None."""
    found = [index[name] for name in names if name in index]
    if len(found) < 2:
        return found[0] if found else None
    return min(found, key=pairs(node).index)


def get(node, *keys):
    """The value node at ``keys`` (each key may be a tuple of spellings), or None."""
    for key in keys:
        index = getattr(node, "_index", None)
        if index is not None:
            pair = _first_spelling(node, index, key) if isinstance(key, tuple) else index.get(key)
        elif isinstance(node, Layers):
            node = node.lookup(key if isinstance(key, tuple) else (key,))
            if node is None:
                return None
            continue
        else:
            pair = get_pair(node, key)
        if pair is None:
            return None
        node = pair[1]
    return node


def get_pair(node, key):
    """``(key_node, value_node)`` of one key (of a tuple, the one written first), or None."""
    index = getattr(node, "_index", None)
    if index is None:
        if isinstance(node, (Layers, Reading)):
            names = key if isinstance(key, tuple) else (key,)
            for k, v in node.pairs():
                if k.value in names:
                    return k, v
            return None
        if not is_map(node):
            return None
        index = _index(node)
    if not isinstance(key, tuple):
        return index.get(key)
    return _first_spelling(node, index, key)


def own_pair(node, key):
    """Like :func:`get_pair` but only keys written in this mapping (no merges)."""
    names = key if isinstance(key, tuple) else (key,)
    if isinstance(node, Reading):
        pair = own_pair(node.node, names)
        return pair and (pair[0], node.pick(pair[1]))
    if not is_map(node):
        return None
    for k, v in node.value:
        if is_scalar(k) and tag_of(k) != MERGE_TAG and k.value in names:
            return k, v
    return None


def is_null(node):
    """Whether a node is a YAML null (``null``, ``~`` or nothing at all)."""
    return is_scalar(node) and scalar(node) is None


def scalar(node):
    """A scalar node's text value, else None (``null`` and ``~`` give None)."""
    if node is None or node.id != "scalar":
        return None
    # tag_of(node) == _NULL, without resolving what a non-null plain scalar is
    if node.value in _NULLS if node.tag == _PLAIN else node.tag == _NULL:
        return None
    return node.value


def to_python(node):
    """Plain Python value of a node (strings for every scalar but bool/int)."""
    if node is None:
        return None
    if node.id == "scalar":
        tag = tag_of(node)
        if tag.endswith(":int"):
            try:
                return int(node.value)
            except ValueError:
                return node.value
        if tag.endswith(":null"):
            return None
        if tag.endswith(":bool"):
            return node.value.lower() in ("true", "yes", "on")
        return node.value
    if node.id == "sequence":
        return [to_python(v) for v in node.value]
    return {k.value: to_python(v) for k, v in pairs(node) if is_scalar(k)}


def last_scalar(node):
    """The last scalar under a node in text order (where its text really ends)."""
    while node.id != "scalar":
        if not node.value:
            return node
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    return node


def text_end(node):
    """Where a node's text ends: a flow collection's at its closing bracket (its last
    scalar's end would leave the bracket behind), a block's at its last scalar."""
    if node.id != "scalar" and node.flow_style:
        return node.end_mark.index
    return last_scalar(node).end_mark.index


# -- rendering --------------------------------------------------------------

class PerVariant(tuple):
    """One value per variant of a ``zip_override_*`` section, in index order: written as
    a flow list, which srt-slurm slices like the section's other lists."""

    def __str__(self):
        return "[" + ", ".join(self) + "]"


def each(value, fn):
    """``fn`` of a value, or of each variant's value of a :class:`PerVariant`."""
    return PerVariant(fn(v) for v in value) if isinstance(value, PerVariant) else fn(value)


def quote(value, style):
    """A string as a YAML scalar in quoting ``style`` (a :class:`PerVariant` as a flow
    list of such scalars)."""
    if isinstance(value, PerVariant):
        return "[" + ", ".join(quote(v, style) for v in value) + "]"
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style == '"':
        return json.dumps(value, ensure_ascii=False)
    return value


def refuse_template(text, node, path=None):
    """PolicyError for a value a sweep template makes (:class:`Swept`): it is no text to
    rewrite."""
    if getattr(node, "templated", False):
        written = text[node.start_mark.index:node.end_mark.index]
        raise PolicyError(f"this value comes from a sweep template ({written}): set it in the "
                          "sweep's lists; goldenal does not rewrite a template", path=path,
                          line=line_of(node))


def replace_scalar(text, node, value, *, path=None, null_style=None):
    """Edit that sets a scalar's value, keeping its quoting style (a null takes
    ``null_style``: it has none of its own); a :class:`PerVariant` value may replace a
    flow list too, its items' quotes kept."""
    if isinstance(value, PerVariant) and node is not None and node.id == "sequence":
        if not node.flow_style:
            raise ParseError("cannot rewrite a block list here: write it as a flow list "
                             "([a, b])", path=path, line=line_of(node))
        styles = [item.style for item in node.value if is_scalar(item)]
        start, end = node.start_mark.index, text_end(node)
        rendered = quote(value, styles[0] if styles else null_style)
        return None if text[start:end] == rendered else Edit(start, end, rendered)
    if not is_scalar(node):
        raise ParseError("expected a single value here", path=path, line=line_of(node))
    if node.style in ("|", ">"):
        raise ParseError("block scalars are not supported for this setting; write it on "
                         "one line", path=path, line=line_of(node))
    refuse_template(text, node, path)
    start, end = node.start_mark.index, node.end_mark.index
    rendered = quote(value, null_style if is_null(node) else node.style)
    if start == end and text[start - 1:start] == ":":   # ``KEY:`` with nothing after it
        rendered = " " + rendered
    return None if text[start:end] == rendered else Edit(start, end, rendered)


def _line_end(text, index):
    nl = text.find("\n", index)
    return len(text) if nl < 0 else nl


def add_to_mapping(text, node, items, *, value_style=None, path=None):
    """Edit appending ``[(key, value_text)]`` to a block or flow mapping, quoted alike."""
    if not is_map(node):
        raise ParseError("expected a mapping here", path=path, line=line_of(node))
    key_style = next((k.style for k, _ in node.value if is_scalar(k) and tag_of(k) != MERGE_TAG),
                     None)
    rendered = [f"{quote(k, key_style)}: {quote(v, value_style)}" for k, v in items]
    if node.flow_style:
        close = node.end_mark.index - 1
        if text[close] != "}":
            raise ParseError("cannot locate the end of this mapping", path=path,
                             line=line_of(node))
        if not node.value:
            return Edit(close, close, ", ".join(rendered))
        at = text_end(node.value[-1][1])
        # Reuse the separator already used between entries (", " or ",\n    ").
        sep = ", "
        if len(node.value) >= 2:
            prev_end = text_end(node.value[-2][1])
            gap = text[prev_end:node.value[-1][0].start_mark.index]
            if gap.strip() == ",":
                sep = gap
        return Edit(at, at, "".join(sep + r for r in rendered))
    if not node.value:
        raise ParseError("empty mapping", path=path, line=line_of(node))
    indent = node.value[0][0].start_mark.column
    at, newline = _after_last_line(text, node)
    return Edit(at, at, "".join(newline + " " * indent + r for r in rendered))


def _after_last_line(text, node):
    """Where the line of a block's last value ends (its comment stays), and its newline."""
    last = last_scalar(node)
    at = _line_end(text, max(last.end_mark.index - 1, last.start_mark.index))
    return (at - 1, "\r\n") if text[at - 1:at] == "\r" else (at, "\n")


def add_block(text, node, key, items, *, value_style=None, path=None):
    """Edit that appends ``key:`` with a nested block mapping of ``items`` to a mapping."""
    if not is_map(node) or node.flow_style or not node.value:
        raise ParseError(f"cannot add {key} here: expected a block mapping", path=path,
                         line=line_of(node) if node is not None else None)
    indent = node.value[0][0].start_mark.column
    # the indentation step of the mapping's nested blocks, else 2
    step = next((v.value[0][0].start_mark.column - indent for _, v in node.value
                 if is_map(v) and not v.flow_style and v.value), 2) or 2
    at, newline = _after_last_line(text, node)
    body = "".join(f"{newline}{' ' * (indent + step)}{k}: {quote(v, value_style)}"
                   for k, v in items)
    return Edit(at, at, f"{newline}{' ' * indent}{key}:{body}")


# -- JSON inside a string -----------------------------------------------------

def json_members(json_text, *, path=None, line=None):
    """``({key: (value, start, end)}, offset of its closing brace)`` of a JSON object."""
    decoder = json.JSONDecoder()
    ws = " \t\r\n"

    def skip(i):
        while i < len(json_text) and json_text[i] in ws:
            i += 1
        return i

    def fail(msg, i):
        raise ParseError(f"speculative-config JSON does not parse: {msg} at column {i + 1}",
                         path=path, line=line)

    i = skip(0)
    if json_text[i:i + 1] != "{":
        fail("expected '{'", i)
    members, i = {}, skip(i + 1)
    while json_text[i:i + 1] != "}":
        if members:
            if json_text[i:i + 1] != ",":
                fail("expected ',' or '}'", i)
            i = skip(i + 1)
        if json_text[i:i + 1] != '"':
            fail("expected a key", i)
        try:
            key, i = json.decoder.scanstring(json_text, i + 1)
        except ValueError as exc:
            fail(str(exc).split(":")[0], i)
        i = skip(i)
        if json_text[i:i + 1] != ":":
            fail("expected ':'", i)
        i = skip(i + 1)
        try:
            value, end = decoder.raw_decode(json_text, i)
        except ValueError as exc:
            fail(str(exc).split(":")[0], i)
        members[key] = (value, i, end)
        i = skip(end)
    if skip(i + 1) != len(json_text):
        fail("extra data after the object", skip(i + 1))
    return members, i


def json_set(json_text, updates, *, path=None, line=None):
    """Set top-level keys of a JSON object text by splicing, keeping its layout."""
    members, close = json_members(json_text, path=path, line=line)
    new, keys = [], list(members)
    doomed = {key for key, raw in updates.items() if raw is None and key in members}
    edits = _json_deletions(json_text, members, keys, doomed)
    for key, raw in updates.items():
        if raw is None:
            continue
        if key in members:
            _, start, end = members[key]
            if json_text[start:end] != raw:
                edits.append(Edit(start, end, raw))
        else:
            new.append((key, raw))
    if new:
        keys = [k for k in keys if updates.get(k, "") is not None]
        if keys:
            # separators as written: between the last two members, and the last key and value
            item_sep = ","
            _, vstart, vend = members[keys[-1]]
            colon = json_text.rindex(":", 0, vstart)
            key_sep = json_text[json_text.rindex('"', 0, colon) + 1:vstart]
            if len(keys) >= 2:
                prev_end = members[keys[-2]][2]
                item_sep = json_text[prev_end:json_text.index('"', prev_end)]
            at = vend
            text = "".join(f"{item_sep}{json.dumps(k)}{key_sep}{v}" for k, v in new)
        else:
            at = close
            text = ", ".join(f"{json.dumps(k)}: {v}" for k, v in new)
        edits.append(Edit(at, at, text))
    return apply_edits(json_text, edits)


def _json_deletions(json_text, members, keys, doomed):
    """Edits removing ``doomed`` members, one per run of neighbours (none overlap)."""
    def key_start(key):
        return json_text.rindex(json.dumps(key), 0, members[key][1])

    edits, i = [], 0
    while i < len(keys):
        if keys[i] not in doomed:
            i += 1
            continue
        j = i
        while j + 1 < len(keys) and keys[j + 1] in doomed:
            j += 1
        if j + 1 < len(keys):  # up to the next surviving key
            edits.append(Edit(key_start(keys[i]), key_start(keys[j + 1]), ""))
        elif i > 0:  # from the end of the previous surviving value
            edits.append(Edit(members[keys[i - 1]][2], members[keys[j]][2], ""))
        else:  # every member goes
            edits.append(Edit(key_start(keys[i]), members[keys[j]][2], ""))
        i = j + 1
    return edits


def into_removal(edits, insertion):
    """``edits`` with ``insertion`` (an :func:`add_to_mapping` edit) folded into a removal
    that spans its offset: a block mapping's last line removed and a key appended after
    it would overlap; the new line takes the removed one's place instead."""
    for i, edit in enumerate(edits):
        if not edit.replacement and edit.start <= insertion.start <= edit.end:
            text = insertion.replacement
            for newline in ("\r\n", "\n"):
                if text.startswith(newline):  # a line appended after: now the line itself
                    text = text[len(newline):] + newline
                    break
            return [*edits[:i], Edit(edit.start, edit.end, text), *edits[i + 1:]]
    return [*edits, insertion]


def remove_from_mapping(text, node, key, *, path=None):
    """Edit that deletes one key of a mapping written in this mapping."""
    pair = own_pair(node, key)
    if pair is None:
        return None
    k, v = pair
    if node.flow_style:
        idx = [p[0] for p in node.value].index(k)
        if idx + 1 < len(node.value):
            return Edit(k.start_mark.index, node.value[idx + 1][0].start_mark.index, "")
        if idx > 0:
            return Edit(text_end(node.value[idx - 1][1]), text_end(v), "")
        return Edit(k.start_mark.index, text_end(v), "")
    line_start = text.rfind("\n", 0, k.start_mark.index) + 1
    end = _line_end(text, max(last_scalar(v).end_mark.index - 1, v.start_mark.index))
    return Edit(line_start, min(end + 1, len(text)), "")
