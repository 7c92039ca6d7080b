"""docs/engines.md: every ``docs/engines.md §N`` citation names a section that exists,
and the page names every knob spelling the code reads and every build flag the
end-to-end tests use."""

import re

import pytest

from goldenal.engines.knobs import KNOB_NAMES
from goldenal.engines.table import SPELLINGS

from conftest import ROOT

DOC = ROOT / "docs" / "engines.md"
SELF = ROOT / "tests" / "test_engines_doc.py"
TEXT = DOC.read_text()
# "### 5.1 Knobs", "## 1. vLLM"
SECTIONS = frozenset(re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", TEXT, re.M))
CITE = re.compile(r"docs/engines\.md`*")
SECTION_REF = re.compile(r"§(\d+(?:\.\d+)*)")
# What a citation refers to: the text after the name, to the end of its sentence
# within the next line.
CLAUSE = re.compile(r"[^\n]*(?:\n[^\n]*)?")
OLD_NAME = "ENGINES" + ".md"


def _sources():
    for pattern in ("goldenal/**/*.py", "tests/**/*.py", "benchmarks/**/*.py", "README.md",
                    "docs/*.md"):
        for path in sorted(ROOT.glob(pattern)):
            if path not in (DOC, SELF):
                yield path


def _citations():
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for m in CITE.finditer(text):
            clause = CLAUSE.match(text, m.end()).group()
            clause = re.split(r"\.(?:\s|$)", clause, maxsplit=1)[0]
            line = text.count("\n", 0, m.start()) + 1
            yield path.relative_to(ROOT), line, SECTION_REF.findall(clause)


CITATIONS = list(_citations())


def test_the_page_has_the_numbered_sections_code_cites():
    for number in ("0.1", "0.2", "0.3", "1", "1.10", "2", "2.8", "3", "3.7", "4", "4.7", "5",
                   "5.1", "5.3", "6", "7"):
        assert number in SECTIONS


def test_code_cites_the_page():
    assert len(CITATIONS) >= 30
    assert any(str(path) == "tests/e2e/llama_build.py" for path, _, _ in CITATIONS)


@pytest.mark.parametrize("path,line,refs", CITATIONS, ids=lambda v: str(v))
def test_every_citation_names_an_existing_section(path, line, refs):
    if path.suffix == ".py":
        assert refs, f"{path}:{line}: cites docs/engines.md without a § section"
    missing = [r for r in refs if r not in SECTIONS]
    assert not missing, f"{path}:{line}: docs/engines.md has no section {missing}"


def test_nothing_cites_the_unshipped_reference():
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in _sources()
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if OLD_NAME in line]
    assert hits == []


def test_readme_and_architecture_link_the_page():
    assert "[`docs/engines.md`](docs/engines.md)" in (ROOT / "README.md").read_text()
    assert "[`engines.md`](engines.md)" in (ROOT / "docs" / "architecture.md").read_text()


def test_every_knob_name_the_code_reads_is_documented():
    names = {n for names in KNOB_NAMES.values() for n in names}
    names |= {s.name for s in SPELLINGS if s.engine != "runner"}
    missing = sorted(n for n in names if f"`{n}" not in TEXT)
    assert missing == []


def test_the_llama_build_flags_are_the_documented_ones():
    from e2e import llama_build

    section = TEXT.split("### 5.3 ", 1)[1].split("\n### ", 1)[0]
    assert llama_build.VERSION in section
    for flag in llama_build.CMAKE_FLAGS:
        assert flag in section, flag
    documented = set(re.findall(r"-D[A-Z_]+=[A-Za-z]+", section.split("```")[1]))
    assert documented == set(llama_build.CMAKE_FLAGS)
