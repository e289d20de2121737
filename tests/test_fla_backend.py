"""kda_tile.fla on the CPU: which calls the backend takes, and that its layout conversions give
fla's own naive recurrence for both state layouts. The kernel call is stood in for by the float64
reference (the GPU round runs the same calls on the H200 with the backend on and off)."""
import os

import pytest
import torch

fla = pytest.importorskip("fla", reason="the fla backend needs flash-linear-attention (pip install 'kda_tile[fla]')")

from fla.ops.kda import chunk_kda  # noqa: E402
from fla.ops.kda.naive import naive_recurrent_kda  # noqa: E402

import kda_tile.fla as backend  # noqa: E402
from kda_kernels import reference  # noqa: E402
from kda_tile import api  # noqa: E402

H, K = 3, 128
LB = -4.0


def inputs(B=1, T=37, seed=0, state_v_first=True, state_dtype=torch.float32, HV=H):
    gen = torch.Generator().manual_seed(seed)
    bf = torch.bfloat16
    d = dict(q=torch.randn(B, T, H, K, generator=gen).to(bf), k=torch.randn(B, T, H, K, generator=gen).to(bf),
             v=torch.randn(B, T, HV, K, generator=gen).to(bf), g=torch.randn(B, T, HV, K, generator=gen).to(bf),
             beta=torch.randn(B, T, HV, generator=gen).to(bf))
    d["A_log"] = torch.rand(HV, generator=gen) * 2.0
    d["dt_bias"] = torch.randn(HV * K, generator=gen) * 0.3  # fla's flat layout
    s = torch.randn(B, HV, K, K, generator=gen).to(state_dtype)
    d["initial_state"] = s  # [N, H, V, K] when state_v_first, else [N, H, K, V]
    return d


def call_kwargs(d, state_v_first=True, output_final_state=True, **over):
    kw = dict(q=d["q"], k=d["k"], v=d["v"], g=d["g"], beta=d["beta"], initial_state=d["initial_state"],
              output_final_state=output_final_state, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
              use_beta_sigmoid_in_kernel=True, safe_gate=True, lower_bound=LB, state_v_first=state_v_first,
              A_log=d["A_log"], dt_bias=d["dt_bias"])
    kw.update(over)
    return kw


@pytest.fixture
def on_cpu(monkeypatch):
    """Pretend the CPU is an sm_90 GPU, with the float64 reference as the kernel."""
    calls = []

    def prefill(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None, initial_state=None,
                output_final_state=False, cu_seqlens=None, fast_math=False, max_seqlen=None):
        assert initial_state is None or initial_state.is_contiguous()
        calls.append(dict(h0_shape=None if initial_state is None else tuple(initial_state.shape),
                          max_seqlen=max_seqlen))
        o, ht = reference.kda_recurrent(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                                        scale=scale, initial_state=initial_state,
                                        output_final_state=output_final_state, cu_seqlens=cu_seqlens)
        return o, (ht.to(initial_state.dtype if initial_state is not None else torch.float32)
                   if ht is not None else None)

    monkeypatch.setattr(api, "kda_prefill", prefill)
    monkeypatch.setattr(backend, "_on_hopper", lambda t: True)
    monkeypatch.delenv("KDA_TILE_FLA", raising=False)
    return calls


def fla_naive(d, state_v_first):
    """fla's own naive recurrence, fed the activated gate, normalised q/k and sigmoid(beta)."""
    HV = d["v"].shape[2]
    g = reference.gate(d["g"], kind="safe", A_log=d["A_log"], dt_bias=d["dt_bias"].view(HV, K), lower_bound=LB)
    q, k = (x.double() / torch.sqrt((x.double() ** 2).sum(-1, keepdim=True) + 1e-6) for x in (d["q"], d["k"]))
    h0 = d["initial_state"].double()
    h0 = h0.transpose(-1, -2) if state_v_first else h0  # naive takes [B, H, K, V]
    o, ht = naive_recurrent_kda(q, k, d["v"].double(), g, torch.sigmoid(d["beta"].double()), initial_state=h0,
                                output_final_state=True)
    return o, (ht.transpose(-1, -2) if state_v_first else ht)


@pytest.mark.parametrize("HV", [H, 2 * H], ids=["HV=H", "GVA"])
@pytest.mark.parametrize("state_v_first", [True, False])
def test_chunk_kda_through_the_backend_equals_fla_naive(on_cpu, state_v_first, HV):
    d = inputs(state_v_first=state_v_first, HV=HV)
    with torch.no_grad():
        o, ht = chunk_kda(**call_kwargs(d, state_v_first=state_v_first))
    assert len(on_cpu) == 1, "the call did not reach kda_tile"
    o_ref, ht_ref = fla_naive(d, state_v_first)
    assert reference.rel_err(o, o_ref) < 1e-6
    assert ht.shape == d["initial_state"].shape and ht.dtype == torch.float32
    assert reference.rel_err(ht, ht_ref) < 1e-6
    if not state_v_first:  # the final state comes back as a view, no copy
        assert not ht.is_contiguous() and ht.transpose(-1, -2).is_contiguous()


