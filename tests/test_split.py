"""The sequence split on the CPU (issue 9): the plan, the host entry of its four kernels, and the
API's routing. The kernels themselves run in the GPU matrix (tests/test_gpu_correctness.py,
test_split_*); the algorithm they implement is checked in float64 by tests/test_reference.py
(kda_segmented, segments of L chunks)."""
import pytest
import torch

import host_codegen as hc
from host_codegen import expr as X
from kda_kernels import registry
from kda_kernels.configs import (CHUNK, SPLIT_CHUNK, SPLIT_CONSUMERS, SPLIT_LEAN_ID, SPLIT_MAX_G, SPLIT_MIN_CHUNKS,
                                 SPLIT_VSS, split_plan, split_plan_exprs, use_split)

BF = torch.bfloat16


@pytest.mark.parametrize("chunk", [16, 32])
@pytest.mark.parametrize("N", [1, 2, 3, 16, 4096])
@pytest.mark.parametrize("HV", [1, 2, 8, 32, 96])
@pytest.mark.parametrize("T", [1, 15, 16, 4097, 65536, 1 << 20, 8 << 20])
def test_plan_and_entry_expressions_agree(N, HV, T, chunk):
    if T < N:
        pytest.skip("fewer tokens than sequences")
    L, G = split_plan(N, T, HV, chunk)
    env = {"T": T, "HV": HV, "N1": N + 1}
    for name, e in split_plan_exprs(chunk):
        env[name] = X.evaluate(X.simplify(X.from_py(e)), env)
    assert (env["L"], env["G"]) == (L, G)
    chunks = (T + chunk - 1) // chunk          # the most chunks one sequence can have
    assert L * chunk >= SPLIT_MIN_CHUNKS * CHUNK and 1 <= G <= SPLIT_MAX_G and G * L >= chunks and (G - 1) * L < chunks


@pytest.mark.parametrize("N,T,HV", [(1, 65536, 8), (1, 1 << 20, 1), (2, 65536, 8), (1, 262144, 8), (3, 1 << 20, 16)])
def test_the_32_token_plan_keeps_the_segments_in_tokens(N, T, HV):
    """SPLIT_CHUNK's plan cuts where the 16-token plan did, to a chunk: the same G, and L tokens
    within 32 of the 16-token L's."""
    (L16, G16), (L32, G32) = split_plan(N, T, HV), split_plan(N, T, HV, 32)
    assert G32 == G16 and abs(L32 * 32 - L16 * 16) <= 32


@pytest.mark.parametrize("N,T,HV,want", [
    (1, 65536, 8, True), (1, 65536, 16, True), (1, 1 << 20, 8, True), (1, 1 << 20, 1, True),
    (2, 65536, 8, True), (4, 65536, 8, False), (1, 8192, 96, False), (1, 32768, 32, False), (2048, 131072, 32, False),
    (1, 2048, 8, False), (8, 8192, 8, False)])
def test_rule_choices(N, T, HV, want):
    assert use_split(N, T, HV) is want


def test_no_split_below_the_api_threshold():
    """kda_tile.api.use_split leaves before planning when q.shape[1] < _SPLIT_MIN_TOKENS (the
    host-bound calls): the rule must agree that no such call splits."""
    from kda_tile.api import _SPLIT_MIN_TOKENS
    for N in (1, 2, 3):
        for HV in (1, 2, 5):
            for T in range(N, _SPLIT_MIN_TOKENS, 7):
                assert not use_split(N, T, HV), (N, T, HV)
    assert use_split(1, _SPLIT_MIN_TOKENS, 1)


def _split_builds(h0="float32", ht=True):
    return (registry.find("k1", varlen=True, fast_math=False, chunk=SPLIT_CHUNK, ab_halves=SPLIT_VSS),
            registry.find("k2_map", varlen=True),
            registry.find("k2_scan", initial_state=h0, final_state=ht), registry.find("k2_seg", varlen=True))


