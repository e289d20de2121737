"""kda_tile.kda_decode on the GPU (H200): 256 consecutive steps against the float64 reference
(kda_kernels.reference.kda_decode) with fresh random inputs every step and o poisoned with NaN
before each call; padded slots; int32 indices; validate="full" errors; CUDA-graph capture; and
fla's fused_recurrent_kda in its pool mode on the same inputs. Deselected by default:
`python -m pytest -m gpu tests/test_decode_gpu.py`."""
import os

import pytest
import torch

import kda_tile
from kda_kernels.reference import kda_decode as ref_decode
from kda_kernels.reference import rel_err

pytestmark = pytest.mark.gpu

BF = torch.bfloat16
TOL = 5e-3


def params(HV, gen, dev="cuda"):
    A_log = torch.empty(HV, device=dev).uniform_(0.0, 2.7, generator=gen)
    dt_bias = torch.randn(HV, 128, device=dev, generator=gen) * 0.5
    return A_log, dt_bias


def tokens(N, S, H, HV, gen, single):
    def rn(*shape):
        return torch.randn(*shape, generator=gen, device="cuda").to(BF)
    x = [rn(N, S, H, 128), rn(N, S, H, 128), rn(N, S, HV, 128), rn(N, S, HV, 128), rn(N, S, HV)]
    return [t[:, 0] for t in x] if single else x


def indices(N, P, seed, pad_every=0, dtype=torch.int64):
    rows = torch.randperm(P, generator=torch.Generator().manual_seed(seed))[:N].to(torch.int64)
    if pad_every:
        rows[torch.arange(N) % pad_every == pad_every - 1] = -1
    return rows.to(dtype).cuda()


def run_steps(N, S, H, HV, state_dtype, steps, *, fast_math=False, pad_every=0, index_dtype=torch.int64, seed=0):
    single = S == 0
    S = max(S, 1)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    P = 2 * N
    A_log, dt_bias = params(HV, gen)
    pool = (torch.randn(P, HV, 128, 128, device="cuda", generator=gen) * 0.5).to(state_dtype)
    ref_pool = pool.double()
    idx = indices(N, P, seed, pad_every, index_dtype)
    owned = torch.zeros(P, dtype=torch.bool, device="cuda")
    owned[idx[idx >= 0].long()] = True
    others = pool[~owned].clone()
    live = idx >= 0
    worst = 0.0
    for _ in range(steps):
        x = tokens(N, S, H, HV, gen, single)
        out = torch.full_like(x[2], float("nan"))
        o = kda_tile.kda_decode(*x, A_log=A_log, dt_bias=dt_bias, state_pool=pool, state_indices=idx,
                                fast_math=fast_math, out=out)
        assert o is out
        ro, ref_pool = ref_decode(*x, state_pool=ref_pool, state_indices=idx.long(), A_log=A_log, dt_bias=dt_bias,
                                  lower_bound=-5.0)
        worst = max(worst, rel_err(o[live], ro[live]))
        assert not torch.isnan(o).any()
        assert (o[~live] == 0).all()
    assert worst <= TOL, worst
    assert rel_err(pool[owned].double(), ref_pool[owned]) <= TOL
    assert torch.equal(pool[~owned], others)   # rows no sequence owns: bit-identical
    return worst


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.inference_mode():
        yield


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("S", [0, 1])   # 0: [N, H, K] tokens (the one-token builds); 1: a token axis of 1
def test_256_steps(state_dtype, S):
    run_steps(7, S, 4, 4, state_dtype, 256, pad_every=3)


def test_speculative_tokens_and_gva():
    run_steps(16, 4, 2, 8, torch.float32, 64, pad_every=5, seed=1)


def test_n1_int32_fast_math():
    run_steps(1, 0, 4, 4, torch.float32, 64, fast_math=True, index_dtype=torch.int32, seed=2)
    run_steps(33, 8, 4, 4, torch.bfloat16, 16, fast_math=True, index_dtype=torch.int32, pad_every=4, seed=3)