def test_varlen_call_through_the_backend(on_cpu):
    d = inputs(T=50, seed=3)
    d["initial_state"] = torch.randn(3, H, K, K)
    cu = torch.tensor([0, 7, 7, 50])
    with torch.no_grad():
        o, ht = chunk_kda(**call_kwargs(d, cu_seqlens=cu))
    assert len(on_cpu) == 1
    o_ref, ht_ref = reference.kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"],
                                            dt_bias=d["dt_bias"].view(H, K), lower_bound=LB,
                                            initial_state=d["initial_state"], output_final_state=True,
                                            cu_seqlens=cu)
    assert reference.rel_err(o, o_ref) < 1e-12 and reference.rel_err(ht, ht_ref) < 1e-6  # ht comes back in fp32
    assert on_cpu[0]["max_seqlen"] is None


def test_cu_seqlens_cpu_gives_kda_tile_the_longest_sequence(on_cpu):
    """fla's host copy of cu_seqlens becomes kda_prefill's max_seqlen (the short form's routing)."""
    d = inputs(T=20, seed=5)
    d["initial_state"] = torch.randn(4, H, K, K)
    cu = torch.tensor([0, 7, 7, 16, 20])
    with torch.no_grad():
        o, _ = chunk_kda(**call_kwargs(d, cu_seqlens=cu, cu_seqlens_cpu=cu.clone()))
    assert on_cpu[-1]["max_seqlen"] == 9
    o_ref, _ = reference.kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"],
                                       dt_bias=d["dt_bias"].view(H, K), lower_bound=LB,
                                       initial_state=d["initial_state"], output_final_state=True, cu_seqlens=cu)
    assert reference.rel_err(o, o_ref) < 1e-12


DECLINED = [
    (dict(use_gate_in_kernel=False), "use_gate_in_kernel"),
    (dict(use_qk_l2norm_in_kernel=False), "use_qk_l2norm_in_kernel"),
    (dict(use_beta_sigmoid_in_kernel=False), "use_beta_sigmoid_in_kernel"),
    (dict(safe_gate=False), "safe_gate"),
    (dict(allow_neg_eigval=True), "allow_neg_eigval"),
    (dict(lower_bound=None), "lower_bound"),
    (dict(lower_bound=-6.0), "lower_bound"),
    (dict(A_log=None), "A_log"),
    (dict(return_intermediate_states=True), "intermediate"),
    (dict(use_graph=True), "graph"),
    (dict(some_new_flag=True), "some_new_flag"),
]


@pytest.mark.parametrize("over,why", DECLINED, ids=[w for _, w in DECLINED])
def test_declines_what_kda_tile_does_not_compute(on_cpu, over, why):
    d = inputs()
    ok, reason = backend.check(**call_kwargs(d, **over))
    assert not ok and why in reason


def test_declines_dtypes_shapes_gva_grad_and_devices(monkeypatch):
    d = inputs()
    monkeypatch.setattr(backend, "_on_hopper", lambda t: True)
    assert backend.check(**call_kwargs(d)) == (True, None)
    assert "bf16 q" in backend.check(**call_kwargs(d, q=d["q"].half()))[1]
    assert "K = V = 128" in backend.check(**call_kwargs(d, q=d["q"][..., :64], k=d["k"][..., :64]))[1]
    v4 = torch.cat([d["v"], d["v"][:, :, :1]], 2)
    assert "HV a multiple of H" in backend.check(**call_kwargs(d, v=v4))[1]
    gva = inputs(HV=2 * H)
    assert backend.check(**call_kwargs(gva)) == (True, None)
    assert "fp32 final state" in backend.check(**call_kwargs(d, initial_state=d["initial_state"].bfloat16()))[1]
    assert backend.check(**call_kwargs(d, initial_state=d["initial_state"].bfloat16(),
                                       output_final_state=False)) == (True, None)
    q = d["q"].clone().requires_grad_(True)
    with torch.enable_grad():
        assert "backward" in backend.check(**call_kwargs(d, q=q))[1]
    with torch.no_grad():
        assert backend.check(**call_kwargs(d, q=q)) == (True, None)
    monkeypatch.setattr(backend, "_on_hopper", lambda t: False)
    assert "sm_90" in backend.check(**call_kwargs(d))[1]


def test_env_var_turns_the_backend_off(on_cpu, monkeypatch):
    d = inputs()
    monkeypatch.setenv("KDA_TILE_FLA", "0")
    assert not backend.KdaTileBackend().is_enabled()
    monkeypatch.setenv("KDA_TILE_FLA", "1")
    assert backend.KdaTileBackend().is_enabled()
    assert os.environ["KDA_TILE_FLA"] == "1"
