"""torch.ops.kda_tile.prefill on the CPU, where it runs the float64 reference: the fake (meta)
implementation agrees with the real one, and torch.compile(fullgraph=True) of a module calling
kda_tile.kda_prefill compiles and matches eager. (The CUDA kernel under compile and inside CUDA
graphs is checked in the GPU round.)"""
import pytest
import torch

import kda_tile
from kda_tile import ops
from kda_kernels.reference import random_inputs


def case(B=1, T=20, H=2, state=torch.float32, cu=None, seed=0):
    x = random_inputs(B, T, H, seed=seed, state_dtype=state, cu_seqlens=cu)
    return x


def op_args(x, output_final_state=True):
    return (x["q"], x["k"], x["v"], x["g"], x["beta"], x["A_log"], x["dt_bias"], -5.0, None, x["initial_state"],
            output_final_state, x["cu_seqlens"], False)


@pytest.mark.parametrize("state,final", [(None, False), (torch.float32, True), (torch.bfloat16, True)])
def test_opcheck(state, final):
    x = case(state=state)
    torch.library.opcheck(ops.prefill, op_args(x, final), test_utils=("test_schema", "test_faketensor"))


def test_fake_shapes_follow_the_rules():
    from torch._subclasses.fake_tensor import FakeTensorMode
    x = case(B=1, T=30, H=3, state=torch.bfloat16, cu=[0, 10, 30])
    with FakeTensorMode() as mode:
        fx = {k: (mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in x.items()}
        o, ht = ops.prefill(*op_args(fx))
    assert o.shape == x["v"].shape and o.dtype == torch.bfloat16
    assert ht.shape == (2, 3, 128, 128) and ht.dtype == torch.bfloat16


class Layer(torch.nn.Module):
    def forward(self, q, k, v, g, beta, A_log, dt_bias, h0):
        o, ht = kda_tile.kda_prefill(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, initial_state=h0,
                                     output_final_state=True)
        return o.float().sum(-1), ht


def test_compile_fullgraph_matches_eager():
    x = case(T=24, H=2)
    args = (x["q"], x["k"], x["v"], x["g"], x["beta"], x["A_log"], x["dt_bias"], x["initial_state"])
    compiled = torch.compile(Layer(), fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        o_c, ht_c = compiled(*args)
        o_e, ht_e = ops.prefill(*op_args(x))  # the op in eager, on the same inputs
    assert torch.equal(o_c, o_e.float().sum(-1)) and torch.equal(ht_c, ht_e)


def test_eager_path_refuses_tracing(monkeypatch):
    """The op's CUDA implementation (kda_prefill_eager) runs kda_prefill's eager body; reached while
    torch.compile traces, it raises rather than record the op inside itself."""
    from kda_tile import api
    x = case()
    monkeypatch.setattr(api, "_is_compiling", lambda: True)
    with pytest.raises(RuntimeError, match="^kda_prefill_eager: called while torch.compile traces"):
        api.kda_prefill_eager(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log=x["A_log"], dt_bias=x["dt_bias"])