def _args(lens=(40000, 0, 1, 25000), H=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    T = sum(lens)
    rn = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist())
    return [rn(1, T, H, 128).to(BF), rn(1, T, H, 128).to(BF), rn(1, T, H, 128).to(BF), rn(1, T, H, 128).to(BF),
            rn(1, T, H).to(BF), rn(H), rn(H, 128), cu, rn(len(lens), H, 128, 128), -5.0, None]


@pytest.mark.parametrize("backend", ["py", "cpp"])
def test_split_entry_validates_and_plans(backend):
    e = hc.get_entry(*_split_builds(), backend=backend)
    spec = e.spec
    ch = "" if SPLIT_CHUNK == CHUNK else f"_ch{SPLIT_CHUNK}"
    # the 32-token K1 builds' Newton-refined norms (accurate builds), tail branch, 4-lane norms and
    # 8-row inverse blocks; every varlen
    # K1's early loads, lean prologue and first guess of the slot search
    k1x = "_rnr_tu_nl4_ib_el_lp_sg" if SPLIT_CHUNK == 2 * CHUNK else "_el_lp_sg"
    c2 = "_c2" if SPLIT_CONSUMERS == 2 else ""
    lean = "_leanid" if SPLIT_LEAN_ID else ""
    abh, vss = ("_abh", "_vss") if SPLIT_VSS else ("", "")   # K1 writes Ab's bf16 halves, the passes read v^T
    assert [ks.build_name for ks in spec.kernels] == [
        f"k1_prepare_varlen_ds_skipholes_mqkdiag_u0k2{abh}{ch}{k1x}", f"k2_map_varlen{c2}_u0k2{lean}{vss}{ch}",
        "k2_scan_varlen_h0f32_ht", f"k2_seg_varlen{c2}_u0k2{vss}{ch}"]
    assert {w.name for w in spec.workspace} == {"Wk", "qd", "kr", "Ab", "Mqk", "gC", "maps", "starts"}
    assert [p.name for p in spec.outputs] == ["o", "final_state"]
    a = _args()
    env = e.validate_only(*a, expect_device="cpu")
    L, G = split_plan(4, 65001, 2, SPLIT_CHUNK)
    assert (env["L"], env["G"]) == (L, G) and env["N1"] == 5 and env["T"] == 65001
    a[0] = a[0].float()
    with pytest.raises(TypeError, match=r"^q: expected dtype bfloat16, got float32"):
        e.validate_only(*a, expect_device="cpu")


def test_split_entry_dry_run_shapes():
    e = hc.get_entry(*_split_builds("bfloat16", True), backend="cpp")
    a = _args(lens=(3000, 5), H=3)
    a[8] = a[8].to(BF)
    o, ht = e.dry_run(*a)
    assert o.shape == (1, 3005, 3, 128) and o.dtype == BF and ht.shape == (2, 3, 128, 128) and ht.dtype == BF


def test_split_entry_without_state():
    e = hc.get_entry(*_split_builds(None, False), backend="cpp")
    a = _args(lens=(5000,), H=1)
    a[8] = None
    o, ht = e.dry_run(*a)
    assert o.shape == (1, 5000, 1, 128) and ht is None
    a[8] = torch.zeros(1, 1, 128, 128)
    with pytest.raises(ValueError, match=r"^initial_state: expected None"):
        e.validate_only(*a, expect_device="cpu")


def test_api_routes_fixed_batches_as_sequences(monkeypatch):
    from kda_tile import api
    q = torch.zeros(2, 4096, 8, 128, dtype=BF)
    v = torch.zeros(2, 4096, 8, 128, dtype=BF)
    assert api.use_split(q, v, None) is use_split(2, 8192, 8)
    monkeypatch.setattr(api, "FORCE_SPLIT", True)
    assert api.use_split(q[:, :1], v[:, :1], None) is True
    monkeypatch.setattr(api, "FORCE_SPLIT", False)
    assert api.use_split(q, v, torch.tensor([0, 8192])) is False
    monkeypatch.setattr(api, "FORCE_SPLIT", None)
    assert api.use_split("not a tensor", v, None) is False
    flat = api._as_sequences(q, q, v, v, torch.zeros(2, 4096, 8, dtype=BF), None)
    assert flat[0].shape == (1, 8192, 8, 128) and flat[0].data_ptr() == q.data_ptr()
    assert flat[4].shape == (1, 8192, 8) and flat[5] is None and flat[6].tolist() == [0, 4096, 8192]
    assert api._as_sequences(q.transpose(0, 1), q, v, v, v[..., 0], None) is None


