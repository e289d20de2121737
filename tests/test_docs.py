"""Citations of docs/math.md in the code name sections that exist, and no code cites a brief
outside the repository."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kda_kernels", "kda_tile", "host_codegen", "verify", "tests", "bench")


def _sources():
    for pkg in PACKAGES:
        yield from (p for p in (ROOT / pkg).rglob("*.py") if "results" not in p.parts)


def test_math_sections_cited_exist():
    text = (ROOT / "docs" / "math.md").read_text()
    sections = set(re.findall(r"^##+ (\d+(?:\.\d+)?)\.? ", text, re.M))
    assert {"1", "2", "2.1", "4", "5"} <= sections, sections
    cited = {}
    for p in _sources():
        for m in re.finditer(r"docs/math\.md sections? (\d+(?:\.\d+)?)(?: and (\d+(?:\.\d+)?))?", p.read_text()):
            for s in m.groups():
                if s:
                    cited.setdefault(s, []).append(p.name)
    assert cited, "no citations found"
    missing = {s: files for s, files in cited.items() if s not in sections}
    assert not missing, missing


def test_no_code_cites_the_external_brief():
    hits = [p.name for p in _sources() if p.name != "test_docs.py" and "KDA.md" in p.read_text()]
    assert not hits, hits
