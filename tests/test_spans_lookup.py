"""Key lookups in composed YAML: the index built while checking for duplicate keys.

:func:`goldenal.recipes.spans.compose` indexes every mapping of distinct
scalar keys on its duplicate-key pass; lookups through that index must find
what a plain scan of the effective pairs (merges resolved) finds, the
spelling written first winning among several.
"""

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.recipes import spans

_KEYS = ["a", "b", "a_b", "a-b", "'a'", '"b"', "<<", "'<<'"]


def _naive_pair(node, names):
    for key, value in spans.pairs(node):
        if spans.is_scalar(key) and key.value in names:
            return key, value
    return None


def _mappings(node, out, seen):
    if id(node) in seen:
        return out
    seen.add(id(node))
    if spans.is_map(node):
        out.append(node)
        for key, value in node.value:
            _mappings(key, out, seen)
            _mappings(value, out, seen)
    elif node.id == "sequence":
        for value in node.value:
            _mappings(value, out, seen)
    return out


def _value(children):
    return st.one_of(
        st.lists(st.tuples(st.sampled_from(_KEYS), children), max_size=4).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.lists(children, max_size=3).map(lambda vs: "[" + ", ".join(vs) + "]"))


@settings(max_examples=800, deadline=None)
@given(st.recursive(st.sampled_from(["1", "x", "*m", "~"]), _value, max_leaves=12),
       st.booleans())
def test_lookups_find_the_first_written_spelling(body, anchored):
    text = (f"anchor: &m {{a: 1, b: {{a: 2}}}}\nbody: {body}\n" if anchored
            else f"body: {body}\n".replace("*m", "1"))
    try:
        root = spans.compose(text)
    except (yaml.YAMLError, spans.ParseError):
        return
    for node in _mappings(root, [], set()):
        for names in (("a",), ("b",), ("a_b", "a-b"), ("a-b", "a_b"), ("b", "a"), ("<<",)):
            want = _naive_pair(node, names)
            got = spans.get_pair(node, names if len(names) > 1 else names[0])
            assert got == want
            assert spans.get(node, names) is (want[1] if want else None)


def test_a_tree_needs_no_visited_set():
    text = "a: {b: 1, c: [1, {d: 2, d: 3}]}\ne: {f: 1, f: 2}\n"
    root = spans.compose(text, duplicates="caller")
    assert ([(k.value, k.start_mark.line) for k, _ in spans.duplicate_keys(root, tree=True)]
            == [(k.value, k.start_mark.line) for k, _ in spans.duplicate_keys(root)]
            == [("d", 0), ("f", 1)])


def test_merged_and_layered_lookups():
    root = spans.compose("base: &b\n  a: 1\n  b: {c: 2}\nover:\n  <<: *b\n  a: 3\n  a-b: 4\n")
    over = spans.get(root, "over")
    assert spans.scalar(spans.get(over, "a")) == "3"
    assert spans.scalar(spans.get(over, "b", "c")) == "2"
    assert spans.get_pair(over, ("a_b", "a-b", "a"))[0].value == "a"
    view = spans.Layers(spans.get(root, "base"), over)
    assert spans.scalar(spans.get(view, "a")) == "1"
    assert spans.scalar(spans.get(view, ("a-b",))) == "4"


def test_a_document_that_is_one_scalar_has_no_duplicate_keys():
    for text, tree in (("hello\n", True), ("'a: 1'\n", True), ("&x hello\n", False)):
        root = spans.compose(text)
        assert (root.id, spans.duplicate_keys(root, tree=tree)) == ("scalar", [])
