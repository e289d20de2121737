"""The external corpus (tests/external/): kernels adapted from TileLang's upstream examples,
and kda_tile's fused forward. Each must be proved, or show the true finding its module
explains in EXPECT as (check, message fragment, why). No crash, no false FAILED.

The corpus takes a few minutes on two cores; the slowest modules are marked `slow` and
deselected by default: `python -m pytest -m slow tests/test_verify_external.py` runs them
(or `-m "slow or not slow"` for everything)."""
import importlib
from pathlib import Path

import pytest

from verify.jobs import module_jobs, run_parallel, _work
from verify.report import FAILED, PROVED

EXTERNAL = Path(__file__).parent / "external"
MODULES = sorted(p.stem for p in EXTERNAL.glob("*.py") if p.stem != "__init__")
SLOW = {"persistent", "kda_tile_fused_p1"}   # gemm_persistent takes minutes


def _module(m):
    return importlib.import_module(f"tests.external.{m}")


_cache = {}


def _reports(m):
    if m not in _cache:
        path = str(EXTERNAL / f"{m}.py")
        specs = [("module", path, j.name) for j in module_jobs(path)]
        _cache[m] = {r.name: r for r in run_parallel(_work, specs, 2)}
    return _cache[m]


def test_corpus_shape():
    kernels = {n: m for m in MODULES for n in _module(m).KERNELS}
    def counted(n, m):       # an upstream kernel that is proved or shows a true finding
        want = _module(m).EXPECT[n]
        return _module(m).SOURCE[n].startswith("examples/") and (want is None or want[0] != "unknown")
    upstream = {n for n, m in kernels.items() if counted(n, m)}
    families = {_module(m).SOURCE[n].split("/")[1] for n, m in kernels.items() if n in upstream}
    assert len(upstream) >= 20 and len(families) >= 8, (len(upstream), sorted(families))
    for m in MODULES:
        mod = _module(m)
        assert set(mod.SOURCE) == set(mod.KERNELS) == set(mod.EXPECT), m
    # barriers.written_once runs on the outputs of upstream kernels of five families (17 kernels)
    once = {n for m in MODULES for n in getattr(_module(m), "WRITTEN_ONCE", {}) if n in upstream}
    assert len(once) >= 15 and len({_module(kernels[n]).SOURCE[n].split("/")[1] for n in once}) >= 5, sorted(once)


@pytest.mark.parametrize("module", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in MODULES])
def test_external(module):
    expect = _module(module).EXPECT
    reports = _reports(module)
    problems = []
    for name, want in expect.items():
        r = reports[name]
        if r.error:
            problems.append((name, "crash", r.error))
            continue
        bad = [(c.name, c.status, [f.message for f in c.findings][:3]) for c in r.checks
               if c.status not in (PROVED, "warning")]
        if want is None:
            if r.status != PROVED:
                problems.append((name, bad))
            continue
        if want[0] == "unknown":      # a documented limit: no FAILED, the named check UNKNOWN
            failed = [b for b in bad if b[1] == FAILED]
            if failed or not any(b[0] == want[1] for b in bad):
                problems.append((name, "expected UNKNOWN in", want[1], "got", bad))
            continue
        check, fragment, _why = want
        hit = [f for c in r.checks if c.name == check for f in c.findings
               if f.status == FAILED and fragment in (f.message + " " + (f.access or ""))]
        others = [b for b in bad if b[0].split(".")[0] != check.split(".")[0]]
        if not hit or others:
            problems.append((name, "expected", want[:2], "got", bad))
    assert not problems, problems