def test_check_inputs_on_split_shapes():
    """check_inputs runs the split entry's checks for a varlen call that splits, and the unsplit
    entry's for a fixed batch that would (it goes to the split as packed sequences)."""
    from kda_tile import api
    H, T = 8, 8192
    q = torch.zeros(1, T, H, 128, dtype=BF)
    a = dict(A_log=torch.zeros(H), dt_bias=torch.zeros(H, 128), device="cpu")
    assert api.use_split(q, q, None) and api.use_split(q, q, torch.tensor([0, T]))
    env = api.check_inputs(q, q, q, q, torch.zeros(1, T, H, dtype=BF), cu_seqlens=torch.tensor([0, T]), **a)
    assert (env["L"], env["G"]) == split_plan(1, T, H, SPLIT_CHUNK)
    env = api.check_inputs(q, q, q, q, torch.zeros(1, T, H, dtype=BF), **a)
    assert "G" not in env and env["T"] == T
    with pytest.raises(TypeError, match=r"^beta: expected dtype bfloat16, got float32"):
        api.check_inputs(q, q, q, q, torch.zeros(1, T, H), cu_seqlens=torch.tensor([0, T]), **a)


def test_prefetching_scan_proves_and_keeps_its_loads_off_the_chain():
    """ScanConfig.prefetch (session 20, not released until timed on the H200): verify proves it
    as it proves a release, and inside the segment loop every global load is of segment
    min(g + 1, G - 1)."""
    from verify.jobs import build_job
    from verify.report import PROVED
    from verify.runner import verify_job
    from kda_kernels.configs import ScanConfig
    r = verify_job(build_job(registry.Build("k2_scan", ScanConfig(varlen=True, initial_state="bfloat16",
                                                                  final_state=True, prefetch=True))))
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks]
    from kda_kernels.k2_scan import build_scan
    body = str(build_scan(ScanConfig(varlen=True, prefetch=True)).script())
    loop = body[body.index("for g in"):]
    assert "gn: T.int32 = T.min(g + 1, G - 1)" in loop
    assert loop.count("maps[") == loop.count("maps[bx, gn,") == 2


def test_split_entry_skip_bits_cover_its_passes():
    """Flag bit 8 skips K1 alone, bit 9 every kernel after it; bit 10 (rewrite the graph nodes) is
    not a skip bit (before session 28 the mask (flags >> 8) & 15 let it skip the scan)."""
    from host_codegen import gen_cpp
    src = gen_cpp.generate(hc.entry_spec(*_split_builds("float32", True)))
    assert "const int skip = ((flags & 256) ? 1 : 0) | ((flags & 512) ? 14 : 0);" in src
    assert "(flags >> 8)" not in src


def test_scan_parts_rule_reaches_the_scan():
    """configs.scan_parts: SCAN_PARTS where the scan's programs (16 a sequence and head) fit one
    wave on 132 SMs, else 1; the API's split plan carries it (in its spp place) to the scan it
    selects."""
    from kda_kernels.configs import SCAN_PARTS, scan_parts
    from kda_tile import api
    assert SCAN_PARTS > 1
    assert scan_parts(1, 65536, 8) == scan_parts(1, 1 << 20, 1) == scan_parts(2, 32768, 4) == SCAN_PARTS
    assert scan_parts(1, 65536, 16) == scan_parts(3, 3 << 16, 4) == scan_parts(9, 9 << 16, 1) == 1
    for HV, parts in ((8, SCAN_PARTS), (16, 1)):
        q = torch.empty(1, 65536, HV, 128, dtype=BF, device="meta")
        for cu in (None, torch.empty(2, dtype=torch.int64, device="meta")):
            assert api._plan(q, q, cu) == (True, SPLIT_CHUNK, parts)
        scan = api.select_builds(varlen=True, fast_math=False, initial_state_dtype=None, output_final_state=True,
                                 split=True, chunk=SPLIT_CHUNK, spp=parts)[2]
        assert scan.stage == "k2_scan" and scan.config.parts == parts and scan.config.final_state
        assert scan.config.threads == 128 * parts
    assert api.scan_parts_for("not a tensor", None, None) == 1


