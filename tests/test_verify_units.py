"""Unit tests of the verifier's building blocks (no kernels lowered, except one tiny one)."""
import json
import random
import textwrap

import numpy as np
import pytest
import z3

from verify import VERSION, manifest
from verify.numeric import np_eval
from verify.z3expr import eval_condition, floordiv, floormod, truncdiv, truncmod


def _val(t):
    return z3.simplify(t).as_long()


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (-1, 16), (31, 32)])
def test_integer_division_semantics(a, b):
    A, B = z3.IntVal(a), z3.IntVal(b)
    assert _val(floordiv(A, B)) == a // b
    assert _val(floormod(A, B)) == a % b
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
    assert _val(truncdiv(A, B)) == q
    assert _val(truncmod(A, B)) == a - b * q


def test_symbolic_division_matches_python():
    x, y = z3.Ints("x y")
    rng = random.Random(0)
    for _ in range(50):
        a, b = rng.randint(-1000, 1000), rng.choice([-7, -3, 2, 5, 16])
        s = z3.Solver()
        s.add(x == a, y == b)
        assert s.check() == z3.sat
        m = s.model()
        assert m.eval(floordiv(x, y)).as_long() == a // b
        assert m.eval(floormod(x, y)).as_long() == a % b


def test_preconditions_parse():
    names = {n: z3.Int(n) for n in ("B", "T", "H", "NC")}
    c = eval_condition("NC == B * ((T + 15) // 16)", names)
    s = z3.Solver()
    s.add(c, names["B"] == 2, names["T"] == 17)
    assert s.check() == z3.sat and s.model().eval(names["NC"]).as_long() == 4
    c2 = eval_condition("B * T * H <= 2**23", names)
    s = z3.Solver()
    s.add(c2, names["B"] == 1, names["H"] == 1, names["T"] == 2**23 + 1)
    assert s.check() == z3.unsat
    with pytest.raises(ValueError):
        eval_condition("T.bit_length() > 3", names)


def test_numeric_evaluation_agrees_with_z3():
    x, y = z3.Ints("x y")
    terms = [(x * 3 + y) / 4, (x + 2 * y) % 8, z3.If(x < y, x - y, y - x), (x / 2) % 2 * 16 + y % 4]
    xs = np.arange(-20, 20, dtype=np.int64)
    ys = (xs * 7) % 13 - 3
    for t in terms:
        got = np_eval(t, {"x": xs, "y": ys})
        for i in range(len(xs)):
            s = z3.Solver()
            ref = z3.simplify(z3.substitute(t, (x, z3.IntVal(int(xs[i]))), (y, z3.IntVal(int(ys[i])))))
            assert ref.as_long() == int(got[i]), (t, xs[i], ys[i])


def test_layout_bijectivity_numeric():
    from tilelang import tvm  # noqa: F401
    from tvm import tirx

    from verify.checks.layout import _layout_numeric
    from verify.lowering import LayoutInfo
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    swz = LayoutInfo("S", "shared", "layout", [8, 8], [64], [i, j], [i * 8 + tirx.FloorMod(j + i, 8)])
    assert _layout_numeric(swz) is None
    clash = LayoutInfo("S", "shared", "layout", [8, 8], [64], [i, j], [i * 8 + tirx.FloorDiv(j, 2)])
    f = _layout_numeric(clash)
    assert f is not None and "same slot" in f.message


def test_manifest_staleness():
    hashes = {"a": "1" * 64, "b": "2" * 64}
    good = {"verifier_version": VERSION,
            "builds": {n: {"ir_hash": h, "status": "proved", "verifier_version": VERSION} for n, h in hashes.items()}}
    assert manifest.stale(good, hashes) == []
    old = json.loads(json.dumps(good))
    old["verifier_version"] = "0.0"
    assert manifest.stale(old, hashes)
    changed = json.loads(json.dumps(good))
    changed["builds"]["a"]["ir_hash"] = "3" * 64
    assert any("IR hash" in p for p in manifest.stale(changed, hashes))
    missing = json.loads(json.dumps(good))
    del missing["builds"]["b"]
    assert any("no record" in p for p in manifest.stale(missing, hashes))
    failed = json.loads(json.dumps(good))
    failed["builds"]["b"]["status"] = "failed"
    assert manifest.stale(failed, hashes)


