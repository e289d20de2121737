"""GPU tests of the generated host entries (H200: `pytest -m gpu tests/test_host_codegen_gpu.py`).

- launch correctness of both entries (C++ through TVM-FFI, Python through tilelang JIT
  kernels) against the float64 token recurrence on the GPU, with the workspace and fresh
  outputs poisoned with NaN;
- caller-provided outputs, the caller's current stream, argument errors on CUDA tensors;
- CUDA-graph capture of one call, replayed with new data (fixed and varlen);
- both launch modes (two kernel launches, one graph launch), the workspace kept across calls
  (growing and shrinking shapes, two streams), kda_tile.empty_cache().
"""
import zlib

import pytest
import torch

pytestmark = pytest.mark.gpu

TOL = 5e-3
K = V = 128

# (name, varlen, fast_math, initial_state dtype, final_state, B, T, H, sequence lengths)
CASES = [
    ("fixed_none", False, False, None, False, 2, 100, 3, None),
    ("fixed_f32_ht", False, False, "float32", True, 1, 257, 2, None),
    ("fixed_fast_bf16_ht", False, True, "bfloat16", True, 2, 64, 4, None),
    ("varlen_f32_ht", True, False, "float32", True, 1, None, 2, [17, 33, 65]),
    ("varlen_none_ht", True, False, None, True, 1, None, 3, [1, 16, 100, 0, 7]),
    ("varlen_fast_bf16", True, True, "bfloat16", False, 1, None, 2, [64, 5]),
]


def _builds(varlen, fast_math, h0, ht):
    from kda_kernels import registry
    return (registry.find("k1", varlen=varlen, fast_math=fast_math),
            registry.find("k2", varlen=varlen, initial_state=h0, final_state=ht))


def _cu(lens):
    c = [0]
    for n in lens:
        c.append(c[-1] + n)
    return torch.tensor(c, dtype=torch.int64, device="cuda")


def _inputs(B, T, H, lens, h0, seed):
    from kda_kernels import reference as R
    cu = None
    if lens is not None:
        B, T = 1, sum(lens)
        cu = _cu(lens)
    sd = None if h0 is None else getattr(torch, h0)
    inp = R.random_inputs(B, T, H, device="cuda", seed=seed, cu_seqlens=cu, state_dtype=sd)
    inp["lower_bound"] = -5.0
    return inp


def _args(inp):
    return (inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], inp["A_log"], inp["dt_bias"],
            inp["cu_seqlens"], inp["initial_state"], inp["lower_bound"], None)


def _reference(inp, want_ht):
    from kda_kernels import reference as R
    return R.kda_recurrent(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], gate_kind="safe",
                           A_log=inp["A_log"], dt_bias=inp["dt_bias"], lower_bound=inp["lower_bound"],
                           initial_state=inp["initial_state"], output_final_state=want_ht,
                           cu_seqlens=inp["cu_seqlens"])


def _check(o, ht, inp, want_ht, label):
    from kda_kernels.reference import rel_err
    torch.cuda.synchronize()
    o_ref, ht_ref = _reference(inp, want_ht)
    e_o = rel_err(o, o_ref)
    assert e_o <= TOL, f"{label}: rel err of o {e_o:.3e}"
    if want_ht:
        want_dt = inp["initial_state"].dtype if inp["initial_state"] is not None else torch.float32
        assert ht is not None and ht.dtype == want_dt and ht.shape == ht_ref.shape
        e_h = rel_err(ht, ht_ref)
        assert e_h <= TOL, f"{label}: rel err of final_state {e_h:.3e}"
    else:
        assert ht is None


@pytest.fixture(autouse=True)
def _poison(monkeypatch):
    monkeypatch.setenv("KDA_TILE_POISON", "1")


LAUNCH_MODES = ["kernels", "graph"]
O_ALONE, GRAPH = 8, 128