def _scan_checks(b, job=None):
    """(lowered IR of scan build b, run(mutation=None) -> {check: status} from verify on it, or on
    the mutated device function); job: the registry's, or verify's job for an unreleased build."""
    from verify import mutate
    from verify.jobs import build_job
    from verify.lowering import lower
    from verify.report import KernelReport
    from verify.runner import verify_lowered
    job = job or build_job(b)
    low = lower(b.prim_func(), registry.pass_configs(b), b.name)

    def run(fn=None):
        lw = low if fn is None else mutate.applied(low, fn)
        return {c.name: c.status for c in verify_lowered(lw, job, KernelReport(name=b.name)).checks}
    return low, run


def test_parts_scan_needs_each_of_its_barriers():
    """The released scan in parts (ScanConfig.parts) has three block barriers, all written in
    k2_scan.py (after the start rows, after the partial sums, after the new rows). verify proves
    its barriers, and with any one of them dropped barriers.race fails: the start rows, red_s
    across the parts, and the next segment's reads of the rows each thread rewrites."""
    import dataclasses

    from kda_kernels.configs import SCAN_PARTS
    from verify import mutate
    from verify.jobs import _registry_job
    from verify.report import PROVED
    from verify.tir import op_name, tirx
    from tvm.tirx.stmt_functor import post_order_visit   # (tvm is TileLang's: after verify.tir)
    b = registry.find("k2_scan", varlen=True, initial_state="float32", final_state=True, parts=SCAN_PARTS)
    low, run = _scan_checks(b, dataclasses.replace(_registry_job(b.name), only=("barriers",)))
    syncs = []
    post_order_visit(low.device_func.body, lambda n: syncs.append(n) if isinstance(n, tirx.Call)
                     and op_name(n) == "tirx.tvm_storage_sync" else None)
    assert len(syncs) == 3
    clean = run()
    assert clean and all(s == PROVED for s in clean.values()), clean
    for i in range(3):
        got = run(lambda f, i=i: mutate.drop_call(f, "tirx.tvm_storage_sync", nth=i))
        assert got["barriers.race"] != PROVED, (i, got)


def test_async_scan_proves_and_its_copy_width_is_checked():
    """ScanConfig.m_async (the parts scan with M_{g+1} and B_{g+1} copied by cp.async behind
    segment g; not released: slower than the plain four parts in round 40b): verify proves it,
    and with each copy 4 elements wide (16 bytes from 4-byte aligned addresses: the slip session
    40's first version made) it fails bounds, alignment and the race between neighbouring
    threads' copies."""
    from kda_kernels.configs import ScanConfig
    from verify import mutate
    from verify.report import PROVED
    low, run = _scan_checks(registry.Build("k2_scan", ScanConfig(varlen=True, initial_state="float32",
                                                                 final_state=True, parts=4, m_async=True)))
    clean = run()
    assert clean and all(s == PROVED for s in clean.values()), clean
    # the third copy call is the segment loop's copy of M (after the prologue's M and B copies)
    assert "M_s" in low.device_script.split("for g in")[1].split("T.ptx_cp_async(")[1].split(",")[1]
    wide = run(lambda f: mutate.rewrite_call(f, "tl.ptx_cp_async", lambda c: mutate.with_arg(c, 2, 4), nth=2))
    failed = {k for k, s in wide.items() if s != PROVED}
    assert {"bounds.global", "bounds.shared", "layout.alignment", "barriers.race"} <= failed, wide