TINY = textwrap.dedent('''
    import tilelang.language as T

    def ok():
        @T.prim_func
        def ok(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64) as bx:
                tx = T.get_thread_binding()
                B[tx] = A[tx] + 1.0
        return ok

    def oob():
        @T.prim_func
        def oob(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64) as bx:
                tx = T.get_thread_binding()
                B[tx] = A[tx + 1]
        return oob

    KERNELS = {"ok": ok, "oob": oob}
    PASS_CONFIGS = {"oob": {"tl.disable_safe_memory_legalize": True}}
''')


def test_cli_module_mode(tmp_path, capsys):
    from verify.__main__ import main
    mod = tmp_path / "tiny.py"
    mod.write_text(TINY)
    report = tmp_path / "r.json"
    assert main([str(mod), "--jobs", "1", "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "oob" in out and "bounds.global" in out and "counterexample" in out
    doc = json.loads(report.read_text())
    by = {k["name"]: k for k in doc["kernels"]}
    assert by["ok"]["status"] == "proved" and by["oob"]["status"] == "failed"
    f = [f for c in by["oob"]["checks"] for f in c["findings"]][0]
    assert f["check"] == "bounds.global" and f["buffer"] == "A"
    assert f["counterexample"]["thread"]["threadIdx.x"] == 63
    import sys
    # a table naming a kernel KERNELS does not define is an error, not silently ignored
    mod.write_text(TINY.replace('KERNELS = {"ok": ok, "oob": oob}', 'KERNELS = {"ok": ok}'))
    sys.modules.pop("verify_user_tiny", None)
    with pytest.raises(SystemExit, match="PASS_CONFIGS names 'oob'"):
        main([str(mod), "--jobs", "1", "--json", str(report)])
    mod.write_text(TINY.replace('KERNELS = {"ok": ok, "oob": oob}', 'KERNELS = {"ok": ok}')
                   .replace('PASS_CONFIGS = {"oob": {"tl.disable_safe_memory_legalize": True}}', ''))
    sys.modules.pop("verify_user_tiny", None)
    assert main([str(mod), "--jobs", "1", "--json", str(report)]) == 0


def test_mutation_helpers():
    from tests.seeded.barrier_bugs import mbar_ok

    from verify import mutate
    from verify.lowering import lower
    low = lower(mbar_ok(), {"tl.disable_thread_storage_sync": True})
    f = low.device_func
    g = mutate.drop_call(f, "tl.ptx_fence_barrier_init")
    assert "ptx_fence_barrier_init" in f.script() and "ptx_fence_barrier_init" not in g.script()
    h = mutate.rewrite_call(f, "tirx.ptx_init_barrier_thread_count", lambda c: mutate.with_arg(c, 1, 7))
    assert "ptx_init_barrier_thread_count(mb_1[0], 7)" in h.script().replace("mb[0]", "mb_1[0]")


@pytest.mark.parametrize("kernel,config,degree", [
    ("column_read_swizzled", {}, 1),
    ("ldmatrix_linear", {"tl.disable_wgmma": True}, 4),
])
def test_bank_degree_bitvector_agrees_with_enumeration(kernel, config, degree):
    """The bit-vector search (used when an address has unbounded parts) and exhaustive
    enumeration find the same worst degree."""
    import tests.seeded.bank_bugs as bb
    from verify.checks import banks
    from verify.checks.common import abs_range
    from verify.extract import extract
    from verify.lowering import lower
    from verify.solver import Ctx
    k = extract(lower(getattr(bb, kernel)(), config))
    ctx = Ctx(k)
    site = next(s for s in k.sites if s.kind == "access" and s.shared and s.read and not s.async_proxy
                and (s.op == "ldmatrix" or not config))
    groups, width = banks.phases(site)
    addr, _ = abs_range(site)
    cond = z3.And(list(site.conds)) if site.conds else z3.BoolVal(True)
    num, _ = banks._numeric(k, site, addr, cond, groups, width)
    bv, _ = banks._symbolic(k, ctx, site, addr, cond, groups, width)
    assert num == bv == degree


def test_counts_closed_forms_agree_with_enumeration():
    """verify.counting sums a site's executions in closed form: folded linear bounds (also
    a*v == e with |a| > 1, the unrolled prologue `if j * 2 < n: load(slot j * 2)`) and residue
    counts; each agrees with counting by enumeration, and none falls back to a partial sum."""
    import types

    import z3

    from verify.counting import Counts, bound_of

    v, n, b = z3.Int("v"), z3.Int("n"), z3.Int("b")
    assert bound_of(2 * v == b, "v")[0] == "eq"
    cnt = Counts(types.SimpleNamespace(syms=types.SimpleNamespace(role={})))
    cases = [
        [2 * v == b, 2 * v < n],
        [3 * v + 1 == b],
        [v % 3 == b % 3, v + 4 < n],
        [(v / 2) % 2 == 1],
    ]
    for conds in cases:
        items = cnt.sum_items([(conds, z3.IntVal(1))], v, z3.IntVal(0), n)
        term = cnt.items_term(items)
        assert "psum#" not in str(term), conds
        for nv in range(0, 9):
            for bv in range(-1, 9):
                want = sum(1 for x in range(nv) if all(z3.is_true(z3.simplify(z3.substitute(
                    c, (v, z3.IntVal(x)), (n, z3.IntVal(nv)), (b, z3.IntVal(bv))))) for c in conds))
                got = z3.simplify(z3.substitute(term, (n, z3.IntVal(nv)), (b, z3.IntVal(bv))))
                assert got.as_long() == want, (conds, nv, bv, got, want)


@pytest.mark.parametrize("kernel,want", [("cp_async_rows", False), ("cp_async_rows_again", True),
                                         ("cp_async_rows_unindexed", True)])
def test_self_pair_overlap_needs_two_executions(kernel, want):
    """Two executions of one asynchronous write touch a common byte only when they differ: one
    execution overlapping itself does not count, two with the same bytes do, and so do
    executions that differ only in a loop the address ignores."""
    import tests.seeded.barrier_bugs as bb
    from verify.checks.common import abs_range
    from verify.extract import extract
    from verify.lowering import lower
    from verify.numeric import any_overlap
    k = extract(lower(getattr(bb, kernel)(), bb.MANUAL))
    site = next(s for s in k.sites if s.kind == "access" and s.op == "cp_async" and s.shared)
    assert any_overlap(k, site, site, *abs_range(site), *abs_range(site), distinct_threads=False) is want


def test_sampled_loop_guards_keep_every_residue():
    """A ring loop of symbolic trip count is enumerated over one period of the barrier index; a
    guard such as `1 <= c` must not then drop the executions of a residue (session 24: the
    arrival `if c >= 1: arrive(empty[(c + 1) % 2])` was enumerated as index {0} only, so its
    arrivals on empty[1] were never counted)."""
    import tests.seeded.pipeline_mutants as pm
    from verify import solver
    from verify.checks.barriers import _State
    from verify.extract import extract
    from verify.lowering import lower
    k = extract(lower(pm.ring_gemm_late_release()), ["N >= 1", "N <= 2**20"])
    st = _State(k, solver.Ctx(k))
    arrive = next(s for s in k.sites if s.kind == "mbar" and s.op == "arrive" and s.mbar[0] == "empty")
    assert arrive.conds    # the guard on c
    assert st.ph.values(arrive) == {0, 1}


def test_wgmma_waits_and_commits_are_sites():
    """T.wait_wgmma (tl.wait_wgmma) and T.warpgroup_wait lower to wgmma_wait sites with their
    n, warpgroup_commit_batch to wgmma_commit: the wgmma reads are in flight until then."""
    import tests.seeded.pipeline_mutants as pm
    from verify.extract import extract
    from verify.lowering import lower
    for fn, want in ((pm.ring_gemm_late_release, [1, 0]), (pm.tma_gemm, [0])):
        k = extract(lower(fn()), ["N >= 1", "N <= 2**20"])
        assert [s.extra["n"] for s in k.sites if s.op == "wgmma_wait"] == want, fn.__name__
        assert any(s.op == "wgmma_commit" for s in k.sites)


def test_unknown_intrinsic_is_unsupported():
    """A statement-level intrinsic the model does not know (here tl.sync_grid in place of the
    wgmma wait) is named by model.unsupported, not skipped."""
    import tests.seeded.pipeline_mutants as pm
    from verify import mutate
    from verify.extract import extract
    from verify.lowering import lower
    from verify.tir import tirx
    low = lower(pm.tma_gemm())
    grid = tirx.op.Op.get("tl.sync_grid")
    low.device_func = mutate.rewrite_call(low.device_func, "tl.warpgroup_wait",
                                          lambda c: tirx.Call(c.dtype, grid, []))
    k = extract(low, ["N >= 1", "N <= 2**20"])
    assert any("tl.sync_grid" in why for _, why in k.unsupported), k.unsupported


def test_named_extents_are_one_function_for_every_role():
    """A chunk loop whose trip count a sequence reads from memory, inside the small loop over a
    program's sequences, gets its trip count as one uninterpreted function of the enclosing
    indices (2.13.0), the same for the consumers and the loader, defined by its body."""
    import tests.external.kda_tile_ring_multi as rm
    from verify.extract import extract
    from verify.lowering import lower
    k = extract(lower(rm.ring_multi_seq()), rm.PRECONDITIONS["ring_multi"])
    named = [lp for lp in k.loops if z3.is_app(lp.extent) and lp.extent.decl().name().startswith("~extent#")]
    assert len(named) == 2 and named[0].extent.decl().eq(named[1].extent.decl())
    body, holes = k.extent_defs[named[0].extent.decl().name()]
    assert "cu" in str(body) and len(holes) == named[0].extent.num_args() >= 2   # q and the block index


def _abstract_ctx():
    import types
    from verify import solver
    syms = types.SimpleNamespace(uf_info={"cu": ("int32", "global", "cu")}, role={})
    k = types.SimpleNamespace(syms=syms, counts=None, monotone={}, distinct=(), extent_defs={})
    return solver.Ctx(k)


def test_abstracted_loads_prove_by_congruence_and_fall_back_to_definitions():
    """Ctx.solve first asks a query with each nonlinear term over loaded values replaced by one
    function a body (2.13.0): UNSAT there is final (here by congruence: i == j); a query whose
    proof needs the terms themselves is answered by the query as it stands."""
    ctx = _abstract_ctx()
    cu = z3.Function("cu", z3.IntSort(), z3.IntSort())
    i, j, x, y = z3.Ints("i j x y")
    same = [x == cu(i) / 16, y == cu(j) / 16, i == j, x != y]
    abstract = ctx.abstract_loads(same)
    assert abstract is not None and "cu" not in str(abstract[0])
    assert ctx._check(abstract, 0)[0] == "unsat"
    needs_body = [x == cu(i) / 16, x > 10, cu(i) < 16]
    assert ctx._check(ctx.abstract_loads(needs_body), 0)[0] == "sat"
    assert ctx.solve(needs_body)[0] == "unsat"
    assert ctx.solve([x == cu(i) / 16, x > 10])[0] == "sat"


def test_presolved_retry_keeps_the_answer_and_the_model():
    """A query that exhausts its limit is asked again after simplification, value propagation and
    solving equalities (2.13.0); its models still give every variable, eliminated or not."""
    from verify import solver
    a, b, c = z3.Ints("a b c")
    fs = [a == b + 3, b == 2 * c, c > 4, a < 100]
    r, s, _ = solver._run(fs, 10 ** 7, True)
    assert r == z3.sat
    m = s.model().translate(z3.main_ctx())     # as Ctx._check hands it on
    assert all(z3.is_true(m.eval(f, model_completion=True)) for f in fs)
    assert solver._run(fs + [a < 10], 10 ** 7, True)[0] == z3.unsat


def test_bank_degree_from_the_lanes_when_a_ring_slot_has_no_closed_form():
    """The slot offset of a ring indexed by a counter over sequences from cu is the same for every
    lane of a warp and a whole number of words: the degree comes from the lanes' own offsets
    (2.13.0), found by enumeration: 32 for a column, 1 for a row."""
    import tests.seeded.bank_bugs as bb
    from verify.checks import banks
    from verify.checks.common import abs_range
    from verify.extract import extract
    from verify.lowering import lower
    from verify.solver import Ctx
    for fn, want in ((bb.ring_column_read, 32), (bb.ring_row_read, 1)):
        k = extract(lower(fn()), bb.PRECONDITIONS[fn.__name__])
        ctx = Ctx(k)
        site = next(s for s in k.sites if s.kind == "access" and s.shared and s.read)
        assert banks._lane_part(k, ctx, site, abs_range(site)[0]) is not None
        assert banks.site_degree(k, ctx, site)[0] == want


def test_warp_uniform_terms_only_split_the_block_at_warp_boundaries():
    """A term is taken as one value for every lane of a warp (and left out of the lanes' offsets)
    only where a thread index enters it through a role test at a multiple of 32."""
    import types
    from verify.checks.banks import _warp_uniform
    tx, ty, a = z3.Int("threadIdx.x"), z3.Int("threadIdx.y"), z3.Int("a")
    k = types.SimpleNamespace(threads={"threadIdx.x": (tx, 256), "threadIdx.y": (ty, 1)})
    assert _warp_uniform(k, 2048 * (z3.If(z3.Not(128 <= tx), a, 0) % 3))
    assert _warp_uniform(k, z3.If(tx < 64, a, 2 * a) + 5 * ty)
    assert not _warp_uniform(k, z3.If(100 <= tx, a, 0))
    assert not _warp_uniform(k, z3.If(tx == 128, a, 0))
    assert not _warp_uniform(k, 8 * (tx % 4))


def test_an_error_names_the_step_it_came_from():
    """A kernel whose factory, lowering or mutation raises is reported as an error that says
    where (the user's kernel factory, TileLang's lowering, ...), not as a bare exception."""
    from tests.seeded.barrier_bugs import mbar_ok

    from verify.runner import Job, verify_job

    def broken():
        raise ValueError("no such tile size")
    r = verify_job(Job(name="f", factory=broken))
    assert r.error.startswith("in building the kernel (its factory): ValueError: no such tile size"), r.error
    r = verify_job(Job(name="l", factory=lambda: "not a prim_func"))
    assert r.error.startswith("in lowering: "), r.error

    def bad_mutation(f):
        raise RuntimeError("mutant")
    r = verify_job(Job(name="m", factory=mbar_ok, pass_configs={"tl.disable_thread_storage_sync": True},
                       mutate=bad_mutation))
    assert r.error.startswith("in the mutation: RuntimeError: mutant"), r.error


def test_written_once_declarations_are_checked():
    """barriers.written_once: a declared name that is no tensor of the kernel fails (a typo would
    otherwise check nothing), and a release job (whose config declares its outputs) fails on an
    output it writes and does not declare."""
    import dataclasses

    from tests.seeded import output_bugs as ob
    from verify.runner import Job, verify_job
    from verify.report import FAILED, PROVED
    base = Job(name="store_once", factory=ob.store_once, preconditions=ob.PRECONDITIONS["store_once"],
               pass_configs=ob.PASS_CONFIGS["store_once"], only=("barriers",))

    def verdict(job):
        r = verify_job(job)
        assert r.error is None, r.error
        c = {c.name: c for c in r.checks}.get("barriers.written_once")
        return None if c is None else (c.status, [f.message for f in c.findings])

    assert verdict(base) is None    # opt-in: not run without a declaration
    assert verdict(dataclasses.replace(base, written_once=("out",))) == (PROVED, [])
    st, msgs = verdict(dataclasses.replace(base, written_once=("outt",)))
    assert st == FAILED and "no tensor outt" in msgs[0], msgs
    st, msgs = verdict(dataclasses.replace(base, written_once=("X",), release=True))
    assert st == FAILED and any("out is written, but" in m for m in msgs), msgs


def test_confirm_takes_the_relaxed_model_then_pinned_shapes_then_the_whole_query():
    """Ctx.confirm (2.20.0), the step barriers.race, global_race and written_once share after a
    relaxed query is satisfiable: the relaxed model where it satisfies the whole question, else a
    model with the shapes pinned to the relaxed model's, else the whole query; UNSAT stays UNSAT."""
    import types

    from verify import solver
    N, bx = z3.Int("N"), z3.Int("blockIdx.x")
    syms = types.SimpleNamespace(uf_info={}, role={})
    k = types.SimpleNamespace(syms=syms, counts=None, monotone={}, distinct=(), extent_defs={},
                              blocks={"x": (bx, N)}, threads={}, loops=[], shape={"N": N})
    ctx = solver.Ctx(k)
    res, m0 = ctx.solve([N == 4])
    assert res == "sat"
    assert ctx.confirm(m0, [N >= 1]) == ("sat", m0)                      # a witness as it stands
    res, m = ctx.confirm(m0, [bx * N == 12, bx >= 0, bx < N])            # N pinned to 4: bx = 3
    assert res == "sat" and m.eval(bx).as_long() == 3 and m.eval(N).as_long() == 4
    res, m = ctx.confirm(m0, [bx * N == 13, bx >= 1, bx < N])            # not at N = 4: N = 13
    assert res == "sat" and m.eval(N).as_long() == 13
    assert ctx.confirm(m0, [bx * N == 13, bx >= 2, N >= 2])[0] == "unsat"


def test_proxy_fence_is_not_definite_beside_an_extern_call():
    """barriers.proxy_fence (2.21.1): verify models no ordering effect of an extern call, and one
    may be the user's own fence.proxy.async.global (TileLang emits none), so a generic store of
    global bytes read back through TMA is UNKNOWN beside one, FAILED without (seeded
    write_then_tma_load)."""
    from tests.seeded import memory_bugs as mb
    from verify.report import FAILED, UNKNOWN
    from verify.runner import Job, verify_job

    def verdict(fn):
        r = verify_job(Job(name="wl", factory=fn, pass_configs=mb.MANUAL, only=("barriers",)))
        assert r.error is None, r.error
        c = {c.name: c for c in r.checks}["barriers.proxy_fence"]
        return c.status, [f.message for f in c.findings]

    st, msgs = verdict(lambda: mb._write_then_load("write_extern_load", False, extern_fence=True))
    assert st == UNKNOWN and "user_fence_proxy_async_global" in msgs[0], (st, msgs)
    st, msgs = verdict(mb.write_then_tma_load)
    assert st == FAILED and "fence.proxy.async.global" in msgs[0], (st, msgs)


def test_definite_finding_is_unknown_with_a_reason():
    """checks.common.definite_finding (2.22.0), which race, written_once and proxy_fence share: a
    satisfiable query is FAILED only where nothing it depends on lies outside the model; with a
    reason it is UNKNOWN, naming the reason, and keeps the counterexample."""
    from types import SimpleNamespace

    from verify.checks.common import definite_finding
    from verify.report import FAILED, UNKNOWN

    ctx = SimpleNamespace(counterexample=lambda m, fs: {"model": m, "n": len(fs)})
    k = SimpleNamespace(script_lines=[])
    f = definite_finding(k, ctx, "barriers.race", None, "data race on X", "m0", [1, 2], "")
    assert f.status == FAILED and f.message == "data race on X" and f.counterexample == {"model": "m0", "n": 2}
    f = definite_finding(k, ctx, "barriers.race", None, "data race on X", "m0", [1, 2], "orderings through w")
    assert f.status == UNKNOWN and f.message == "data race on X; not definite: orderings through w"
    assert f.counterexample == {"model": "m0", "n": 2}


def test_arithmetic_helpers_are_told_from_the_rest():
    """extract.arithmetic_helpers (2.23.0): a kernel's imported helpers that are scalar arithmetic
    (kda_tile's kda_* math) are known pure; asm volatile, a fence, a barrier, a pointer, a global
    name, a load in asm or a memory clobber each make a helper opaque."""
    from kda_kernels import _math
    from verify.extract import arithmetic_helpers
    ours = _math.ACCURATE_SOURCE + _math.FAST_SOURCE + _math.FTZ_SOURCE + _math.NR_SOURCE
    assert arithmetic_helpers(ours) == {"kda_ex2", "kda_ex2_ftz", "kda_rcp_1p_ex2_ftz", "kda_rsqrt_approx",
                                        "kda_rsqrt_nr", "kda_sigmoid_rcp", "kda_sigmoid_rcp_ftz", "kda_sigmoid_tanh"}
    others = r'''
__device__ __forceinline__ float f_volatile(float x) { float y; asm volatile("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ float f_fence(float x) { asm("fence.acq_rel.gpu;"); return x; }
__device__ __forceinline__ float f_bar(float x) { __syncthreads(); return x; }
__device__ __forceinline__ float f_ptr(float* p) { return p[0]; }
__device__ __forceinline__ float f_glob(float x) { return x * g_scale; }
__device__ __forceinline__ float f_ld(float x) { float y; asm("ld.global.f32 %0, [%1];" : "=f"(y) : "l"(x)); return y; }
__device__ __forceinline__ float f_clob(float x) { float y; asm("mov.f32 %0, %1;" : "=f"(y) : "f"(x) : "memory"); return y; }
__device__ __forceinline__ float ok_fma(float x) { float a = 2.0f * x, b; b = fmaf(a, x, 1.0f); return b; }
'''
    assert arithmetic_helpers(others) == {"ok_fma"}


def _race_beside(callee, source):
    """Thread tx writes s[tx] through callee, then reads s[127 - tx] with no barrier."""
    import tilelang.language as T

    @T.prim_func
    def race_beside(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding()
            T.import_source(source)
            s[tx] = T.call_extern("float32", callee, A[tx])
            B[tx] = s[127 - tx]
    return race_beside


def test_race_is_not_definite_beside_an_impure_extern_call():
    """barriers.race (2.23.0): beside an extern call whose callee is not known pure (it may be a
    barrier the model does not see) a race is UNKNOWN, naming the call; beside an arithmetic
    helper of the kernel's own imported source it stays FAILED."""
    from tests.seeded import memory_bugs as mb
    from verify.report import FAILED, UNKNOWN
    from verify.runner import Job, verify_job

    def verdict(callee, source):
        r = verify_job(Job(name="rb", factory=lambda: _race_beside(callee, source), pass_configs=mb.MANUAL,
                           only=("barriers",)))
        assert r.error is None, r.error
        c = {c.name: c for c in r.checks}["barriers.race"]
        return c.status, [f.message for f in c.findings]

    pure = "__device__ __forceinline__ float twice(float x) { return 2.0f * x; }\n"
    st, msgs = verdict("twice", pure)
    assert st == FAILED and "not definite" not in msgs[0], (st, msgs)
    sync = "__device__ __forceinline__ float synced(float x) { __syncthreads(); return x; }\n"
    st, msgs = verdict("synced", sync)
    assert st == UNKNOWN and "extern calls (synced)" in msgs[0], (st, msgs)