@pytest.mark.parametrize("backend", ["cpp", "py"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_launch_matches_reference(case, backend):
    from host_codegen import get_entry
    name, varlen, fast, h0, ht, B, T, H, lens = case
    entry = get_entry(*_builds(varlen, fast, h0, ht), backend=backend)
    inp = _inputs(B, T, H, lens, h0, seed=zlib.crc32(name.encode()) % 1000)
    o, hT = entry(*_args(inp))
    assert o.shape == inp["v"].shape and o.dtype == torch.bfloat16 and o.device == inp["q"].device
    _check(o, hT, inp, ht, f"{name}/{backend}")
    if backend == "cpp":
        r = entry.raw(*_args(inp))  # the tuple-returning path
        fo, fht = entry.fast(*_args(inp))
        torch.cuda.synchronize()
        assert torch.equal(r[0], o) and torch.equal(fo, o)
        if ht:
            assert torch.equal(r[1], hT) and torch.equal(fht, hT)
    # Same call again with full validation: same results, and repeated calls reuse cached state.
    o2, hT2 = entry(*_args(inp), validate="full")
    torch.cuda.synchronize()
    assert torch.equal(o2, o)
    if ht:
        assert torch.equal(hT2, hT)


def test_caller_outputs_are_written_and_returned():
    from host_codegen import get_entry
    entry = get_entry(*_builds(True, False, "float32", True), backend="cpp")
    inp = _inputs(1, None, 2, [20, 44], "float32", seed=1)
    o = torch.full_like(inp["v"], float("nan"))
    ht = torch.full_like(inp["initial_state"], float("nan"))
    r_o, r_ht = entry(*_args(inp), o=o, final_state=ht)
    assert r_o is o and r_ht is ht
    _check(o, ht, inp, True, "caller outputs")


def test_runs_on_the_current_stream():
    from host_codegen import get_entry
    entry = get_entry(*_builds(False, False, None, True), backend="cpp")
    inp = _inputs(2, 300, 4, None, None, seed=2)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        # Inputs rewritten on the side stream right before the call: only a launch on this
        # stream is ordered after the writes.
        torch.cuda._sleep(50_000_000)
        new_v = torch.randn_like(inp["v"])
        inp["v"].copy_(new_v)
        o, ht = entry(*_args(inp))
    s.synchronize()
    _check(o, ht, inp, True, "side stream")


def test_no_device_sync_on_default_path():
    from host_codegen import get_entry
    entry = get_entry(*_builds(True, False, None, False), backend="cpp")
    inp = _inputs(1, None, 2, [30, 34], None, seed=3)
    entry(*_args(inp))  # warm: module load
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        o, _ = entry(*_args(inp))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    _check(o, None, inp, False, "no sync")


def test_argument_errors_on_cuda():
    from host_codegen import get_entry
    entry = get_entry(*_builds(True, False, "float32", True), backend="cpp")
    inp = _inputs(1, None, 2, [20, 44], "float32", seed=4)
    a = list(_args(inp))
    a[1] = a[1].cpu()
    with pytest.raises(ValueError, match=r"^k: expected device cuda:\d \(the device of q\), got cpu$"):
        entry(*a)
    a = list(_args(inp))
    buf = torch.empty(a[2].numel() + 8, dtype=torch.bfloat16, device="cuda")
    a[2] = buf[1:1 + a[2].numel()].view(a[2].shape)
    with pytest.raises(ValueError, match=r"^v: expected data_ptr % 16 == 0"):
        entry(*a)
    a = list(_args(inp))
    a[7] = torch.tensor([0, 30, 20, 64], device="cuda")
    a[8] = torch.zeros(3, 2, V, K, device="cuda")
    with pytest.raises(ValueError, match=r"^cu_seqlens\[2\]: expected >= 30"):
        entry(*a, validate="full")
    a = list(_args(inp))
    a[0] = torch.cat([a[0], a[0]])
    with pytest.raises(ValueError, match=r"^k.shape\[0\]: expected 2 \(B, from q.shape\[0\]\), got 1$"):
        entry(*a)


@pytest.mark.parametrize("mode", LAUNCH_MODES)
@pytest.mark.parametrize("varlen", [False, True], ids=["fixed", "varlen"])
def test_cuda_graph_capture_and_replay(varlen, mode, monkeypatch):
    from host_codegen import get_entry
    monkeypatch.setenv("KDA_TILE_LAUNCH", mode)
    entry = get_entry(*_builds(varlen, False, "float32", True), backend="cpp")
    lens = [40, 24, 64] if varlen else None
    static = _inputs(2 if not varlen else 1, 128, 4, lens, "float32", seed=10)
    args = _args(static)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        entry(*args)  # warm-up outside capture: module load, allocator pools
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_static, ht_static = entry(*args)
    for seed in (11, 12, 13):
        fresh = _inputs(2 if not varlen else 1, 128, 4, lens, "float32", seed=seed)
        for key in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state"):
            static[key].copy_(fresh[key])
        if varlen:
            # New split points, same number of sequences: the kernels read cu_seqlens at run time.
            new_lens = [[10, 90, 28], [128, 0, 0], [1, 1, 126]][seed - 11]
            static["cu_seqlens"].copy_(_cu(new_lens))
        graph.replay()
        torch.cuda.synchronize()
        _check(o_static, ht_static, static, True, f"graph replay seed={seed}")


def test_kda_prefill_uses_the_generated_entry():
    import kda_tile
    inp = _inputs(1, None, 2, [33, 31], "float32", seed=5)
    o, ht = kda_tile.kda_prefill(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                 dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                 output_final_state=True, cu_seqlens=inp["cu_seqlens"])
    _check(o, ht, inp, True, "kda_prefill")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_graph_launch_matches_kernel_launches(case):
    """Flags bit 7 (one graph launch) against two kernel launches, then a second shape through
    the same graph (new grid, new pointers), each against the reference."""
    from host_codegen import get_entry
    name, varlen, fast, h0, ht, B, T, H, lens = case
    entry = get_entry(*_builds(varlen, fast, h0, ht), backend="cpp")
    raw = entry.raw
    shapes = [(B, T, H, lens), (B, (T or 0) + 37, H + 1, None if lens is None else lens[::-1] + [19])]
    for i, (b, t, h, ls) in enumerate(shapes):
        inp = _inputs(b, t, h, ls, h0, seed=zlib.crc32(name.encode()) % 1000 + i)
        hts = []
        outs = []
        for flags in (O_ALONE, O_ALONE | GRAPH):
            fs = None
            if ht:
                n = b if ls is None else len(ls)
                fs = torch.full((n, h, V, K), float("nan"), device="cuda",
                                dtype=inp["initial_state"].dtype if h0 else torch.float32)
            outs.append(raw(*_args(inp), None, fs, flags))
            hts.append(fs)
        torch.cuda.synchronize()
        assert torch.equal(outs[0], outs[1]), f"{name} shape {i}: graph launch differs from kernel launches"
        if ht:
            assert torch.equal(hts[0], hts[1])
        _check(outs[1], hts[1], inp, ht, f"{name}/graph shape {i}")


@pytest.mark.parametrize("mode", LAUNCH_MODES)
def test_workspace_kept_across_calls(mode, monkeypatch):
    """The cached workspace grows, is reused by smaller calls and is kept per stream: every
    call is checked, with the workspace poisoned before each."""
    import kda_tile
    from kda_tile import api
    monkeypatch.setenv("KDA_TILE_LAUNCH", mode)
    api._ENTRIES.clear()
    api._LOADED.clear()
    from host_codegen import get_entry
    get_entry.cache_clear()
    side = torch.cuda.Stream()
    plan = [([64], 2, None), ([300, 5], 3, None), ([16], 1, side), ([1000, 1, 999], 4, None), ([33], 2, side),
            ([2, 3], 2, None)]
    for i, (lens, H, stream) in enumerate(plan):
        inp = _inputs(1, None, H, lens, "float32", seed=40 + i)
        if stream is not None:
            stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream or torch.cuda.current_stream()):
            o, ht = kda_tile.kda_prefill(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                         dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                         output_final_state=True, cu_seqlens=inp["cu_seqlens"])
        if stream is not None:
            torch.cuda.current_stream().wait_stream(stream)
        _check(o, ht, inp, True, f"{mode} call {i} lens={lens} H={H}")
    freed = kda_tile.empty_cache()
    assert freed > 0
    assert kda_tile.empty_cache() == 0
    inp = _inputs(1, None, 2, [70], "float32", seed=60)
    o, ht = kda_tile.kda_prefill(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                 dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                 output_final_state=True, cu_seqlens=inp["cu_seqlens"])
    _check(o, ht, inp, True, f"{mode} after empty_cache")
    api._ENTRIES.clear()
    api._LOADED.clear()
    get_entry.cache_clear()


def test_graph_node_parameters_follow_every_change():
    """Graph launch rewrites a node's parameters only when its launch bytes change: every change
    of contents (none), scalar, output pointer, input pointer and shape between two calls must
    still reach the kernels. Each call against the reference, and bit-equal to the same call with
    the parameters rewritten (flags bit 10)."""
    from host_codegen import get_entry
    REWRITE = 1024
    entry = get_entry(*_builds(False, False, "float32", True), backend="cpp")
    raw = entry.raw
    inp = _inputs(1, 64, 2, None, "float32", seed=70)
    o_bufs = [torch.empty_like(inp["v"]) for _ in range(2)]
    fs = torch.empty_like(inp["initial_state"])

    def call(inp, o, flags):
        o.fill_(float("nan"))
        fs.fill_(float("nan"))
        raw(*_args(inp), o, fs, O_ALONE | GRAPH | flags)
        return o.clone(), fs.clone()

    steps = ["first", "same arguments, new contents", "new lower_bound", "new out", "new q", "shorter T"]
    for i, step in enumerate(steps):
        if step == "same arguments, new contents":
            fresh = _inputs(1, 64, 2, None, "float32", seed=71)
            for key in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state"):
                inp[key].copy_(fresh[key])
        elif step == "new lower_bound":
            inp["lower_bound"] = -2.0
        elif step == "new q":
            inp["q"] = inp["q"].clone()
        elif step == "shorter T":
            inp = dict(inp, **{key: inp[key][:, :40].contiguous() for key in ("q", "k", "v", "g", "beta")})
            o_bufs = [torch.empty_like(inp["v"]) for _ in range(2)]
        o = o_bufs[1 if step == "new out" else 0]
        got = call(inp, o, 0)
        _check(got[0], got[1], inp, True, f"step {i}: {step}")
        want = call(inp, o, REWRITE)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), f"step {i}: {step}"
