"""CPU tests of the generated host entries (validation without launch).

Every rule runs through both generated entries: the Python one (stage A) and the C++ one
compiled and loaded through TVM-FFI (stage B), via `validate_only(..., expect_device="cpu")`.
Expected values here come from the operation's contract (docs/math.md section 1), not from the
spec the generator read, so a wrong IR reading shows up as a failure.
"""
import dataclasses
import math

import re

import pytest
import torch

import host_codegen as hc
from host_codegen import expr as X
from host_codegen import gen_cpp, gen_py
from host_codegen import rules as R
from kda_kernels import registry

K = V = 128
BF = torch.bfloat16

PAIRS = {
    "varlen_h0f32_ht": (dict(varlen=True, fast_math=False), dict(varlen=True, initial_state="float32", final_state=True)),
    "fixed_none": (dict(varlen=False, fast_math=False), dict(varlen=False, initial_state=None, final_state=False)),
    "varlen_none": (dict(varlen=True, fast_math=False), dict(varlen=True, initial_state=None, final_state=False)),
    "fixed_h0bf16_ht": (dict(varlen=False, fast_math=False), dict(varlen=False, initial_state="bfloat16", final_state=True)),
}
BACKENDS = ["py", "cpp"]


def builds(pair):
    a, b = PAIRS[pair]
    return registry.find("k1", **a), registry.find("k2", **b)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request):
    return request.param


def entry(pair, backend):
    return hc.get_entry(*builds(pair), backend=backend)


def make_args(pair, B=1, T=40, H=2, lens=(7, 33), seed=0):
    """Valid arguments for a pair, on the CPU."""
    g = torch.Generator().manual_seed(seed)
    _, k2 = PAIRS[pair]
    varlen = k2["varlen"]
    if varlen:
        B, T = 1, sum(lens)
    a = dict(
        q=torch.randn(B, T, H, K, generator=g).to(BF), k=torch.randn(B, T, H, K, generator=g).to(BF),
        v=torch.randn(B, T, H, V, generator=g).to(BF), g=torch.randn(B, T, H, K, generator=g).to(BF),
        beta=torch.randn(B, T, H, generator=g).to(BF), A_log=torch.randn(H, generator=g),
        dt_bias=torch.randn(H, K, generator=g), cu_seqlens=None, initial_state=None,
        lower_bound=-5.0, scale=None)
    N = B
    if varlen:
        cu = [0]
        for n in lens:
            cu.append(cu[-1] + n)
        a["cu_seqlens"] = torch.tensor(cu, dtype=torch.int64)
        N = len(lens)
    if k2["initial_state"] is not None:
        dt = {"float32": torch.float32, "bfloat16": BF}[k2["initial_state"]]
        a["initial_state"] = torch.randn(N, H, V, K, generator=g).to(dt)
    return a


ORDER = ["q", "k", "v", "g", "beta", "A_log", "dt_bias", "cu_seqlens", "initial_state", "lower_bound", "scale"]


def call(e, a, **kw):
    return e.validate_only(*[a[n] for n in ORDER], expect_device=kw.pop("expect_device", "cpu"), **kw)


def expect_error(e, a, exc, msg=None, prefix=None, **kw):
    with pytest.raises(exc) as info:
        call(e, a, **kw)
    text = str(info.value)
    if msg is not None:
        assert text == msg
    if prefix is not None:
        assert text.startswith(prefix), text
    return text


