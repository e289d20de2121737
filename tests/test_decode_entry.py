"""kda_decode on the CPU: the released decode builds, their generated host entries (Python and
C++, validate_only and the C++ dry run) and the API's argument handling. No kernel runs.
Expected values come from the decode contract (kda_kernels/decode.py docstring), not from the
spec the generator read."""
import pytest
import torch

import host_codegen as hc
import kda_tile
from host_codegen import gen_cpp
from host_codegen import rules as R
from kda_kernels import registry
from kda_tile import decode as api_decode

BF = torch.bfloat16
ORDER = ["q", "k", "v", "g", "beta", "A_log", "dt_bias", "state_pool", "state_indices", "lower_bound", "scale"]


def build(state_dtype="float32", fast_math=False):
    return registry.find("decode", state_dtype=state_dtype, fast_math=fast_math)


def make_args(N=3, S=2, H=2, HV=4, P=8, state=torch.float32, seed=0, indices=(3, -1, 5)):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    return dict(q=r(N, S, H, 128).to(BF), k=r(N, S, H, 128).to(BF), v=r(N, S, HV, 128).to(BF),
                g=r(N, S, HV, 128).to(BF), beta=r(N, S, HV).to(BF), A_log=r(HV), dt_bias=r(HV, 128),
                state_pool=r(P, HV, 128, 128).to(state), state_indices=torch.tensor(indices, dtype=torch.int64),
                lower_bound=-5.0, scale=None)


@pytest.fixture(scope="module", params=["py", "cpp"])
def entry(request):
    return hc.get_entry(build(), backend=request.param)


def call(e, a, **kw):
    return e.validate_only(*[a[n] for n in ORDER], expect_device=kw.pop("expect_device", "cpu"), **kw)


def expect(e, a, exc, msg, **kw):
    with pytest.raises(exc) as info:
        call(e, a, **kw)
    assert str(info.value) == msg


# -- registry and release ----------------------------------------------------------------------

def test_released_decode_builds():
    dec = [b for b in registry.RELEASED if b.stage == "decode"]
    assert sorted(b.name for b in dec) == [
        "kda_decode_bf16_bv32", "kda_decode_bf16_bv32_1t", "kda_decode_bf16_bv32_1t_fast", "kda_decode_bf16_bv32_fast",
        "kda_decode_f32_bv16_1t", "kda_decode_f32_bv16_1t_fast", "kda_decode_f32_bv32", "kda_decode_f32_bv32_fast"]
    one = [b for b in dec if not b.config.token_axis]
    assert all(hc.entry_spec(b).contract is hc.spec.DECODE_ONE_TOKEN for b in one)
    assert [len(p.shape) for p in hc.entry_spec(one[0]).inputs[:5]] == [3, 3, 3, 3, 2]
    assert registry.FACTORIES["decode"] == "kda_kernels.decode:build_decode"
    assert all(b.config.distinct() == ("state_indices",) for b in dec)
    assert [bs for bs in hc.released_entries() if len(bs) == 1 and bs[0].stage == "decode"] == [(b,) for b in dec]
    with pytest.raises(LookupError, match="released: kda_decode_f32_bv32, "):
        registry.find("decode", block_v=8)


def test_verify_assumes_distinct_indices_for_decode_only():
    from verify.jobs import _registry_job
    assert _registry_job("kda_decode_f32_bv32").distinct == ("state_indices",)
    assert _registry_job(next(b.name for b in registry.RELEASED if b.stage == "k2")).distinct == ()


# -- the entry's rules ---------------------------------------------------------------------------

def test_valid_arguments(entry):
    env = call(entry, make_args())
    assert env == {"H": 2, "HV": 4, "N": 3, "P": 8, "S": 2, "lower_bound": -5.0, "scale": 128 ** -0.5}
    assert call(entry, make_args(N=1, S=8, H=1, HV=1, P=1, indices=(0,)))["S"] == 8


def test_spec_follows_the_contract():
    spec = hc.entry_spec(build())
    assert spec.k2 is None and spec.workspace == () and spec.contract.family == "decode"
    assert [p.name for p in spec.inputs] == ORDER[:9] and [p.name for p in spec.outputs] == ["o"]
    pool = spec.tensor("state_pool")
    assert pool.written and pool.dtype == "float32"
    kinds = {type(r).__name__ for r in R.build_rules(spec)}
    assert "Contents" in kinds and "Presence" not in kinds
    src = gen_cpp.generate(spec)
    assert "constexpr int kNumKernels = 1;" in src and "ws_total" not in src and "launch_graph(L" in src


