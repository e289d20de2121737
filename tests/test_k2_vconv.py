"""K2Config.v_conv (session 47): v to fp16 by the loading warpgroup's idle warps, masked past the
sequence into a v-major slot that the consumers' wgmma reads from shared memory. Not released
yet; these tests keep its build provable and its names and refusals right (the GPU check
against float64 is bench/k2_round.py's, `device_round.sh round47d`)."""
import dataclasses

import pytest

from kda_kernels import registry
from kda_kernels.configs import K2Config

BASE = "k2_recurrence_fixed_h0f32_ht_c2_u0k2_ch32"


def _vconv(name=BASE, **kw):
    return registry.Build("k2", dataclasses.replace(registry.BY_NAME[name].config, v_conv=True, **kw))


def test_names_and_refusals():
    assert _vconv().name == "k2_recurrence_fixed_h0f32_ht_c2_u0k2_vconv_ch32"
    with pytest.raises(AssertionError, match="v_conv is for the full chain"):
        registry.Build("k2", K2Config(v_conv=True)).prim_func()          # U0 from K1, not v
    with pytest.raises(AssertionError, match="v_conv is for the full chain"):
        _vconv("k2_recurrence_varlen_h0none_htnone_u0k2_spp8").prim_func()


def test_converter_mapping_covers_the_slot_once():
    # the converter warps' (token, vector) of each 16-byte vector index, as in the kernel
    for C, BP in ((32, 128), (32, 64), (16, 128)):
        JH, NV = BP // 64, C * BP // 8
        got = {(idx // 32 // JH * 4 + idx % 32 // 8, idx // 32 % JH * 8 + idx % 8) for idx in range(NV)}
        assert got == {(r, j8) for r in range(C) for j8 in range(BP // 8)}


@pytest.fixture(scope="module")
def vconv_k2():
    from verify.jobs import build_job
    from verify.lowering import lower
    b = _vconv()
    return b, build_job(b), lower(b.prim_func(), registry.pass_configs(b), b.name)


def test_vconv_k2_proves(vconv_k2):
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = vconv_k2
    got = {c.name: c.status for c in verify_lowered(low, job, KernelReport(name=b.name)).checks}
    assert got and all(s == PROVED for s in got.values()), got


def test_vconv_k2_without_the_proxy_fence_is_caught(vconv_k2):
    """The converters' generic-proxy writes of v^T are read by wgmma (the async proxy): without the
    fence before their arrival on full, barriers.proxy_fence must not prove."""
    from verify import mutate
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = vconv_k2
    assert "T.fence_proxy_async()" in low.device_script
    dev = mutate.drop_call(low.device_func, "tl.fence_proxy_async")
    cut = dataclasses.replace(low, device_func=dev, device_script=dev.script())
    rep = verify_lowered(cut, dataclasses.replace(job, only=("barriers",)), KernelReport(name=b.name))
    fence = next(c for c in rep.checks if c.name == "barriers.proxy_fence")
    assert fence.status != PROVED and any("Vh_r" in str(f) for f in fence.findings), fence
