"""Every ``docs/<page>.md §N`` citation in code, tests, benchmarks and docs names a
section that exists on that page, and nothing cites a reference file the project
does not ship."""

import re

import pytest

from conftest import ROOT

DOCS = ROOT / "docs"
# "## 2. The rules", "### 2.3 Windows from two scrapes"
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.M)
SECTIONS = {path.stem: frozenset(HEADING.findall(path.read_text(encoding="utf-8")))
            for path in sorted(DOCS.glob("*.md"))}
# Pages whose sections are numbered for citation: a citation in code must name one.
NUMBERED = ("engines", "formats", "policy")
# ``docs/formats.md §2.3`` anywhere; ``[formats.md §2.3](formats.md#...)`` inside docs/.
CITE = re.compile(r"docs/(\w+)\.md`*")
DOC_LINK = re.compile(r"\[`?(\w+)\.md`? (§[^\]]*)\]")
SECTION_REF = re.compile(r"§(\d+(?:\.\d+)*)")
CLAUSE = re.compile(r"[^\n]*(?:\n[^\n]*)?")
# The tests that describe the citation form rather than cite
CHECKERS = (ROOT / "tests" / "test_docs_citations.py", ROOT / "tests" / "test_engines_doc.py")
# Reference files that are not part of the project (spelled so this file does not match)
UNSHIPPED = tuple(name + ".md" for name in ("FORMATS", "POLICY", "INTEROP", "DESIGN",
                                             "ENGINES"))


def _sources():
    for pattern in ("goldenal/**/*.py", "tests/**/*.py", "tests/data/samples/*.txt",
                    "benchmarks/**/*.py", "README.md", "docs/*.md"):
        yield from (path for path in sorted(ROOT.glob(pattern)) if path not in CHECKERS)


def _citations():
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for m in CITE.finditer(text):
            page = m.group(1)
            if path == DOCS / f"{page}.md" or page not in SECTIONS:
                continue  # a page describing its own citation form
            clause = CLAUSE.match(text, m.end()).group()
            clause = re.split(r"\.(?:\s|$)", clause, maxsplit=1)[0]
            line = text.count("\n", 0, m.start()) + 1
            yield path.relative_to(ROOT), line, page, tuple(SECTION_REF.findall(clause))
        if path.parent == DOCS:
            for m in DOC_LINK.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                yield (path.relative_to(ROOT), line, m.group(1),
                       tuple(SECTION_REF.findall(m.group(2))))


CITATIONS = list(_citations())


def test_the_new_pages_have_the_sections_code_cites():
    assert {"0.1", "0.2", "1", "1.2", "1.5", "2", "2.2", "2.3", "3", "5", "6", "7", "8", "9",
            "10"} <= SECTIONS["formats"]
    assert {"1", "2", "3", "4"} <= SECTIONS["policy"]


def test_code_cites_the_pages():
    cited = {page for _, _, page, refs in CITATIONS if refs}
    assert {"engines", "formats", "policy"} <= cited
    assert sum(1 for _, _, page, _ in CITATIONS if page == "formats") >= 20
    assert sum(1 for _, _, page, _ in CITATIONS if page == "policy") >= 6


@pytest.mark.parametrize("path,line,page,refs", CITATIONS, ids=lambda v: str(v))
def test_every_citation_names_an_existing_section(path, line, page, refs):
    if path.suffix == ".py" and page in NUMBERED:
        assert refs, f"{path}:{line}: cites docs/{page}.md without a § section"
    missing = [r for r in refs if r not in SECTIONS[page]]
    assert not missing, f"{path}:{line}: docs/{page}.md has no section {missing}"


def test_nothing_cites_an_unshipped_reference():
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in _sources()
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if any(name in line for name in UNSHIPPED)]
    assert hits == []


def test_readme_and_architecture_link_the_pages():
    readme = (ROOT / "README.md").read_text()
    architecture = (DOCS / "architecture.md").read_text()
    for page in NUMBERED:
        assert f"[`docs/{page}.md`](docs/{page}.md)" in readme
        assert f"[`{page}.md`]({page}.md)" in architecture


def test_in_page_links_point_at_existing_headings():
    """``(formats.md#23-windows-from-two-scrapes)``-style anchors resolve to a heading of that page."""
    def anchors(path):
        out = set()
        for title in re.findall(r"^#{1,4} (.+)$", path.read_text(encoding="utf-8"), re.M):
            slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            out.add(slug)
        return out

    bad, checked = [], 0
    for page in NUMBERED:
        text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\((\w+\.md)#([\w\-]+)\)", text):
            checked += 1
            if anchor not in anchors(DOCS / target):
                bad.append(f"docs/{page}.md -> {target}#{anchor}")
    assert checked >= 5
    assert bad == []
