"""32-token chunks (K1Config.chunk, K2Config.chunk; session 18): the released builds pair by chunk,
the workspace layout follows the chunk in the configs, the host entry and the JIT launcher, and the
split keeps 16-token chunks. CPU only; the GPU matrix runs them (KDA_TILE_CHUNK=32 forces them)."""
import pytest

import host_codegen as hc
from kda_kernels import configs, registry
from kda_tile import _launch


def test_released_pairs_share_their_chunk():
    pairs = hc.released_pairs()
    assert {(a.config.chunk, b.config.chunk) for a, b in pairs} == {(16, 16), (32, 32)}
    # fixed and varlen x fast_math or not x 6 state modes x one or two consumers, or one with v_ss
    # (and its K1 writing Ab's halves)
    assert sum(a.config.chunk == 32 for a, _ in pairs) == 72
    assert sum(b.config.v_ss for _, b in pairs) == 24 and all(a.config.ab_halves == b.config.v_ss for a, b in pairs)
    assert {b.config.consumers for _, b in pairs if b.config.chunk == 32} == {1, 2}
    assert {b.config.consumers for _, b in pairs if b.config.chunk == 16} == {1}
    assert {a.config.fast_math for a, _ in pairs if a.config.chunk == 32} == {False, True}
    # the split's K1 and passes share configs.SPLIT_CHUNK
    assert all(s[0].config.chunk == s[1].config.chunk == s[3].config.chunk == configs.SPLIT_CHUNK
               for s in hc.released_splits())


