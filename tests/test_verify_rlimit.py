"""Z3 queries run under a resource limit (rlimit), not a wall-clock timeout: verdicts and the
solver's work are the same on an idle and on a fully loaded CPU."""
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import z3

from verify import solver

ROOT = Path(__file__).resolve().parents[1]
SMALL = "k2_recurrence_varlen_h0f32_htnone_u0k2"   # one of the quickest released builds to verify


def _env(**extra):
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _verify_small(tmp_path, tag):
    out = tmp_path / f"{tag}.json"
    # --reprove: the build's proved record would otherwise be carried over without a query
    p = subprocess.run([sys.executable, "-m", "verify", "--only", SMALL, "--reprove", "--jobs", "1", "--json", str(out)],
                       cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    doc = json.loads(out.read_text())
    (k,) = doc["kernels"]
    verdicts = {c["name"]: c["status"] for c in k["checks"]}
    stats = {n: v for n, v in doc["solver"][SMALL].items() if n != "solver_seconds"}   # seconds vary
    return k["status"], verdicts, stats


def test_verdicts_and_solver_work_identical_under_load(tmp_path):
    idle = _verify_small(tmp_path, "idle")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(2, os.cpu_count() or 2))]
    try:
        loaded = _verify_small(tmp_path, "loaded")
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    assert idle[0] == "proved"
    assert idle[1] == loaded[1]
    assert idle[2] == loaded[2]          # queries, memo hits, unknowns, resource units, largest query
    assert idle[2]["queries"] > 0 and idle[2]["rlimit"] > 0


def test_a_query_over_its_limit_is_unknown_and_says_why():
    x, y, z = z3.Ints("x y z")
    hard = [x * x * y + z * z * x == 1234567, x > 1, y > 1, z > 1, x * y * z < 10 ** 9]
    ctx = solver.Ctx(types.SimpleNamespace(syms=None), rlimit=2000)
    status, why = ctx.solve(hard, facts=False)
    assert status == "unknown" and "resource limit of 2000" in why and "KDA_VERIFY_RLIMIT" in why
    assert solver.Ctx(types.SimpleNamespace(syms=None), rlimit=0).solve([x > 1, x < 3], facts=False)[0] == "sat"


def test_default_limit_has_headroom_over_the_released_builds_and_env_overrides():
    assert solver.RLIMIT > solver.RLIMIT_MEASURED > 0
    code = "from verify import solver; print(solver.DEFAULT_RLIMIT)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(KDA_VERIFY_RLIMIT="12345"),
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "12345"


def test_a_modules_rlimit_raises_its_kernels_limit_only(tmp_path):
    """RLIMIT in a user module gives the named kernels' queries that many units (above the
    default, never below it); a name that is no kernel of the module stops the run."""
    from verify.jobs import module_jobs
    mod = tmp_path / "m.py"
    mod.write_text("import tilelang.language as T\n"
                   "def a():\n    @T.prim_func\n    def a(X: T.Tensor((4,), 'float32')):\n"
                   "        with T.Kernel(1, threads=4) as b:\n            X[T.get_thread_binding()] = 1.0\n"
                   "    return a\n"
                   "KERNELS = {'a': a, 'b': a}\nRLIMIT = {'a': 10 ** 9, 'b': 5}\n")
    jobs = {j.name: j for j in module_jobs(str(mod))}
    assert jobs["a"].rlimit == 10 ** 9 and jobs["b"].rlimit == 5
    from verify.runner import verify_job
    import verify.solver as S
    seen = []
    real = S.Ctx.__init__

    def spy(self, kernel, rlimit=None):
        seen.append(rlimit)
        real(self, kernel, rlimit)
    S.Ctx.__init__ = spy
    try:
        verify_job(jobs["a"])
        verify_job(jobs["b"])
    finally:
        S.Ctx.__init__ = real
    assert seen[0] == 10 ** 9 and seen[-1] == S.DEFAULT_RLIMIT
    bad = tmp_path / "m2.py"
    bad.write_text(mod.read_text().replace("RLIMIT = {'a': 10 ** 9, 'b': 5}", "RLIMIT = {'c': 1}"))
    import pytest
    with pytest.raises(SystemExit, match="RLIMIT names 'c'"):
        module_jobs(str(bad))


def test_builds_near_the_default_limit_carry_their_own():
    """Builds with a query that reached the default 20 M units in some run take their own limit,
    so that no worker order can leave them UNKNOWN (verify/solver.py, sessions 27 and 34)."""
    from kda_kernels import configs, registry
    for b in registry.RELEASED:
        c = b.config
        if b.stage == "k2" and c.consumers == 2 and c.mode == "full":
            assert c.verify_rlimit == configs.TWO_CONSUMER_RLIMIT, b.name
        if b.stage == "k2" and c.seqs_per_program > 1:
            assert c.verify_rlimit == configs.SPP_RLIMIT, b.name
        if b.stage == "k1_short" and not c.varlen:
            assert c.verify_rlimit == configs.SHORT_FIXED_RLIMIT, b.name
