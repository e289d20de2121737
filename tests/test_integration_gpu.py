"""GPU tests of the integration layer (H200: `pytest -m gpu tests/test_integration_gpu.py`):

- torch.compile(fullgraph=True) of a module calling kda_prefill (inductor) matches eager, and the
  compiled module can be captured in a CUDA graph and replayed with new data;
- fla's chunk_kda with the kda_tile backend on vs off (fla's own Triton path, FLA_FLASH_KDA=0) at
  the benchmark shapes and a varlen batch, both against the float64 recurrence;
- the argument errors of the compile and grad paths on CUDA tensors.
"""
import os

import pytest
import torch

pytestmark = pytest.mark.gpu

TOL = 5e-3


def inputs(B, T, H, lens=None, seed=0, state=torch.float32, HV=None):
    from kda_kernels import reference as R
    cu = None
    if lens is not None:
        B, T = 1, sum(lens)
        cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64, device="cuda")
    return R.random_inputs(B, T, H, device="cuda", seed=seed, cu_seqlens=cu, state_dtype=state, HV=HV)


def ref(x):
    from kda_kernels import reference as R
    return R.kda_recurrent(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log=x["A_log"], dt_bias=x["dt_bias"],
                           initial_state=x["initial_state"], output_final_state=True, cu_seqlens=x["cu_seqlens"])


class Layer(torch.nn.Module):
    def forward(self, q, k, v, g, beta, A_log, dt_bias, h0):
        import kda_tile
        o, ht = kda_tile.kda_prefill(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, initial_state=h0,
                                     output_final_state=True)
        return o * 2, ht


def test_compile_fullgraph_matches_eager_and_captures():
    from kda_kernels.reference import rel_err
    x = inputs(2, 300, 4, seed=1)
    args = [x[n] for n in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state")]
    layer = Layer()
    compiled = torch.compile(layer, fullgraph=True)
    with torch.inference_mode():
        o_c, ht_c = compiled(*args)
        o_e, ht_e = layer(*args)
        torch.cuda.synchronize()
        assert rel_err(o_c, o_e) < 1e-6 and rel_err(ht_c, ht_e) < 1e-6
        o_r, ht_r = ref(x)
        assert rel_err(o_c / 2, o_r) <= TOL and rel_err(ht_c, ht_r) <= TOL
        graph = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            compiled(*args)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(graph):
            o_g, ht_g = compiled(*args)
        fresh = inputs(2, 300, 4, seed=2)
        for a, n in zip(args, ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state")):
            a.copy_(fresh[n])
        graph.replay()
        torch.cuda.synchronize()
        o_r, ht_r = ref(fresh)
        assert rel_err(o_g / 2, o_r) <= TOL and rel_err(ht_g, ht_r) <= TOL


SHAPES = [(96, [8192], None), (96, [1300, 547, 2048, 963, 271, 3063], None), (64, [1024] * 8, None),
          (4, [17, 0, 1, 100], None), (2, [300, 0, 77, 1], 8)]


@pytest.mark.parametrize("state_v_first", [True, False])
@pytest.mark.parametrize("H,lens,HV", SHAPES, ids=lambda v: str(v)[:24])
def test_fla_chunk_kda_with_and_without_the_backend(H, lens, HV, state_v_first, monkeypatch):
    pytest.importorskip("fla")
    monkeypatch.setenv("FLA_FLASH_KDA", "0")
    from fla.ops.kda import chunk_kda

    import kda_tile.fla as backend
    from kda_kernels.reference import rel_err
    x = inputs(1, None, H, lens=lens, seed=H + len(lens), HV=HV)
    h0 = x["initial_state"] if state_v_first else x["initial_state"].transpose(-1, -2).contiguous()
    kw = dict(q=x["q"], k=x["k"], v=x["v"], g=x["g"], beta=x["beta"], initial_state=h0, output_final_state=True,
              use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
              safe_gate=True, lower_bound=-5.0, state_v_first=state_v_first, A_log=x["A_log"],
              dt_bias=x["dt_bias"].reshape(-1), cu_seqlens=x["cu_seqlens"])
    assert backend.check(**kw) == (True, None)
    o_r, ht_r = ref(x)
    if not state_v_first:
        ht_r = ht_r.transpose(-1, -2)
    outs = {}
    for on in ("1", "0"):
        monkeypatch.setenv("KDA_TILE_FLA", on)
        with torch.inference_mode():
            o, ht = chunk_kda(**kw)
        torch.cuda.synchronize()
        outs[on] = (rel_err(o, o_r), rel_err(ht, ht_r))
    assert outs["1"][0] <= TOL and outs["1"][1] <= TOL, outs
    assert outs["0"][0] <= 2e-2 and outs["0"][1] <= 2e-2, outs  # fla's own path, for comparison


def test_grad_and_flag_errors_on_cuda():
    import kda_tile
    x = inputs(1, 32, 2, seed=3)
    q = x["q"].clone().requires_grad_(True)
    with torch.enable_grad(), pytest.raises(RuntimeError, match="^q: kda_tile has no backward"):
        kda_tile.kda_prefill(q, x["k"], x["v"], x["g"], x["beta"], A_log=x["A_log"], dt_bias=x["dt_bias"])
    with pytest.raises(TypeError, match="^fast_math: expected a bool"):
        kda_tile.kda_prefill(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log=x["A_log"], dt_bias=x["dt_bias"],
                             fast_math="no")
    assert os.environ.get("KDA_TILE_ALLOW_UNVERIFIED") != "1"