@pytest.mark.parametrize("name,dt,msg", [
    ("v", torch.float16, "v: expected dtype bfloat16, got float16"),
    ("state_pool", BF, "state_pool: expected dtype float32, got bfloat16"),
    ("state_indices", torch.int32, "state_indices: expected dtype int64, got int32"),
    ("A_log", BF, "A_log: expected dtype float32, got bfloat16"),
])
def test_dtypes(entry, name, dt, msg):
    a = make_args()
    a[name] = a[name].to(dt)
    expect(entry, a, TypeError, msg)


def test_token_limit_and_heads(entry):
    expect(entry, make_args(S=9), ValueError, "q: expected S <= 8, got S = 9")
    expect(entry, make_args(H=4, HV=6), ValueError, "v: expected HV % H == 0, got HV = 6, H = 4")
    expect(entry, make_args(H=4, HV=2), ValueError, "v: expected HV >= H, got HV = 2, H = 4")


def test_shapes(entry):
    a = make_args()
    a["state_indices"] = torch.tensor([1, 2], dtype=torch.int64)
    expect(entry, a, ValueError, "state_indices.shape[0]: expected 3 (N, from q.shape[0]), got 2")
    a = make_args()
    a["state_pool"] = a["state_pool"][:, :3]
    expect(entry, a, ValueError, "state_pool.shape[1]: expected 4 (HV, from v.shape[2]), got 3")
    a = make_args()
    a["beta"] = a["beta"][:, :1]
    expect(entry, a, ValueError, "beta.shape[1]: expected 2 (S, from q.shape[1]), got 1")
    a = make_args()
    a["state_pool"] = a["state_pool"][0]
    expect(entry, a, ValueError, "state_pool: expected 4 dimensions [P, HV, V, K], got 3")


def test_strides(entry):
    a = make_args()
    a["state_pool"] = a["state_pool"].transpose(2, 3)   # [P, HV, K, V] memory: the other layout
    expect(entry, a, ValueError, "state_pool.stride(2): expected 128 (contiguous), got 1")


def test_no_overlap(entry):
    a = make_args()
    expect(entry, a, ValueError, "o: expected no overlap with v (outputs must not alias inputs), got overlapping memory",
           o=a["v"])
    a = make_args(N=3, S=1, H=1, HV=1, P=4)
    flat = a["state_pool"].view(-1)
    a["dt_bias"] = flat[:128].view(1, 128)
    expect(entry, a, ValueError, "state_pool: expected no overlap with dt_bias (state_pool is updated in place), "
                                 "got overlapping memory")
    a = make_args()
    o = a["state_pool"].view(-1)[: 3 * 2 * 4 * 128].view(3, 2, 4, 128)
    expect(entry, a, TypeError, "o: expected dtype bfloat16, got float32", o=o)


def test_output_checked_like_an_input(entry):
    a = make_args()
    expect(entry, a, ValueError, "o.shape[1]: expected 2 (S, from q.shape[1]), got 1",
           o=torch.empty(3, 1, 4, 128, dtype=BF))


@pytest.mark.parametrize("indices,msg", [
    ((3, 3, 5), "state_indices[1]: expected a pool row no other sequence updates, got 3 (also state_indices[0])"),
    ((3, 8, 5), "state_indices[1]: expected -1 (padding) or a pool row in [0, 8) (P = state_pool.shape[0]), got 8"),
    ((-2, 1, 5), "state_indices[0]: expected -1 (padding) or a pool row in [0, 8) (P = state_pool.shape[0]), got -2"),
])
def test_full_validation_contents(entry, indices, msg):
    a = make_args(indices=indices)
    call(entry, a)  # fast validation reads no contents
    expect(entry, a, ValueError, msg, validate="full")


def test_full_validation_accepts_pads_and_distinct_rows(entry):
    call(entry, make_args(indices=(-1, -1, 7)), validate="full")


def test_scalars(entry):
    a = make_args()
    a["lower_bound"] = 0.5
    expect(entry, a, ValueError, "lower_bound: expected lower_bound < 0.0, got lower_bound = 0.5")
    a = make_args()
    a["scale"] = "x"
    expect(entry, a, TypeError, "scale: expected a float, got str")


def test_device(entry):
    expect(entry, make_args(), ValueError, "q: expected a cuda tensor, got device cpu", expect_device="cuda")


