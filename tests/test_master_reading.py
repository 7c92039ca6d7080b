"""Master configs read as indented text: the keys above a reference, however the file is laid out.

:func:`goldenal.auditing.master.recipe_scenarios` reads a key only where a
``CONFIG_FILE`` reference below it needs it; these tests pin it to the plain
definition (every key line kept on a stack while it is open) on real-shaped
and generated files.
"""

import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from goldenal.auditing import master as ms

MASTER = """\
# header comment
e1:
  image: lmsysorg/sglang:v0.5.15
  model-prefix: dsv4
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: "mtp"
        prefill:
          additional-settings:
          # https://example.invalid/recipes/a.yaml
          - "CONFIG_FILE=recipes/sglang/a.yaml"
        decode:
          tp: 8
    agentic-coding:
    - search-space:
      - conc-list: [1]
        decode:
          additional-settings:
          - CONFIG_FILE=recipes/sglang/a.yaml
          - "CONFIG_FILE=recipes/sglang/b.yaml"  # second
e2:
  scenarios:
  - CONFIG_FILE=recipes/top.yaml
  other:
    scenarios:
      x:
        - "CONFIG_FILE=recipes/sglang/c.yaml"
"""


def test_scenarios_of_each_reference():
    assert ms.recipe_scenarios("configs/x-master.yaml", MASTER.split("\n")) == {
        "recipes/sglang/a.yaml": {"fixed-seq-len", "agentic-coding"},
        "recipes/sglang/b.yaml": {"agentic-coding"},
        "recipes/sglang/c.yaml": {"x"},
    }


_KEY = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z0-9_.-]+):(?:\s|$)")


def _reference(lines):
    """The definition: a stack of every open key line, popped by any line at or above its level."""
    out, stack = {}, []
    for text in lines:
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        level = len(text) - len(stripped) + (2 if stripped.startswith("-") else 0)
        while stack and stack[-1][0] >= level:
            stack.pop()
        item = ms._ITEM_RE.match(text)
        if item and item.group(2) == "CONFIG_FILE":
            keys = [k for _, k in reversed(stack)]
            if "scenarios" in keys[1:]:
                out.setdefault(item.group(3).strip(), set()).add(keys[keys.index("scenarios") - 1])
            continue
        km = _KEY.match(text)
        if km:
            stack.append((level, km.group(2)))
    return out


_LINE = st.tuples(
    st.sampled_from(["", " ", "  ", "    ", "\t", "      ", "        "]),
    st.sampled_from(["scenarios:", "fixed-seq-len:", "agentic-coding:", "e:", "- x: 1",
                     "- CONFIG_FILE=recipes/a.yaml", '- "CONFIG_FILE=recipes/b.yaml"',
                     "- 'CONFIG_FILE=c.yaml'  # c", "# comment", "", "-", "- y",
                     "tp: 8", "key: value", "- scenarios:", "-CONFIG_FILE=d.yaml", "k:\r"]),
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=40))
def test_scenarios_match_the_definition(lines):
    assert ms.recipe_scenarios("m.yaml", lines) == _reference(lines)


def test_references_are_every_config_file_item_once_in_file_order():
    assert ms.recipe_references(MASTER.split("\n")) == (
        "recipes/sglang/a.yaml", "recipes/sglang/b.yaml", "recipes/top.yaml",
        "recipes/sglang/c.yaml")
    assert ms.recipe_references(["a:", "  # - CONFIG_FILE=x.yaml", "  - FOO=CONFIG_FILE",
                                 "  - 'CONFIG_FILE=r/v.yaml:agg'"]) == ("r/v.yaml:agg",)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=40))
def test_every_recipe_read_of_a_master_is_among_its_references(lines):
    refs = set(ms.recipe_references(lines))
    assert set(ms.recipe_scenarios("m.yaml", lines)) <= refs
    assert set(ms.recipe_model_prefixes(lines)) <= {r.split(":", 1)[0] for r in refs}


def test_a_copy_of_a_master_config_is_read_once_and_keeps_its_own_path(tmp_path, monkeypatch):
    """Injections are read once per text (as launchers and recipes are); each copy's findings
    are the original's under its own path."""
    import shutil

    from goldenal.auditing import audit

    repo = os.path.join(os.path.dirname(__file__), "data", "audit", "repo")
    tree = tmp_path / "repo"
    shutil.copytree(repo, tree)
    master = tree / "configs" / "test-master.yaml"
    shutil.copy(master, tree / "configs" / "copy-master.yaml")
    calls = []
    real = ms.injections
    monkeypatch.setattr(ms, "injections", lambda *a: calls.append(a[0]) or real(*a))
    found = audit([tree], root=str(tree), settings=False)
    assert calls == ["configs/copy-master.yaml"]      # read once, under the first name walked

    def at(name):
        return [f._replace(path="") for f in found if f.path == f"configs/{name}"]

    assert at("copy-master.yaml") == at("test-master.yaml") != []


def test_a_key_that_only_begins_with_the_switch_name_is_no_injection(tmp_path, run_cli):
    """Regression (atheris): a block whose only SYNTHETIC_ACCEPTANCE* key was another one
    (``SYNTHETIC_ACCEPTANCE_MODE``) had no line to name and raised TypeError in audit."""
    lines = ["entry:", "  scenarios:", "    agentic-coding:", "    - search-space:",
             "      - prefill:", "          additional-settings:",
             '          - "SYNTHETIC_ACCEPTANCE_MODE=replay"',
             '          - "THINKING_MODE=thinking_on"']
    assert ms.injections("configs/master.yaml", lines) == []
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "master.yaml").write_text("\n".join(lines) + "\n")
    code, out, err = run_cli("audit", tmp_path, "--isolated", "--no-cache")
    assert (code, err) == (0, "")
    assert out.startswith("Found 0 findings")
