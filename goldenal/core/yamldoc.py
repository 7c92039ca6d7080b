"""The one YAML composer of goldenal: located nodes, duplicate keys refused.

Every YAML reader composes through :func:`compose`, so a repeated key is
refused everywhere alike (loaders keep the last, a lookup finds the first).
:func:`load` builds plain values by the YAML 1.2 core schema, each node once.
"""

import math
import re

import yaml

from goldenal.core.errors import DuplicateKeyError, ParseError, yaml_error

MERGE_TAG = "tag:yaml.org,2002:merge"
_STR, _INT, _BOOL, _NULL = ("tag:yaml.org,2002:" + t for t in ("str", "int", "bool", "null"))
NULL_TAG = _NULL
# Placeholder tag of a plain scalar with no explicit tag; :func:`tag_of` resolves it
# when (rarely) asked, so composing never runs a resolver.
PLAIN_TAG = _PLAIN = "tag:goldenal:plain"
_COLLECTION_TAGS = {yaml.SequenceNode: "tag:yaml.org,2002:seq",
                    yaml.MappingNode: "tag:yaml.org,2002:map"}
# YAML 1.2 core schema, the only plain-scalar types the readers distinguish
# (YAML 1.2 spec §10.3.2): ``on``/``yes`` stay strings, ``0o17`` is an int.
NULLS = _NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_BOOLS = frozenset(("true", "True", "TRUE", "false", "False", "FALSE"))
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)")
_INT_RE = re.compile(r"[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+")

try:  # libyaml is an order of magnitude faster than the pure-Python parser
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):
        def __init__(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)


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
    """A node's tag, a plain scalar's resolved by the YAML 1.2 core schema.

    Only null, bool, int and the merge key are told apart; every other plain
    scalar is a string.
    """
    return _plain_tag(node.value) if node.tag == _PLAIN else node.tag


class _Loader(_Parser, yaml.resolver.BaseResolver):
    """Compose-only loader: plain scalars are tagged lazily (see :func:`tag_of`).

    PyYAML's regex-table resolver costs as much as the parse itself.
    """

    def __init__(self, stream):
        _Parser.__init__(self, stream)
        yaml.resolver.BaseResolver.__init__(self)
        # The composer calls these once per node; path resolvers are never used,
        # so builtins that ignore their arguments save two Python calls a node.
        self.descend_resolver = {}.get
        self.ascend_resolver = ().__len__

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _COLLECTION_TAGS[kind]


def _compose(text, first):
    if not first:
        return yaml.compose(text, Loader=_Loader)
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.composer.ComposerError as exc:
        if "single document" not in str(exc):
            raise
    for root in yaml.compose_all(text, Loader=_Loader):
        return root
    return None


def compose(text, path=None, *, first=False, duplicates="refuse"):
    """Located nodes of YAML (or JSON) text; None for an empty file.

    ``first`` reads a multi-document stream's first document; ``duplicates``
    ``"caller"`` leaves repeated keys for the caller to report in its own terms.
    Raises ParseError (``line`` set where known) or DuplicateKeyError.
    """
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
    """``(key_node, first_key_node)`` for every key a mapping under ``root`` repeats.

    In text order.  Scalar keys are compared by their text, as the readers
    look them up; ``<<`` merge keys may repeat (each merges its sources).
    Every node is visited once, aliases included, without recursion; with
    ``tree`` (a document without anchors, so without aliases) no visited set
    is kept.  On the way, a mapping whose keys are distinct scalars and
    holds no ``<<`` gets the index :func:`get_pair` looks keys up in.
    """
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
    """Raise DuplicateKeyError for the first repeated key under ``root``: engines' loaders
    keep the last of two, a lookup here the first, so such a file is refused.
    """
    dups = duplicate_keys(root, tree=tree)
    if dups:
        key, first = dups[0]
        raise DuplicateKeyError(key.value, path=path, line=line_of(key), col=col_of(key),
                                first_line=line_of(first))


def line_of(node):
    """1-based line of a node's first character."""
    return node.start_mark.line + 1


def col_of(node):
    return node.start_mark.column + 1


_SPECIAL_FLOATS = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


def load(text, path=None):
    """Plain Python values of YAML (or JSON) text by the YAML 1.2 core schema (null,
    bool, int, float, else the string), ``<<`` merges applied; None when empty.
    Raises ParseError (a repeated key, or nesting too deep).
    """
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
        if text in _SPECIAL_FLOATS or text.lower() in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS.get(text, _SPECIAL_FLOATS.get(text.lower()))
        if _FLOAT_RE.fullmatch(text):
            return float(text.replace("_", ""))
    return text
