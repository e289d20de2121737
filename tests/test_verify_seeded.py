"""The seeded-bug corpus: every bug is rejected by the check it was written for, every clean
twin is proved.

EXPECT in each module maps a kernel to None (a clean twin: proved) or to the name of the
check that must reject it ("barriers.parity"), or to a tuple (that check, then checks its
consequences may fail as well). The check must report a FAILED finding; checks of other
families must prove the kernel (or be listed consequences), so a bug is not "caught" by an
unrelated false alarm. Checks of the same family may fail too, or stay UNKNOWN: a broken
protocol often breaks the orderings the race check relies on. TWIN maps every bug to the clean
kernel it is a variant of.
"""
import importlib
from pathlib import Path

import pytest

from verify import CATEGORIES
from verify.jobs import module_jobs, run_parallel, _work
from verify.report import FAILED, PROVED

SEEDED = Path(__file__).parent / "seeded"
MODULES = sorted(p.stem for p in SEEDED.glob("*.py") if p.stem != "__init__")


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
        for name, want in _expect(m).items():
            out.append(pytest.param(name, want, id=f"{m}:{name}"))
    return out


def _checks(want):
    return (want,) if isinstance(want, str) else tuple(want)


def _bugs():
    return {name: _checks(c)[0] for m in MODULES for name, c in _expect(m).items() if c is not None}


def test_corpus_size():
    bugs = _bugs()
    assert len(bugs) >= 36, len(bugs)
    assert set(CATEGORIES) <= {c.split(".")[0] for c in bugs.values()}
    for m in MODULES:
        mod = importlib.import_module(f"tests.seeded.{m}")
        twins = getattr(mod, "TWIN", {})
        for name, c in mod.EXPECT.items():
            if c is not None:
                assert name in twins and mod.EXPECT.get(twins[name], "") is None, (m, name)


@pytest.mark.parametrize("name,want", _cases())
def test_seeded(reports, name, want):
    r = reports[name]
    assert r.error is None, r.error
    if want is None:
        bad = [(c.name, f.status, f.message) for c in r.checks for f in c.findings]
        assert r.status == PROVED, bad
        return
    check, *consequences = _checks(want)
    by_name = {c.name: c for c in r.checks}
    assert check in by_name, sorted(by_name)
    hit = by_name[check]
    assert hit.status == FAILED, (check, hit.status, [f.message for f in hit.findings])
    assert any(f.status == FAILED for f in hit.findings)
    family = check.split(".")[0]
    others = [(c.name, c.status, [f.message for f in c.findings]) for c in r.checks
              if c.category != family and c.status != PROVED and c.name not in consequences]
    assert not others, others
