"""K2Config.v_ss (session 48; released in session 49 with one consumer and in the split): v^T as
wgmma's shared bf16 A operand, Ab in two bf16 halves (a chunk's C rows of hi, then C of lo). CPU
only: the names and refusals, Ab's halves hold K1's fp16 Ab exactly, the fixed and varlen builds
prove, and a missing full-barrier wait is caught on v's slot through the transposed A operand's
footprint. bench/k2_round.py `vss` runs it on a GPU."""
import dataclasses
import sys
from pathlib import Path

import pytest
import torch

from kda_kernels import registry
from kda_kernels.configs import K2Config

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))


def _build(varlen, probe=""):
    base = registry.find("k2", varlen=varlen, initial_state="float32", final_state=True, chunk=32, consumers=2)
    return registry.Build("k2", dataclasses.replace(base.config, v_ss=True, probe=probe))


def test_names_and_refusals():
    assert _build(False).name == "k2_recurrence_fixed_h0f32_ht_c2_u0k2_vss_ch32"
    assert _build(True, "no_lo").name == "k2_recurrence_varlen_h0f32_ht_c2_u0k2_vss_ch32_probe_no_lo"
    # released with one consumer (configs.use_vss_one) and in the split's passes (session 49)
    assert {b.config.consumers for b in registry.RELEASED if b.stage == "k2" and b.config.v_ss} == {1}
    assert all(b.config.v_ss for b in registry.RELEASED if b.stage in ("k2_map", "k2_seg"))
    with pytest.raises(AssertionError, match="v_ss forms U0 in K2"):
        registry.Build("k2", K2Config(chunk=32, v_ss=True)).prim_func()          # no u0_in_k2
    with pytest.raises(AssertionError, match="probe no_lo is v_ss's"):
        registry.Build("k2", K2Config(chunk=32, u0_in_k2=True, probe="no_lo")).prim_func()


def test_ab_halves_hold_fp16_exactly():
    import k2_round
    ab = (torch.randn(3, 4 * 32, 32, generator=torch.Generator().manual_seed(1)) * 3).half()
    h = k2_round.ab_halves(ab).view(3, 4, 2, 32, 32)
    assert h.dtype == torch.bfloat16
    assert torch.equal(h[:, :, 0].float() + h[:, :, 1].float(), ab.float().view(3, 4, 32, 32))
    assert h[:, :, 1].abs().max() > 0      # the lo half carries bits


@pytest.fixture(scope="module", params=[False, True], ids=["fixed", "varlen"])
def lowered(request):
    from verify.jobs import build_job
    from verify.lowering import lower
    b = _build(request.param)
    return b, build_job(b), lower(b.prim_func(), registry.pass_configs(b), b.name)


def test_v_ss_proves(lowered):
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = lowered
    got = {c.name: c.status for c in verify_lowered(low, job, KernelReport(name=b.name)).checks}
    assert got and all(s == PROVED for s in got.values()), got


def test_v_ss_without_the_full_wait_races_on_v_slot(lowered):
    from verify import mutate
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = lowered
    cut = mutate.applied(low, lambda f: mutate.drop_call(f, "tl.mbarrier_wait_parity", nth=0))
    rep = verify_lowered(cut, dataclasses.replace(job, only=("barriers",)), KernelReport(name=b.name))
    race = next(c for c in rep.checks if c.name == "barriers.race")
    assert race.status != PROVED
    assert any("U0_r" in str(f) for f in race.findings), [str(f)[:200] for f in race.findings]


def test_k1_ab_halves_workspace_and_proof():
    from verify.jobs import build_job
    from verify.lowering import lower
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    base = registry.find("k1", varlen=False, fast_math=False, chunk=32)
    b = registry.Build("k1", dataclasses.replace(base.config, ab_halves=True))
    assert b.name == "k1_prepare_fixed_mqkdiag_u0k2_abh_ch32_rnr_tu_nl4_ib_el_lp"
    f = b.prim_func()
    ab = next(f.buffer_map[p] for p in f.params if p in f.buffer_map and f.buffer_map[p].name == "Ab")
    assert str(ab.dtype) == "bfloat16" and [str(x) for x in ab.shape] == ["HV", "2 * NC * 32", "32"], ab.shape
    low = lower(f, registry.pass_configs(b), b.name)
    got = {c.name: c.status for c in verify_lowered(low, build_job(b), KernelReport(name=b.name)).checks}
    assert got and all(s == PROVED for s in got.values()), got
    with pytest.raises(AssertionError, match="ab_halves is u0_in_k2's workspace"):
        registry.Build("k1", dataclasses.replace(base.config, ab_halves=True, u0_in_k2=False)).prim_func()