@pytest.mark.parametrize("varlen", [False, True])
def test_workspace_slots_follow_the_chunk(varlen):
    for chunk in (16, 32):
        k1 = configs.K1Config(varlen=varlen, chunk=chunk, threads=64 * chunk // 16)
        k2 = configs.K2Config(varlen=varlen, chunk=chunk)
        assert k1.derived_vars() == k2.derived_vars() == configs.slot_vars(varlen, chunk)
        B, T, N = (1, 1000, 7) if varlen else (3, 1000, 3)
        NC = eval(k1.derived_vars()["NC"], {}, dict(B=B, T=T, N1=N + 1))
        assert NC == _launch.workspace_slots(B, T, N, varlen, chunk)
    # the 16-token expressions are the released ones, character for character
    assert configs.slot_vars(True, 16) == {"NC": "T // 16 + (N1 - 1)"}
    assert configs.slot_vars(False, 16) == {"NC": "B * ((T + 15) // 16)"}


def test_chunk32_configs_are_named_and_checked():
    b = registry.find("k1", varlen=True, fast_math=False, chunk=32)
    assert b.name.endswith("_ch32_rnr_tu_nl4_ib_el_lp_sg") and b.config.rsqrt_nr and b.config.threads == 128
    assert registry.find("k2", varlen=True, initial_state=None, final_state=False, chunk=32,
                         consumers=1).name.endswith("_htnone_u0k2_ch32")
    two = registry.find("k2", varlen=False, initial_state="float32", final_state=True, chunk=32, consumers=2)
    assert two.name == "k2_recurrence_fixed_h0f32_ht_c2_u0k2_ch32" and two.config.min_blocks == 1
    assert registry.find("k1", varlen=True, fast_math=True, chunk=32).name.endswith("_fast_ds_skipholes_mqkdiag_u0k2_ch32_tu_nl4_ib_el_lp_sg")
    assert registry.find("k1", varlen=False, fast_math=False, chunk=32).name.endswith("_ch32_rnr_tu_nl4_ib_el_lp")
    with pytest.raises(LookupError, match="no released k1 build"):
        registry.find("k1", varlen=True, fast_math=True, chunk=64)


# (N, T, HV, 32-token chunks, two consumers a K2 program)
@pytest.mark.parametrize("N,T,HV,want,two", [(1, 32768, 32, True, False), (1, 8192, 64, True, False),
                                             (1, 8192, 66, True, False), (1, 8192, 67, True, True),
                                             (1, 8192, 96, True, True), (1, 8192, 104, True, True),
                                             (1, 8192, 105, False, False), (1, 8192, 133, False, False), (1, 511, 96, False, False),
                                             (2, 8192, 33, True, False), (2, 8192, 34, True, True),
                                             (2, 8192, 67, False, False), (8, 8192, 8, True, False),
                                             (6, 6 * 1024, 96, False, False), (256, 131072, 32, False, False),
                                             (1, 511, 1, False, False)])
def test_chunk32_rule(N, T, HV, want, two):
    assert configs.use_chunk32(N, T, HV) is want
    assert configs.use_two_consumers(N, T, HV) is two
    assert not two or want   # two consumers only with 32-token chunks


def _ws_chunks_build(n=4):
    import dataclasses
    base = registry.find("k1", varlen=False, fast_math=False, chunk=32)
    return registry.Build("k1", dataclasses.replace(base.config, ws_chunks=n, min_blocks=4))


@pytest.fixture(scope="module")
def ws_k1():
    """The ws_chunks 4 build, its release job and its lowering (one lowering for the tests below)."""
    from verify.jobs import build_job
    from verify.lowering import lower
    b = _ws_chunks_build()
    return b, build_job(b), lower(b.prim_func(), registry.pass_configs(b), b.name)


def test_ws_chunks_is_the_fixed_32_token_workspace_k1s():
    """K1Config.ws_chunks (session 41, JIT only): named, and refused outside the fixed 32-token
    workspace K1 (the varlen slot search and the 16-token and short forms have no chunk loop)."""
    import dataclasses
    b = _ws_chunks_build()
    assert b.name.endswith("_ch32_rnr_tu_nl4_ib_w4_el_lp")
    for field in ({"varlen": True}, {"chunk": 16, "threads": 64}):
        with pytest.raises(AssertionError, match="ws_chunks takes the fixed 32-token workspace K1"):
            registry.Build("k1", dataclasses.replace(b.config, **field)).prim_func()


def test_ws_chunks_k1_proves_and_waits_for_each_chunk(ws_k1):
    """The 32-token K1 over four chunk slots a program, each next chunk's q, k, g copies issued
    behind this chunk's [L; Mqk] product: verify proves it whole (the last program walks only the
    slots below NC, so every workspace byte is stored once), and with the loop's wait for the
    copies dropped the column pass's reads race them (barriers.race)."""
    import dataclasses

    from verify import mutate
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = ws_k1
    clean = {c.name: c.status for c in verify_lowered(low, job, KernelReport(name=b.name)).checks}
    assert clean and all(s == PROVED for s in clean.values()), clean
    assert "T.ptx_wait_group(0)" in low.device_script.split("for jc in")[1].split("T.ptx_cp_async(")[0]
    cut = mutate.applied(low, lambda f: mutate.drop_call(f, "tirx.ptx_wait_group", nth=0))
    got = {c.name: c.status
           for c in verify_lowered(cut, dataclasses.replace(job, only=("barriers",)), KernelReport(name=b.name)).checks}
    assert got["barriers.race"] != PROVED, got


def test_ws_chunks_k1_with_its_slot_bound_before_the_loop_fails_written_once(ws_k1):
    """Session 41's first ws_chunks build bound the stores' slot before the chunk loop, so every
    chunk of a program was stored to its first slot; bounds, races and barriers all held and
    verify proved it. The same bug as an IR mutation (the stores' slot `bc` bound to the loop's
    first slot, bx * 4) fails barriers.written_once, and the other barrier checks still prove it."""
    import dataclasses

    from tvm.tirx.stmt_functor import post_order_visit

    from verify import mutate
    from verify.report import FAILED, PROVED, KernelReport
    from verify.runner import verify_lowered
    from verify.tir import tirx
    b, job, low = ws_k1
    assert "Wk" in job.written_once
    assert "bc: T.int32 = sl_1[0]" in low.device_script
    names = {}
    post_order_visit(low.device_func.body,
                     lambda n: names.setdefault(str(n.name), n) if isinstance(n, tirx.Var) else None)
    cut = mutate.applied(low, lambda f: mutate.rebind(f, "bc", lambda v: names["bx"] * 4))
    assert "bc: T.int32 = bx * 4" in cut.device_script
    got = {c.name: c for c in verify_lowered(cut, dataclasses.replace(job, only=("barriers",)),
                                             KernelReport(name=b.name)).checks}
    wo = got.pop("barriers.written_once")
    assert wo.status == FAILED and any(f.status == FAILED and f.buffer in job.written_once for f in wo.findings), \
        [f.message for f in wo.findings]
    assert all(c.status == PROVED for c in got.values()), {n: c.status for n, c in got.items()}