def misaligned(t, nbytes):
    """A copy of t whose data pointer is nbytes past a 64-byte boundary."""
    es = t.element_size()
    assert nbytes % es == 0
    buf = torch.empty(t.numel() + 64 // es, dtype=t.dtype)
    base = buf.data_ptr() % 64
    skip = ((64 - base) % 64 + nbytes) // es
    out = buf[skip:skip + t.numel()].view(t.shape)
    out.copy_(t)
    assert out.data_ptr() % 64 == nbytes
    return out


# --------------------------------------------------------------------------------------------
# valid inputs


@pytest.mark.parametrize("pair", list(PAIRS))
def test_valid_arguments_pass(pair, backend):
    e = entry(pair, backend)
    a = make_args(pair)
    env = call(e, a, validate="full")
    B, T, H = a["q"].shape[:3]
    assert (env["B"], env["T"], env["H"]) == (B, T, H)
    assert env["scale"] == pytest.approx(K ** -0.5)
    assert env["lower_bound"] == -5.0
    # Workspace chunk slots: every chunk of every sequence needs one.
    if a["cu_seqlens"] is not None:
        lens = torch.diff(a["cu_seqlens"]).tolist()
        assert env["N1"] == len(lens) + 1
    else:
        lens = [T] * B
    assert env["NC"] >= sum(math.ceil(n / 16) for n in lens)


@pytest.mark.parametrize("lens", [(1,), (16,), (17, 15), (5, 0, 31, 16, 1), (0, 0, 3)])
def test_workspace_slots_cover_all_chunks(lens, backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht", lens=lens)
    env = call(e, a, validate="full")
    assert env["NC"] >= sum(math.ceil(n / 16) for n in lens)


# --------------------------------------------------------------------------------------------
# rank, dtype, shapes


DTYPES = {"q": "bfloat16", "k": "bfloat16", "v": "bfloat16", "g": "bfloat16", "beta": "bfloat16",
          "A_log": "float32", "dt_bias": "float32", "cu_seqlens": "int64"}


@pytest.mark.parametrize("name", list(DTYPES) + ["initial_state"])
def test_dtype(name, backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    want = DTYPES.get(name, "float32")
    wrong = torch.float16 if want != "float16" else torch.float32
    a[name] = a[name].to(wrong)
    expect_error(e, a, TypeError, f"{name}: expected dtype {want}, got float16")


def test_initial_state_dtype_follows_build(backend):
    e = entry("fixed_h0bf16_ht", backend)
    a = make_args("fixed_h0bf16_ht")
    a["initial_state"] = a["initial_state"].float()
    expect_error(e, a, TypeError, "initial_state: expected dtype bfloat16, got float32")


RANKS = {"q": 4, "k": 4, "v": 4, "g": 4, "beta": 3, "A_log": 1, "dt_bias": 2, "cu_seqlens": 1, "initial_state": 4}


@pytest.mark.parametrize("name", list(RANKS))
def test_rank(name, backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    a[name] = a[name].unsqueeze(0)
    expect_error(e, a, ValueError, prefix=f"{name}: expected {RANKS[name]} dimensions [",
                 msg=None)
    text = expect_error(e, a, ValueError)
    assert text.endswith(f"got {RANKS[name] + 1}")


def test_named_example_k_head_dim(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    a["k"] = a["k"][..., :64].contiguous()
    expect_error(e, a, ValueError, "k.shape[3]: expected 128 (K), got 64")


# Every dimension that must equal something already fixed: (tensor, dim) -> what it must equal.
def _dependent_dims(a, varlen):
    B, T, H = a["q"].shape[:3]
    N = a["cu_seqlens"].numel() - 1 if varlen else B
    HV = a["v"].shape[2]  # v.shape[2] binds HV; q.shape[2] binds H
    d = {("q", 3): K}
    d.update({("k", 0): B, ("k", 1): T, ("k", 2): H, ("k", 3): K})
    d.update({("g", 0): B, ("g", 1): T, ("g", 2): HV, ("g", 3): K})
    d.update({("v", 0): B, ("v", 1): T, ("v", 3): V})
    d.update({("beta", 0): B, ("beta", 1): T, ("beta", 2): HV, ("A_log", 0): HV, ("dt_bias", 0): HV,
              ("dt_bias", 1): K})
    if a["initial_state"] is not None:
        d.update({("initial_state", 0): N, ("initial_state", 1): HV, ("initial_state", 2): V,
                  ("initial_state", 3): K})
    return d


@pytest.mark.parametrize("pair", ["varlen_h0f32_ht", "fixed_h0bf16_ht"])
def test_every_dependent_dimension(pair, backend):
    e = entry(pair, backend)
    base = make_args(pair)
    deps = _dependent_dims(base, PAIRS[pair][1]["varlen"])
    for (name, dim), want in deps.items():
        a = dict(base)
        shape = list(a[name].shape)
        shape[dim] += 1
        a[name] = torch.zeros(shape, dtype=a[name].dtype)
        text = expect_error(e, a, ValueError, prefix=f"{name}.shape[{dim}]: expected {want} (")
        assert text.endswith(f", got {want + 1}"), text


def test_binding_dims_propagate(backend):
    # q fixes B, T, H; a different q makes the first dependent tensor fail, naming both values.
    e = entry("fixed_none", backend)
    a = make_args("fixed_none", B=2, T=40, H=2)
    a["q"] = torch.zeros(2, 41, 2, K, dtype=BF)
    expect_error(e, a, ValueError, "k.shape[1]: expected 41 (T, from q.shape[1]), got 40")


# --------------------------------------------------------------------------------------------
# preconditions from the configs


def test_varlen_needs_batch_one(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    for n in ("q", "k", "v", "g", "beta"):
        a[n] = torch.cat([a[n], a[n]], 0)
    expect_error(e, a, ValueError, "cu_seqlens: expected B == 1 when cu_seqlens is given, got B = 2")


def test_varlen_needs_one_sequence(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    a["cu_seqlens"] = torch.zeros(1, dtype=torch.int64)
    a["initial_state"] = torch.zeros(0, 2, V, K)
    expect_error(e, a, ValueError, "cu_seqlens: expected N1 >= 2 when cu_seqlens is given, got N1 = 1")


def test_sequence_count_limit(backend):
    # 2^20 sequences pass (K2 puts them in grid x), one more does not; all but the last empty
    e = entry("varlen_none", backend)
    for n, ok in ((2 ** 20, True), (2 ** 20 + 1, False)):
        a = make_args("varlen_none", lens=(1,))
        a["cu_seqlens"] = torch.cat([torch.zeros(n, dtype=torch.int64), torch.ones(1, dtype=torch.int64)])
        if ok:
            assert call(e, a, validate="full")["N1"] == n + 1
        else:
            expect_error(e, a, ValueError, f"cu_seqlens: expected N1 <= 2**20 + 1 when cu_seqlens is given, "
                                           f"got N1 = {n + 1}")


def test_head_count_limit(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none", B=1, T=1, H=257)
    expect_error(e, a, ValueError, "v: expected HV <= 256, got HV = 257")


def _gva(a, HV):
    """a with HV value heads (v, g, beta, A_log, dt_bias, initial_state), q and k unchanged."""
    a = dict(a)
    B, T, H = a["q"].shape[:3]
    a["v"] = torch.randn(B, T, HV, V).to(BF)
    a["g"] = torch.randn(B, T, HV, K).to(BF)
    a["beta"] = torch.randn(B, T, HV).to(BF)
    a["A_log"] = torch.rand(HV)
    a["dt_bias"] = torch.randn(HV, K)
    if a["initial_state"] is not None:
        s = a["initial_state"]
        a["initial_state"] = torch.randn(s.shape[0], HV, V, K).to(s.dtype)
    return a


@pytest.mark.parametrize("pair", ["varlen_h0f32_ht", "fixed_none"])
def test_gva_heads(pair, backend):
    e = entry(pair, backend)
    a = _gva(make_args(pair, H=2), 8)
    env = call(e, a, validate="full")
    assert (env["H"], env["HV"]) == (2, 8)
    deps = _dependent_dims(a, PAIRS[pair][1]["varlen"])
    for name in ("g", "beta", "A_log", "dt_bias"):
        dim = 0 if name in ("A_log", "dt_bias") else 2
        assert deps[name, dim] == 8
    expect_error(e, _gva(make_args(pair, H=2), 3), ValueError, "v: expected HV % H == 0, got HV = 3, H = 2")
    expect_error(e, _gva(make_args(pair, H=4), 2), ValueError, "v: expected HV >= H, got HV = 2, H = 4")
    b = _gva(make_args(pair, H=2), 8)
    b["g"] = b["g"][:, :, :2].contiguous()
    expect_error(e, b, ValueError, "g.shape[2]: expected 8 (HV, from v.shape[2]), got 2")


def test_total_size_limit(backend):
    # Broadcast views: huge shapes, no memory. Preconditions are checked before strides.
    e = entry("fixed_none", backend)
    T = 2 ** 23 + 1
    a = make_args("fixed_none", B=1, T=1, H=1)
    for n in ("q", "k", "v", "g"):
        a[n] = a[n].expand(1, T, 1, 128)
    a["beta"] = a["beta"].expand(1, T, 1)
    expect_error(e, a, ValueError, f"q: expected B * T * HV <= 2**23, got B = 1, T = {T}, HV = 1")


def test_empty_sequence_rejected(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none", T=0)
    expect_error(e, a, ValueError, "q: expected T >= 1, got T = 0")


# --------------------------------------------------------------------------------------------
# presence of optional arguments


def test_fixed_build_rejects_cu_seqlens(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    a["cu_seqlens"] = torch.tensor([0, 40])
    expect_error(e, a, ValueError, prefix="cu_seqlens: expected None (this build (")


def test_varlen_build_needs_cu_seqlens(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    a["cu_seqlens"] = None
    expect_error(e, a, TypeError, prefix="cu_seqlens: expected a tensor (this build (")


def test_initial_state_presence(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    a["initial_state"] = torch.zeros(1, 2, V, K)
    expect_error(e, a, ValueError, prefix="initial_state: expected None (")
    e2 = entry("fixed_h0bf16_ht", backend)
    a2 = make_args("fixed_h0bf16_ht")
    a2["initial_state"] = None
    expect_error(e2, a2, TypeError, prefix="initial_state: expected a tensor (")


def test_final_state_buffer_needs_a_final_state_build(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    expect_error(e, a, ValueError, prefix="final_state: expected None (", final_state=torch.zeros(1, 2, V, K))


def test_not_a_tensor(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    a["v"] = [1, 2, 3]
    expect_error(e, a, TypeError, prefix="v: expected a torch.Tensor, got ")


# --------------------------------------------------------------------------------------------
# strides, device, alignment, aliasing


def test_non_contiguous(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none", B=2, T=40, H=3)
    q = a["q"].transpose(1, 2).contiguous().transpose(1, 2)  # [B, T, H, K] with H outermost inside B
    a["q"] = q
    expect_error(e, a, ValueError, f"q.stride(1): expected {3 * K} (contiguous), got {q.stride(1)}")


def test_size_one_dims_may_have_any_stride(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none", B=1, T=40, H=1)
    big = torch.zeros(3, 40, 5, K, dtype=BF)
    a["q"] = big[1:2, :, 2:3, :]  # strides (.., 5*K, K, 1): size-1 dims carry odd strides
    assert a["q"].stride(1) != K
    with pytest.raises(ValueError) as info:
        call(e, a)
    # T has size 40, so its stride must be K; the size-1 dims are not what fails.
    assert str(info.value).startswith("q.stride(1): expected 128 (contiguous)")
    a["q"] = torch.zeros(40 * K, dtype=BF).as_strided((1, 40, 1, K), (7, K, 3, 1))
    call(e, a)


def test_device_type(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    expect_error(e, a, ValueError, "q: expected a cuda tensor, got device cpu", expect_device="cuda")


def test_mixed_devices_py():
    # The C++ entry's same-device rule is exercised on the GPU (tests/test_host_codegen_gpu.py):
    # on this machine torch has no second device type that DLPack exports.
    e = entry("fixed_none", "py")
    a = make_args("fixed_none")
    a["v"] = a["v"].to("meta")
    expect_error(e, a, ValueError, "v: expected device cpu (the device of q), got meta")


def test_alignment_rules_from_ir(backend):
    e = entry("varlen_h0f32_ht", backend)
    spec = e.spec
    needs = {p.name: p.align for p in spec.inputs}
    # The kernel source reads v with 16-byte vectors and the TMA descriptors need 16 bytes;
    # whatever the IR says, an alignment rule must exist for every input whose accesses need it.
    assert all(n >= 1 for n in needs.values())
    checked = 0
    for name, n in needs.items():
        a = make_args("varlen_h0f32_ht")
        es = a[name].element_size()
        if n > es:
            a[name] = misaligned(a[name], es)
            expect_error(e, a, ValueError, f"{name}: expected data_ptr % {n} == 0 ("
                         + ("TMA" if [p for p in spec.inputs if p.name == name][0].tma else f"{n}-byte vector access")
                         + f"), got data_ptr % {n} == {es}")
            checked += 1
        else:
            a[name] = misaligned(a[name], es)
            call(e, a)
    assert checked >= 1


def test_tma_buffers_need_16_bytes():
    spec = hc.entry_spec(*builds("varlen_h0f32_ht"))
    tma = [p for p in spec.inputs + spec.outputs + spec.workspace if p.tma]
    assert tma, "K2 reads its workspace through TMA"
    assert all(p.align >= 16 for p in tma)


def test_outputs_must_not_alias_inputs(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    expect_error(e, a, ValueError, "o: expected no overlap with q (outputs must not alias inputs), got overlapping memory",
                 o=a["q"])
    big = torch.zeros(2 * a["v"].numel(), dtype=BF)
    a["v"] = big[: a["v"].numel()].view(a["v"].shape)
    o = big[a["v"].numel() // 2: a["v"].numel() // 2 + a["v"].numel()].view(a["v"].shape)
    expect_error(e, a, ValueError, prefix="o: expected no overlap with v", o=o)
    expect_error(e, a, ValueError, prefix="final_state: expected no overlap with initial_state",
                 final_state=a["initial_state"])
    o_ok = torch.empty_like(a["v"])
    ht_ok = torch.empty_like(a["initial_state"])
    call(e, a, o=o_ok, final_state=ht_ok)
    shared = torch.empty_like(ht_ok)
    o_in_ht = shared.view(-1).view(BF)[: o_ok.numel()].view(o_ok.shape)
    expect_error(e, a, ValueError, "final_state: expected no overlap with o (outputs must not alias inputs), "
                 "got overlapping memory", o=o_in_ht, final_state=shared)


def test_output_buffers_checked(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    expect_error(e, a, TypeError, "o: expected dtype bfloat16, got float32", o=torch.empty(a["v"].shape))
    B, T, H, _ = a["v"].shape
    expect_error(e, a, ValueError, f"o.shape[1]: expected {T} (T, from q.shape[1]), got {T + 1}",
                 o=torch.empty(B, T + 1, H, V, dtype=BF))
    expect_error(e, a, ValueError, prefix="final_state.shape[0]: expected 2 (",
                 final_state=torch.empty(3, H, V, K))


# --------------------------------------------------------------------------------------------
# scalars


@pytest.mark.parametrize("lb,msg", [
    (-6.0, "lower_bound: expected lower_bound >= -5.0, got lower_bound = -6.0"),
    (0.0, "lower_bound: expected lower_bound < 0.0, got lower_bound = 0.0"),
    (float("nan"), "lower_bound: expected lower_bound >= -5.0, got lower_bound = nan"),
])
def test_lower_bound_range(lb, msg, backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    a["lower_bound"] = lb
    expect_error(e, a, ValueError, msg)


def test_scalar_types_and_scale(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    a["lower_bound"] = True
    expect_error(e, a, TypeError, "lower_bound: expected a float, got bool")
    a = make_args("fixed_none")
    a["scale"] = 0.0
    expect_error(e, a, ValueError, "scale: expected scale > 0.0, got scale = 0.0")
    a["scale"] = 2
    assert call(e, a)["scale"] == 2.0
    a["lower_bound"] = -1
    assert call(e, a)["lower_bound"] == -1.0


# --------------------------------------------------------------------------------------------
# cu_seqlens contents


@pytest.mark.parametrize("cu,msg", [
    ([1, 7, 40], "cu_seqlens[0]: expected 0, got 1"),
    ([0, 30, 20, 40], "cu_seqlens[2]: expected >= 30 (cu_seqlens[1], non-decreasing), got 20"),
    ([0, 7, 39], "cu_seqlens[2]: expected 40 (T), got 39"),
])
def test_cu_seqlens_contents_full(cu, msg, backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht", lens=(7, 33))
    a["cu_seqlens"] = torch.tensor(cu)
    a["initial_state"] = torch.zeros(len(cu) - 1, 2, V, K)
    expect_error(e, a, ValueError, msg, validate="full")
    # The default path reads no contents (no device sync); the kernels clamp them.
    call(e, a, validate="fast")


def test_validate_option(backend):
    e = entry("fixed_none", backend)
    a = make_args("fixed_none")
    expect_error(e, a, ValueError, "validate: expected 'fast' or 'full', got 'everything'", validate="everything")


def test_cu_seqlens_dtype_and_rank(backend):
    e = entry("varlen_h0f32_ht", backend)
    a = make_args("varlen_h0f32_ht")
    a["cu_seqlens"] = a["cu_seqlens"].int()
    expect_error(e, a, TypeError, "cu_seqlens: expected dtype int64, got int32")
    a["cu_seqlens"] = a["cu_seqlens"].long().view(1, -1)
    expect_error(e, a, ValueError, "cu_seqlens: expected 1 dimensions [N + 1], got 2")


# --------------------------------------------------------------------------------------------
# the generator: IR-derived, deterministic, cached


def test_py_and_cpp_messages_agree():
    k1, k2 = builds("varlen_h0f32_ht")
    ep, ec = hc.get_entry(k1, k2, backend="py"), hc.get_entry(k1, k2, backend="cpp")
    cases = []
    base = make_args("varlen_h0f32_ht")
    for name in ("q", "v", "beta", "dt_bias", "initial_state"):
        a = dict(base)
        a[name] = a[name].to(torch.float16)
        cases.append((a, {}))
        a = dict(base)
        a[name] = a[name].unsqueeze(-1)
        cases.append((a, {}))
    a = dict(base)
    a["scale"] = -1.0
    cases.append((a, {}))
    cases.append((dict(base), {"o": base["k"]}))
    for a, kw in cases:
        msgs = []
        for e in (ep, ec):
            with pytest.raises((ValueError, TypeError)) as info:
                call(e, a, **kw)
            msgs.append((type(info.value), str(info.value)))
        assert msgs[0] == msgs[1]


def test_rules_follow_the_ir():
    # Change the spec the way a different IR would, and the generated checks follow.
    spec = hc.entry_spec(*builds("fixed_none"))
    q = spec.inputs[0]
    assert q.name == "q"
    q16 = dataclasses.replace(q, dtype="float16")
    spec16 = dataclasses.replace(spec, inputs=(q16,) + spec.inputs[1:])
    ns = {}
    exec(compile(gen_py.generate(spec16), "<gen>", "exec"), ns)
    a = make_args("fixed_none")
    a["q"] = a["q"].to(torch.float16)
    ns["validate"](*[a[n] for n in ORDER], expect_device="cpu")
    a["q"] = a["q"].to(BF)
    with pytest.raises(TypeError, match="q: expected dtype float16, got bfloat16"):
        ns["validate"](*[a[n] for n in ORDER], expect_device="cpu")


def test_generated_source_is_deterministic_and_keyed():
    k1, k2 = builds("varlen_h0f32_ht")
    spec = hc.entry_spec(k1, k2)
    fresh = hc.spec.read_entry(k1, k2)
    assert fresh == spec
    assert gen_py.generate(fresh) == gen_py.generate(spec)
    assert gen_cpp.generate(fresh) == gen_cpp.generate(spec)
    other = dataclasses.replace(spec, k2=dataclasses.replace(spec.k2, ir_hash="0" * 64))
    assert hc.entry_key(other) != hc.entry_key(spec)
    e = hc.get_entry(k1, k2, backend="py")
    with open(e.module.__file__) as f:
        assert f.read() == gen_py.generate(spec)
    assert hc.entry_key(spec) in e.module.__file__


def test_launch_geometry_covers_the_work():
    k1b, k2b = builds("varlen_h0f32_ht")
    spec = hc.entry_spec(k1b, k2b)
    for T, N in [(1, 1), (40, 2), (1000, 7), (4096, 1)]:
        env = {"B": 1, "T": T, "H": 3, "HV": 3, "N1": N + 1}
        env["NC"] = X.evaluate(dict(spec.derived_vars)["NC"], env)
        g1 = [X.evaluate(x, env) for x in spec.k1.grid]
        g2 = [X.evaluate(x, env) for x in spec.k2.grid]
        assert g1[0] * k1b.config.chunks_per_cta >= env["NC"] and g1[1] == 3
        # K2: the sequence in grid x (up to 2^31 - 1 sequences), value head and block in y
        assert g2[0] == N and g2[1] * k2b.config.block_v == 3 * V and g2[2] == 1
        assert X.evaluate(spec.k1.smem, env) <= 227 * 1024 and X.evaluate(spec.k2.smem, env) <= 227 * 1024


def test_tma_descriptors_match_their_buffers():
    spec = hc.entry_spec(*builds("varlen_h0f32_ht"))
    assert spec.k2.tma
    bufs = {p.name: p for p in spec.workspace + spec.inputs + spec.outputs}
    env = {"B": 1, "T": 100, "H": 3, "HV": 3, "N1": 3}
    env["NC"] = X.evaluate(dict(spec.derived_vars)["NC"], env)
    for d in spec.k2.tma:
        p = bufs[d.tensor]
        shape = [X.evaluate(s, env) for s in p.shape]
        strides = [X.evaluate(s, env) for s in p.strides]
        es = {"bfloat16": 2, "float16": 2, "float32": 4}[p.dtype]
        dims = [X.evaluate(x, env) for x in d.global_dim]
        gstr = [X.evaluate(x, env) for x in d.global_stride]
        # Innermost: the contiguous dim; the rest: the buffer's (extent, byte stride) pairs in
        # any order (a descriptor may walk the dims permuted).
        assert dims[0] == shape[-1] and gstr[0] == es and strides[-1] == 1
        assert sorted(zip(dims[1:], gstr[1:])) == sorted(zip(shape[:-1], [s * es for s in strides[:-1]]))
        assert all(b <= 256 for b in d.box_dim)


def test_kernel_args_name_real_buffers():
    spec = hc.entry_spec(*builds("varlen_h0f32_ht"))
    for ks in (spec.k1, spec.k2):
        names = {p.name for p in ks.params}
        descs = {d.desc for d in ks.tma}
        for a in ks.kernel_args:
            if a.kind == "ptr":
                assert a.name in names
            elif a.kind == "desc":
                assert a.name in descs
            else:
                assert a.name in names or set(X.free_vars(a.expr)) <= {"B", "T", "H", "HV", "N1", "NC"}
    assert {w.name for w in spec.workspace} == {"Wk", "qd", "kr", "Ab", "Mqk", "gC"}   # U0 = Ab v in K2
    assert [p.name for p in spec.outputs] == ["o", "final_state"]


def test_rule_kinds_present():
    spec = hc.entry_spec(*builds("varlen_h0f32_ht"))
    kinds = {type(r).__name__ for r in R.build_rules(spec)}
    assert kinds >= {"Presence", "IsTensor", "DType", "NDim", "Device", "Bind", "Dim", "Derive", "Pre", "Stride",
                     "Align", "NoAlias", "Scalar", "ScalarPre"}


# --------------------------------------------------------------------------------------------
# the C++ entry's launch path without the driver (allocation, packing, outputs)


@pytest.mark.parametrize("pair", list(PAIRS))
def test_cpp_dry_run_allocates_outputs(pair, monkeypatch):
    e = entry(pair, "cpp")
    a = make_args(pair)
    o, ht = e.dry_run(*[a[n] for n in ORDER])
    assert o.shape == a["v"].shape and o.dtype == BF
    if PAIRS[pair][1]["final_state"]:
        N = a["cu_seqlens"].numel() - 1 if a["cu_seqlens"] is not None else a["q"].shape[0]
        want_dt = {"float32": torch.float32, "bfloat16": BF, None: torch.float32}[PAIRS[pair][1]["initial_state"]]
        assert ht.shape == (N, a["q"].shape[2], V, K) and ht.dtype == want_dt
    else:
        assert ht is None
    # Caller-provided outputs come back as the same tensors; poison fills fresh ones with NaN.
    o2 = torch.zeros_like(a["v"])
    r_o, _ = e.dry_run(*[a[n] for n in ORDER], o=o2)
    assert r_o is o2
    monkeypatch.setenv("KDA_TILE_POISON", "1")
    o3, ht3 = e.dry_run(*[a[n] for n in ORDER])
    assert torch.isnan(o3.float()).all()
    if ht3 is not None:
        assert torch.isnan(ht3.float()).all()
    # Errors still name the argument on this path.
    a["q"] = a["q"].float()
    with pytest.raises(TypeError, match="^q: expected dtype bfloat16, got float32$"):
        e.dry_run(*[a[n] for n in ORDER])


@pytest.mark.parametrize("pair", ["varlen_h0f32_ht", "fixed_none"])
def test_cpp_caller_workspace(pair, monkeypatch):
    # The argument after flags is the caller's workspace (kda_tile.slabs' pipeline): checked, named
    # in errors, and the one the call writes (poison fills it, on this dry path).
    from kda_tile import slabs
    e = entry(pair, "cpp")
    a = make_args(pair)
    pos = [a[n] for n in ORDER]
    run = e._entry
    with pytest.raises(ValueError) as info:
        run(*pos, None, None, 4, torch.zeros(1, dtype=torch.uint8))
    m = re.match(r"^workspace: expected a contiguous 1-D uint8 tensor of at least (\d+) bytes on cpu, got uint8 of 1 "
                 r"dimensions, 1 elements on cpu$", str(info.value))
    assert m, str(info.value)
    need = int(m.group(1))
    varlen = PAIRS[pair][1]["varlen"]
    N = a["cu_seqlens"].numel() - 1 if varlen else a["q"].shape[0]
    T = a["q"].shape[0] * a["q"].shape[1]
    formula = slabs.workspace_bytes(N, T, a["v"].shape[2], False, 16, varlen)
    assert formula + 256 <= need <= formula + 7 * 256   # six buffers rounded up to 256 bytes, and the base
    with pytest.raises(ValueError, match="^workspace: expected a contiguous 1-D uint8 tensor .* got float32 of 1 "):
        run(*pos, None, None, 4, torch.zeros(need, dtype=torch.float32))
    with pytest.raises(ValueError, match="^workspace: .* got uint8 of 2 dimensions"):
        run(*pos, None, None, 4, torch.zeros(2, need, dtype=torch.uint8))
    with pytest.raises(ValueError, match="^workspace: .* got uint8 of 1 dimensions"):
        run(*pos, None, None, 4, torch.zeros(2 * need, dtype=torch.uint8)[::2])
    with pytest.raises(TypeError, match="^workspace: expected a torch.Tensor or None, got "):
        run(*pos, None, None, 4, "ws")
    monkeypatch.setenv("KDA_TILE_POISON", "1")
    ws = torch.zeros(need, dtype=torch.uint8)
    o, _ = run(*pos, None, None, 4, ws)
    assert o.shape == a["v"].shape
    assert int((ws != 0).sum()) > need // 3   # poisoned in place (an fp16 NaN, 0x7e00, has one zero byte)
    ws.zero_()
    run(*pos, None, None, 4 | 256, ws)          # K2 alone reads what an earlier K1 wrote: left as it is
    assert int((ws != 0).sum()) == 0
    o, _ = run(*pos, None, None, 4, None)      # None: the entry's own workspace, as before


@pytest.mark.parametrize("pair", ["varlen_h0f32_ht", "fixed_none"])
def test_cpp_fast_front(pair):
    # The generated Python front allocates final_state from IR shapes and takes o alone back.
    e = entry(pair, "cpp")
    fast = e.dry_run_fast()
    a = make_args(pair)
    o, ht = fast(*[a[n] for n in ORDER])
    assert o.shape == a["v"].shape and o.dtype == BF
    if PAIRS[pair][1]["final_state"]:
        assert ht.shape == (a["cu_seqlens"].numel() - 1, a["q"].shape[2], V, K) and ht.dtype == torch.float32
    else:
        assert ht is None
    bad = dict(a)
    bad["q"] = bad["q"].float()
    with pytest.raises(TypeError, match=r"^q: expected dtype bfloat16, got float32$"):
        fast(*[bad[n] for n in ORDER])
    if a["cu_seqlens"] is not None:
        bad = dict(a)
        bad["cu_seqlens"] = [0, 40]  # the front cannot allocate from this; the entry names it
        with pytest.raises(TypeError, match=r"^cu_seqlens: expected a torch.Tensor, got "):
            fast(*[bad[n] for n in ORDER])


@pytest.mark.parametrize("pair", ["varlen_h0f32_ht", "fixed_h0bf16_ht"])
def test_cpp_fast_front_state_errors_name_initial_state(pair):
    # With an initial state, the front allocates final_state like it; a bad initial_state is
    # still reported as itself, never as the final_state derived from it.
    from host_codegen import gen_py
    e = entry(pair, "cpp")
    assert "_empty_like(initial_state" in gen_py.generate_fast(e.spec)
    fast = e.dry_run_fast()
    a = make_args(pair)
    bad = dict(a)
    bad["initial_state"] = a["initial_state"][:, :1].clone()
    with pytest.raises(ValueError, match=r"^initial_state.shape\[1\]: expected 2 "):
        fast(*[bad[n] for n in ORDER])
    bad["initial_state"] = a["initial_state"].transpose(2, 3)
    with pytest.raises(ValueError, match=r"^initial_state.stride\(2\): expected "):
        fast(*[bad[n] for n in ORDER])
    bad["initial_state"] = None
    with pytest.raises(TypeError, match=r"^initial_state: expected a tensor"):
        fast(*[bad[n] for n in ORDER])


def test_fast_front_without_initial_state_allocates_from_shapes():
    from host_codegen import gen_py
    from kda_kernels import registry
    k1 = registry.find("k1", varlen=True, fast_math=False)
    k2 = registry.find("k2", varlen=True, initial_state=None, final_state=True)
    src = gen_py.generate_fast(hc.entry_spec(k1, k2))
    assert "_empty_like" not in src.split("def call", 1)[1]
    assert "cu_seqlens.shape[0] - 1" in src and "v.shape[2]" in src


def test_launch_mode_env(monkeypatch):
    from host_codegen import cpp_entry
    monkeypatch.setenv("KDA_TILE_LAUNCH", "graph")
    assert cpp_entry.launch_flags() == 128
    monkeypatch.setenv("KDA_TILE_LAUNCH", "kernels")
    assert cpp_entry.launch_flags() == 0
    monkeypatch.setenv("KDA_TILE_LAUNCH", "graph-rewrite")
    assert cpp_entry.launch_flags() == 128 | 1024
    monkeypatch.setenv("KDA_TILE_LAUNCH", "streams")
    with pytest.raises(ValueError, match=r"^KDA_TILE_LAUNCH: expected one of \['graph', 'graph-rewrite', 'kernels'\], got 'streams'$"):
        cpp_entry.launch_flags()