def test_cpp_dry_run(monkeypatch):
    e = hc.get_entry(build("bfloat16", True), backend="cpp")
    a = make_args(state=BF)
    monkeypatch.setenv("KDA_TILE_POISON", "1")
    o = e.dry_run(*[a[n] for n in ORDER])
    assert o.shape == (3, 2, 4, 128) and o.dtype == BF and torch.isnan(o.float()).all()
    mine = torch.zeros(3, 2, 4, 128, dtype=BF)
    assert e.dry_run(*[a[n] for n in ORDER], o=mine) is mine
    fast = e.dry_run_fast()
    assert fast(*[a[n] for n in ORDER]).shape == (3, 2, 4, 128)
    a["q"] = a["q"].float()
    with pytest.raises(TypeError, match=r"^q: expected dtype bfloat16, got float32$"):
        fast(*[a[n] for n in ORDER])


# -- the API -------------------------------------------------------------------------------------

def api_args(single=False, index_dtype=torch.int64, state=torch.float32, **kw):
    a = make_args(S=1 if single else 2, state=state, **kw)
    if single:
        for n in ("q", "k", "v", "g", "beta"):
            a[n] = a[n][:, 0]
    a["state_indices"] = a["state_indices"].to(index_dtype)
    pos = [a.pop(n) for n in ("q", "k", "v", "g", "beta")]
    a.pop("scale")
    return pos, a


@pytest.mark.parametrize("single", [True, False])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_check_decode_inputs(single, index_dtype):
    pos, kw = api_args(single, index_dtype)
    env = api_decode.check_decode_inputs(*pos, **kw, device="cpu")
    assert env.get("S") == (None if single else 2) and env["N"] == 3   # the one-token build has no S
    kw["state_indices"] = torch.tensor([1, 1, 2], dtype=index_dtype)
    with pytest.raises(ValueError, match=r"^state_indices\[1\]: expected a pool row no other sequence updates"):
        api_decode.check_decode_inputs(*pos, **kw, device="cpu", validate="full")


def test_api_type_errors():
    pos, kw = api_args()
    cases = [
        (dict(fast_math=1), TypeError, "fast_math: expected a bool, got int 1"),
        (dict(validate="yes"), ValueError, "validate: expected 'fast' or 'full', got 'yes'"),
        (dict(state_indices=kw["state_indices"].to(torch.int16)), TypeError,
         "state_indices: expected dtype int64 or int32, got int16"),
        (dict(state_pool=kw["state_pool"].half()), TypeError, "state_pool: expected dtype float32 or bfloat16, got float16"),
        (dict(state_pool=[0]), TypeError, "state_pool: expected a torch.Tensor, got list"),
    ]
    for over, exc, msg in cases:
        with pytest.raises(exc) as info:
            kda_tile.kda_decode(*pos, **{**kw, **over})
        assert str(info.value) == msg


def test_api_one_token_ranks():
    pos, kw = api_args(single=True)
    pos[2] = pos[2].unsqueeze(1)
    with pytest.raises(ValueError, match=r"^v: expected 3 dimensions \[N, HV, V\] \(q is \[N, H, K\]: one token"):
        kda_tile.kda_decode(*pos, **kw)
    pos, kw = api_args(single=True)
    with pytest.raises(ValueError, match=r"^out: expected 3 dimensions \[N, HV, V\]"):
        kda_tile.kda_decode(*pos, **kw, out=torch.empty(3, 1, 4, 128, dtype=BF))
    with pytest.raises(ValueError, match=r"^out.shape\[2\]: expected 128 \(V\), got 64$"):
        api_decode.check_decode_inputs(*pos, **kw, out=torch.empty(3, 4, 64, dtype=BF), device="cpu")
    bad = list(pos)
    bad[3] = bad[3][:, :, :64]   # g [N, HV, 64]: dimension 2 in the caller's rank
    with pytest.raises(ValueError, match=r"^g.shape\[2\]: expected 128 \(K\), got 64$"):
        api_decode.check_decode_inputs(*bad, **kw, device="cpu")


def test_api_cpu_and_meta_tensors_name_the_argument():
    pos, kw = api_args()
    with pytest.raises(ValueError) as info:
        kda_tile.kda_decode(*pos, **kw)
    assert str(info.value) == "q: expected a cuda tensor, got device cpu"
    meta = [t.to("meta") for t in pos]
    with pytest.raises((ValueError, RuntimeError)) as info:
        kda_tile.kda_decode(*meta, **kw)
    assert "\n" not in str(info.value) and str(info.value).startswith("q: ")


def test_api_grad_inputs():
    pos, kw = api_args()
    kw["state_pool"] = kw["state_pool"].requires_grad_(True)
    with torch.enable_grad(), pytest.raises(RuntimeError, match=r"^state_pool: kda_decode has no backward"):
        kda_tile.kda_decode(*pos, **kw)


def test_docstring_names_every_parameter():
    import inspect
    doc = kda_tile.kda_decode.__doc__
    for p in inspect.signature(kda_tile.kda_decode).parameters:
        assert p in doc, p