def test_fresh_output_and_poison(monkeypatch):
    monkeypatch.setenv("KDA_TILE_POISON", "1")
    gen = torch.Generator(device="cuda").manual_seed(4)
    A_log, dt_bias = params(4, gen)
    pool = torch.randn(6, 4, 128, 128, device="cuda", generator=gen)
    idx = torch.tensor([2, -1, 5], device="cuda")
    x = tokens(3, 1, 4, 4, gen, single=True)
    ref_o, _ = ref_decode(*x, state_pool=pool.double(), state_indices=idx, A_log=A_log, dt_bias=dt_bias)
    o = kda_tile.kda_decode(*x, A_log=A_log, dt_bias=dt_bias, state_pool=pool, state_indices=idx)
    assert o.shape == (3, 4, 128) and o.dtype == BF
    assert rel_err(o[[0, 2]], ref_o[[0, 2]]) <= TOL and (o[1] == 0).all()


def test_full_validation_errors():
    gen = torch.Generator(device="cuda").manual_seed(5)
    A_log, dt_bias = params(4, gen)
    pool = torch.randn(4, 4, 128, 128, device="cuda", generator=gen)
    x = tokens(3, 1, 4, 4, gen, single=True)
    kw = dict(A_log=A_log, dt_bias=dt_bias, state_pool=pool, validate="full")
    before = pool.clone()
    for idx, msg in [([1, 1, 2], "state_indices[1]: expected a pool row no other sequence updates, got 1 "
                                 "(also state_indices[0])"),
                     ([0, 4, 2], "state_indices[1]: expected -1 (padding) or a pool row in [0, 4) "
                                 "(P = state_pool.shape[0]), got 4")]:
        for dt in (torch.int64, torch.int32):
            with pytest.raises(ValueError) as e:
                kda_tile.kda_decode(*x, **kw, state_indices=torch.tensor(idx, device="cuda", dtype=dt))
            assert str(e.value) == msg
    assert torch.equal(pool, before)   # refused calls launch nothing
    kda_tile.kda_decode(*x, **kw, state_indices=torch.tensor([3, -1, 0], device="cuda"))


def test_cuda_graph_capture_replays_the_eager_call():
    gen = torch.Generator(device="cuda").manual_seed(6)
    A_log, dt_bias = params(8, gen)
    pool0 = torch.randn(16, 8, 128, 128, device="cuda", generator=gen)
    idx = indices(8, 16, 6, pad_every=4)
    x = tokens(8, 2, 2, 8, gen, single=False)
    kw = dict(A_log=A_log, dt_bias=dt_bias, state_indices=idx)
    eager_pool = pool0.clone()
    o_eager = kda_tile.kda_decode(*x, state_pool=eager_pool, **kw)
    pool = pool0.clone()
    kda_tile.kda_decode(*x, state_pool=pool.clone(), **kw)   # warm outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_graph = kda_tile.kda_decode(*x, state_pool=pool, **kw)
    pool.copy_(pool0)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(o_graph, o_eager) and torch.equal(pool, eager_pool)


def test_agrees_with_fla_fused_recurrent():
    fr = pytest.importorskip("fla.ops.kda.fused_recurrent")
    os.environ.setdefault("FLA_FLASH_KDA", "0")
    N, H, HV = 32, 4, 8
    gen = torch.Generator(device="cuda").manual_seed(7)
    A_log, dt_bias = params(HV, gen)
    pool = torch.randn(2 * N, HV, 128, 128, device="cuda", generator=gen) * 0.5
    idx = indices(N, 2 * N, 7)
    x = tokens(N, 1, H, HV, gen, single=False)
    pool_fla = pool.clone()
    o = kda_tile.kda_decode(*x, A_log=A_log, dt_bias=dt_bias, state_pool=pool, state_indices=idx)
    flat = [t.reshape(1, N, *t.shape[2:]) for t in x]
    cu = torch.arange(N + 1, device="cuda", dtype=torch.int64)
    o_fla = fr.fused_recurrent_kda_fwd(*flat, A_log=A_log, dt_bias=dt_bias, initial_state=pool_fla,
                                       inplace_final_state=True, state_v_first=True, cu_seqlens=cu,
                                       ssm_state_indices=idx, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                                       use_beta_sigmoid_in_kernel=True, lower_bound=-5.0)[0]
    assert rel_err(o.float(), o_fla.reshape(o.shape).float()) <= TOL
    assert rel_err(pool, pool_fla) <= TOL
