"""The seeded-bug corpus: every bug is rejected for the right reason, every twin passes."""
import importlib
from pathlib import Path

import pytest

from verify.jobs import module_jobs, run_parallel, _work
from verify.report import PROVED

SEEDED = Path(__file__).parent / "seeded"
MODULES = ["bounds_bugs", "layout_bugs", "barrier_bugs", "bank_bugs", "pipeline_mutants"]


def _expect(module):
    return importlib.import_module(f"tests.seeded.{module}").EXPECT


@pytest.fixture(scope="module")
def reports():
    specs = []
    for m in MODULES:
        path = str(SEEDED / f"{m}.py")
        specs += [("module", path, j.name) for j in module_jobs(path)]
    return {r.name: r for r in run_parallel(_work, specs, 2)}


def _cases():
    out = []
    for m in MODULES:
        for name, cat in _expect(m).items():
            out.append(pytest.param(name, cat, id=f"{m}:{name}"))
    return out


def test_corpus_size():
    bugs = [n for m in MODULES for n, c in _expect(m).items() if c is not None]
    twins = [n for m in MODULES for n, c in _expect(m).items() if c is None]
    assert len(bugs) >= 20 and len(twins) >= 10
    assert {c for m in MODULES for c in _expect(m).values() if c} == {"bounds", "layout", "barriers", "banks"}


@pytest.mark.parametrize("name,category", _cases())
def test_seeded(reports, name, category):
    r = reports[name]
    assert r.error is None, r.error
    if category is None:
        bad = [(c.name, f.message) for c in r.checks for f in c.findings]
        assert r.status == PROVED, bad
    else:
        failed = {c.category for c in r.checks if c.status != PROVED}
        assert failed == {category}, [(c.name, c.status, [f.message for f in c.findings])
                                      for c in r.checks if c.status != PROVED]
        # the rejection names the check and gives a counterexample where one exists
        findings = [f for c in r.checks for f in c.findings if c.category == category]
        assert findings and all(f.status == "failed" for f in findings)
