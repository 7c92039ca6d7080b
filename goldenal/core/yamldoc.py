"""The one YAML composer of goldenal: located nodes, duplicate keys refused everywhere alike
(loaders keep the last, a lookup finds the first); :func:`load` builds YAML 1.2 core values."""

import math
import re

import yaml

from goldenal.core.errors import DuplicateKeyError, ParseError, yaml_error

MERGE_TAG = "tag:yaml.org,2002:merge"
_STR, _INT, _BOOL, _NULL = ("tag:yaml.org,2002:" + t for t in ("str", "int", "bool", "null"))
NULL_TAG = _NULL
# a plain scalar's tag until :func:`tag_of` resolves it (rarely): composing runs no resolver
PLAIN_TAG = _PLAIN = "tag:goldenal:plain"
_COLLECTION_TAGS = {yaml.SequenceNode: "tag:yaml.org,2002:seq",
                    yaml.MappingNode: "tag:yaml.org,2002:map"}
# the YAML 1.2 core schema (spec §10.3.2): ``on``/``yes`` stay strings, ``0o17`` is an int
NULLS = _NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_BOOLS = frozenset(("true", "True", "TRUE", "false", "False", "FALSE"))
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)")
_INT_RE = re.compile(r"[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+")

# libyaml is an order of magnitude faster than the pure-Python parser
_BaseLoader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def _plain_tag(value):
    if value in _NULLS:
        return _NULL
    if value == "<<":
        return MERGE_TAG
    if value in _BOOLS:
        return _BOOL
    if value[0] in "-+0123456789" and not _FLOAT_RE.fullmatch(value) \
            and _INT_RE.fullmatch(value):
        return _INT
    return _STR


def tag_of(node):
    """A node's tag; a plain scalar's by the YAML 1.2 core schema (null, bool, int, merge, str)."""
    return _plain_tag(node.value) if node.tag == _PLAIN else node.tag


class _Loader(_BaseLoader):
    """Compose-only; plain scalars tagged by :func:`tag_of` (PyYAML's resolver costs a parse)."""

    def __init__(self, stream):
        super().__init__(stream)
        # called once per node, never with path resolvers: builtins save two calls a node
        self.descend_resolver = {}.get
        self.ascend_resolver = ().__len__

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _COLLECTION_TAGS[kind]


def _compose(text, first):
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.composer.ComposerError as exc:
        if not first or "single document" not in str(exc):
            raise
    return next(yaml.compose_all(text, Loader=_Loader), None)


def compose(text, path=None, *, first=False, duplicates="refuse"):
    """Located nodes of YAML (or JSON) text; None when empty; ParseError or DuplicateKeyError."""
    try:
        root = _compose(text, first)
    except yaml.YAMLError as exc:
        kind = "JSON" if str(path or "").lower().endswith(".json") else "YAML"
        raise yaml_error(exc, path, text=text, prefix=f"not valid {kind}") from None
    if duplicates == "refuse":
        # without an anchor no node is reached twice: the key check needs no visited set
        refuse_duplicate_keys(root, path, tree="&" not in text)
    return root


def duplicate_keys(root, *, tree=False):
    """``(key_node, first_key_node)`` for each repeated key under ``root``, in text order.

    Without recursion; also indexes each plain mapping for :func:`get_pair`."""
    # a document that is one scalar has no mapping to check
    found, stack = [], [root] if root is not None and root.id != "scalar" else []
    seen = None if tree else set()
    while stack:
        node = stack.pop()
        if seen is not None:
            if id(node) in seen:
                continue
            seen.add(id(node))
        if node.id == "sequence":
            stack.extend([v for v in node.value if v.id != "scalar"])
            continue
        pairs = node.value
        try:
            index = {pair[0].value: pair for pair in pairs}
        except TypeError:       # a collection as a key: its value is a list
            index = None
        if index is not None and len(index) == len(pairs):
            # the common mapping: scalar keys, no two alike
            if "<<" not in index:
                node._pairs, node._index = pairs, index
            stack.extend([value for _, value in pairs if value.id != "scalar"])
            continue
        first = {}
        for key, value in pairs:
            if key.id != "scalar":
                stack.append(key)
            elif key.value in first and not (key.value == "<<" and tag_of(key) == MERGE_TAG):
                found.append((key, first[key.value]))
            else:
                first.setdefault(key.value, key)
            if value.id != "scalar":
                stack.append(value)
    return sorted(found, key=lambda pair: pair[0].start_mark.index)


def refuse_duplicate_keys(root, path=None, *, tree=False):
    """DuplicateKeyError for the first repeated key: engines keep the last, we the first."""
    dups = duplicate_keys(root, tree=tree)
    if dups:
        key, first = dups[0]
        raise DuplicateKeyError(key.value, path=path, line=line_of(key), col=col_of(key),
                                first_line=line_of(first))


def line_of(node):
    """1-based line of a node's first character."""
    return node.start_mark.line + 1


def node_at(root, keys):
    """The deepest node of ``root`` reached along ``keys`` (mapping keys, sequence indices),
    for a line to name where a check of the plain values found something."""
    node = root
    for key in keys:
        if node is None or node.id == "scalar":
            break
        if node.id == "sequence":
            nxt = node.value[key] if isinstance(key, int) and 0 <= key < len(node.value) else None
        else:
            nxt = next((v for k, v in node.value if k.id == "scalar" and k.value == str(key)),
                       None)
        if nxt is None:
            break
        node = nxt
    return node


def col_of(node):
    return node.start_mark.column + 1


_SPECIAL_FLOATS = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


def load(text, path=None):
    """Plain values of YAML (or JSON) text, YAML 1.2 core schema; None when empty."""
    return construct(compose(text, path), path)


def construct(root, path=None):
    """Plain Python values of a node :func:`compose` gave (see :func:`load`)."""
    built = {}

    def build(node):
        if id(node) in built:
            return built[id(node)]
        if node.id == "scalar":
            value = _scalar_value(node)
        elif node.id == "sequence":
            value = built[id(node)] = []
            value.extend(build(v) for v in node.value)
        else:
            value = built[id(node)] = {}
            merged = {}
            for key, item in node.value:
                if key.id == "scalar" and key.value == "<<" and tag_of(key) == MERGE_TAG:
                    for source in (item.value if item.id == "sequence" else [item]):
                        part = build(source)
                        if isinstance(part, dict):
                            merged = {**part, **merged}
                    continue
                k = build(key)
                value[k if not isinstance(k, (list, dict)) else repr(k)] = build(item)
            for k, v in merged.items():
                value.setdefault(k, v)
        built[id(node)] = value
        return value

    try:
        return None if root is None else build(root)
    except RecursionError:
        raise ParseError("YAML nested too deeply to read", path=path) from None


def _scalar_value(node):
    tag = tag_of(node)
    text = node.value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return text.lower() == "true"
    if tag == _INT:
        digits = text.replace("_", "")
        try:   # 0x, 0o and 0b prefixes; a leading 0 alone is decimal (YAML 1.2)
            return int(digits, 0 if digits.lstrip("+-")[1:2] in ("x", "o", "b") else 10)
        except ValueError:
            return text
    if node.tag == _PLAIN:
        if text.lower() in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[text.lower()]
        if _FLOAT_RE.fullmatch(text):
            return float(text.replace("_", ""))
    return text
