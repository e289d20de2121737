"""GPU correctness matrix (run on the H200: `pytest -m gpu tests/test_gpu_correctness.py`).

Every case draws fresh random inputs, poisons the outputs and the workspace with NaN
(KDA_TILE_POISON=1), runs kda_prefill and compares o and the final state against the
float64 token recurrence computed on the GPU. Results land in $OUT/gpu_matrix.json when
OUT is set (the device tool), else in tests/results/gpu_matrix.json.
"""
import json
import os
import time
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

TOL = 5e-3
RESULTS: list[dict] = []
STATE_MODES = [  # (initial_state dtype, output_final_state)
    (None, False), ("float32", False), ("bfloat16", False), (None, True), ("float32", True), ("bfloat16", True),
]
MODE_IDS = ["none", "in-f32", "in-bf16", "out-f32", "inout-f32", "inout-bf16"]
VARLEN_LISTS = [[16], [16, 16], [4, 8, 12], [17, 33, 65], [20, 50, 100], [64, 128, 256],
                [1300, 547, 2048, 963, 271, 3063], [1024] * 8]


@pytest.fixture(scope="module", autouse=True)
def _poison():
    os.environ["KDA_TILE_POISON"] = "1"
    yield
    os.environ.pop("KDA_TILE_POISON", None)


def _flush():
    """Rewritten after every case, so a run cut short still leaves its results."""
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_matrix.json").write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "tol": TOL, "cases": RESULTS}, indent=1))


# float64 references from this size of final state on are kept in fp32 once computed (_refs)
_KEEP_F64_BYTES = 1 << 30


def _refs(inp, cu, modes, scale=None, chunked=False):
    """float64 references for the initial-state choices the modes need, one per input set
    (`chunked`: the chunked float64 form, equal to the token recurrence to ~1e-12 and ~16x fewer
    steps, for T up to 1M)."""
    from kda_kernels import reference as R
    args = dict(gate_kind="safe", A_log=inp["A_log"], dt_bias=inp["dt_bias"], lower_bound=inp["lower_bound"],
                scale=scale, output_final_state=True, cu_seqlens=cu)
    ref = R.kda_chunked if chunked else R.kda_recurrent
    refs = {}
    for h0 in {STATE_MODES[m][0] for m in modes}:
        s0 = None if h0 is None else inp["h0"].to(getattr(torch, h0))
        o_ref, ht_ref = ref(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], initial_state=s0, **args)
        if ht_ref.numel() * ht_ref.element_size() >= _KEEP_F64_BYTES:
            # kept in fp32 (a relative rounding of 6e-8 against the 5e-3 asked): three float64
            # final states of 2048 x 32 heads (8 GiB each) and their working copies do not fit
            # an 80 GB card beside the kernel's own outputs
            o_ref, ht_ref = o_ref.float(), ht_ref.float()
            torch.cuda.empty_cache()
        refs[h0] = (o_ref, ht_ref)
    return refs


def _inputs(B, T, H, cu=None, seed=0, g_raw=None, dt_bias=None, qk_scale=(1.0, 1.0), lower_bound=-5.0, HV=None):
    """HV value heads (GVA) when given: v, g, beta, A_log, dt_bias and the state get HV heads."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"
    N = B if cu is None else cu.numel() - 1
    HV = HV or H
    bf = torch.bfloat16
    inp = dict(
        q=(torch.randn(B, T, H, 128, device=dev, generator=gen) * qk_scale[0]).to(bf),
        k=(torch.randn(B, T, H, 128, device=dev, generator=gen) * qk_scale[1]).to(bf),
        v=torch.randn(B, T, HV, 128, device=dev, generator=gen).to(bf),
        g=torch.randn(B, T, HV, 128, device=dev, generator=gen).to(bf) if g_raw is None else g_raw,
        beta=torch.randn(B, T, HV, device=dev, generator=gen).to(bf),
        A_log=torch.empty(HV, device=dev).uniform_(0.0, 2.7, generator=gen),
        dt_bias=(torch.randn(HV, 128, device=dev, generator=gen) * 0.5) if dt_bias is None else dt_bias,
        h0=torch.randn(N, HV, 128, 128, device=dev, generator=gen),
        lower_bound=lower_bound,
    )
    return inp


def _run_modes(case, inp, cu, modes=range(len(STATE_MODES)), fast_math=False, split=None, chunked=False, spp=None,
               max_seqlen=None, short=None):
    """split: None, or whether kda_tile.api.use_split must choose the sequence split here; spp:
    None, or the sequences a K2 program must walk here (kda_tile.api.spp_for); short: None, or
    the chunks of the short form the modes without an initial state must take (0: none; 1; the
    pairwise form's configs.PAIRWISE_CHUNKS: kda_tile.api.takes_short)."""
    import kda_tile
    from kda_kernels.reference import rel_err
    from kda_tile.api import scan_parts_for, spp_for, takes_short, use_split
    if short is not None:
        assert takes_short(inp["q"], cu, None, max_seqlen) == short, (case, short)
    if split is not None:
        assert use_split(inp["q"], inp["v"], cu) == split, (case, split)
    if spp is not None:
        assert spp_for(inp["q"], inp["v"], cu) == spp, (case, spp)
    refs = _refs(inp, cu, modes, chunked=chunked)
    failures = []
    for mi in modes:
        h0_dtype, out_final = STATE_MODES[mi]
        s0 = None if h0_dtype is None else inp["h0"].to(getattr(torch, h0_dtype))
        t0 = time.perf_counter()
        o, ht = kda_tile.kda_prefill(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                     dt_bias=inp["dt_bias"], lower_bound=inp["lower_bound"], initial_state=s0,
                                     output_final_state=out_final, cu_seqlens=cu, fast_math=fast_math,
                                     max_seqlen=max_seqlen)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        o_ref, ht_ref = refs[h0_dtype]
        e_o = rel_err(o, o_ref)
        e_h = None
        if out_final:
            assert ht is not None and ht.dtype == (s0.dtype if s0 is not None else torch.float32)
            e_h = rel_err(ht, ht_ref)
        else:
            assert ht is None
        nan = bool(torch.isnan(o).any()) or (ht is not None and bool(torch.isnan(ht).any()))
        RESULTS.append(dict(case=case, mode=MODE_IDS[mi], fast_math=fast_math, err_o=e_o, err_ht=e_h,
                            unwritten_or_nan=nan, seconds=round(wall, 4),
                            split=use_split(inp["q"], inp["v"], cu), spp=spp_for(inp["q"], inp["v"], cu),
                            scan_parts=scan_parts_for(inp["q"], inp["v"], cu) if use_split(inp["q"], inp["v"], cu)
                            else None,
                            short=takes_short(inp["q"], cu, s0, max_seqlen)))
        if nan or not e_o <= TOL or (e_h is not None and not e_h <= TOL):
            failures.append(f"{case} {MODE_IDS[mi]}: err_o={e_o:.3e} err_ht={e_h} nan={nan}")
    _flush()
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("H", [1, 4, 32, 96])
@pytest.mark.parametrize("T", [16, 17, 37, 64, 97, 256, 1024, 4096, 8192])
def test_fixed(T, H):
    inp = _inputs(1, T, H, seed=T * 1000 + H)
    _run_modes(f"fixed B=1 T={T} H={H}", inp, None)


@pytest.mark.parametrize("H", [1, 4, 96])
@pytest.mark.parametrize("lens", VARLEN_LISTS, ids=lambda l: "x".join(map(str, l[:3])) + f"_n{len(l)}")
def test_varlen(lens, H):
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), H, cu=cu, seed=sum(lens) + H)
    _run_modes(f"varlen {lens} H={H}", inp, cu)


@pytest.mark.parametrize("H,HV,T", [(1, 2, 37), (2, 8, 1024), (4, 16, 97), (16, 64, 8192)])
def test_gva_fixed(H, HV, T):
    inp = _inputs(1, T, H, seed=T + 31 * HV, HV=HV)
    _run_modes(f"gva fixed B=1 T={T} H={H} HV={HV}", inp, None)


@pytest.mark.parametrize("fast_math", [False, True], ids=["accurate", "fast"])
def test_gva_varlen(fast_math):
    lens = [17, 0, 1, 300, 64, 1023]
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), 2, cu=cu, seed=5, HV=6)
    _run_modes(f"gva varlen {lens} H=2 HV=6", inp, cu, fast_math=fast_math)


@pytest.mark.parametrize("B,T", [(2, 64), (2, 1024), (4, 256), (8, 128)])
def test_batched(B, T):
    inp = _inputs(B, T, 4, seed=B * T)
    _run_modes(f"batched B={B} T={T} H=4", inp, None)


def test_long():
    inp = _inputs(1, 131072, 4, seed=7)
    _run_modes("long T=131072 H=4", inp, None, modes=[0, 4])


@pytest.mark.parametrize("g_val", [8.0, -8.0])
@pytest.mark.parametrize("dt_val", [8.0, -8.0])
def test_adversarial_gates(g_val, dt_val):
    H, T = 4, 1000
    g = torch.full((1, T, H, 128), g_val, device="cuda", dtype=torch.bfloat16)
    dt = torch.full((H, 128), dt_val, device="cuda")
    inp = _inputs(1, T, H, seed=11, g_raw=g, dt_bias=dt)
    _run_modes(f"adversarial g={g_val} dt_bias={dt_val}", inp, None, modes=[0, 4])


def test_qk_norm_spread():
    inp = _inputs(1, 777, 4, seed=13, qk_scale=(1e-3, 1e3))
    _run_modes("q*1e-3 k*1e3", inp, None, modes=[0, 4])
    inp = _inputs(1, 777, 4, seed=14, qk_scale=(1e3, 1e-3))
    _run_modes("q*1e3 k*1e-3", inp, None, modes=[0, 4])


@pytest.mark.parametrize("lower_bound", [-5.0, -1.0, -0.01])
def test_lower_bounds_and_fast_math(lower_bound):
    inp = _inputs(1, 517, 4, seed=17, lower_bound=lower_bound)
    _run_modes(f"lower_bound={lower_bound}", inp, None, modes=[0, 4])
    _run_modes(f"lower_bound={lower_bound} fast_math", inp, None, modes=[0, 4], fast_math=True)


@pytest.mark.parametrize("lens", [[1], [1, 0, 16, 1, 33], [0, 5, 0], [15, 1, 17, 0]], ids=str)
def test_varlen_single_token_and_empty(lens):
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), 4, cu=cu, seed=23 + sum(lens))
    _run_modes(f"varlen {lens} H=4", inp, cu)


@pytest.mark.parametrize("N,H,most", [(4096, 1, 80), (4096, 8, 80), (1024, 32, 80), (70000, 1, 3)])
def test_many_sequences(N, H, most):
    """Serving batches: thousands of short sequences, one in eight empty, the rest 1-`most` tokens
    (issue 9: such calls used to hang in K2; past 65535 sequences K2's grid used to overflow)."""
    gen = torch.Generator().manual_seed(N + H)
    lens = torch.randint(1, most + 1, (N,), generator=gen)
    lens[torch.randint(0, 8, (N,), generator=gen) == 0] = 0
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)]).cuda()
    inp = _inputs(1, int(lens.sum()), H, cu=cu, seed=N * H)
    _run_modes(f"many sequences N={N} H={H}", inp, cu, modes=[0, 4, 5], spp=_api_spp(N, int(lens.sum()), H))


@pytest.fixture
def short_on(monkeypatch):
    """The short form switched on. A run with a path forced (KDA_TILE_CHUNK, _SPLIT, _SPP or
    _LONGEST_FIRST=1, as device_round.sh's forced matrix) has it off by design (api.path_forced):
    these tests skip there; the unforced run covers them."""
    from kda_tile import api
    if api.path_forced():
        pytest.skip("the short form is off while a KDA_TILE_* setting forces a path")
    monkeypatch.setattr(api, "SHORT", True)


def _chunks(longest):
    from kda_kernels import configs
    return 1 if longest <= configs.SHORT_TOKENS else configs.PAIRWISE_CHUNKS


@pytest.mark.parametrize("B,T,H,HV", [(3, 16, 2, 2), (2, 5, 3, 3), (1, 1, 1, 1), (4, 13, 8, 8), (3, 11, 2, 6),
                                      (64, 16, 32, 32), (7, 16, 1, 4),
                                      (3, 64, 2, 2), (2, 17, 3, 3), (4, 40, 8, 8), (3, 33, 2, 6), (64, 64, 32, 32),
                                      (5, 48, 1, 4)])
def test_short_fixed(B, T, H, HV, short_on):
    """The short form (fixed batches with T <= 16, or T <= 64 in the pairwise form; no initial
    state; sessions 33-34): every state mode (those with an initial state take K1 and K2), then
    fast_math, which takes the same builds."""
    inp = _inputs(B, T, H, seed=71 + B * T + H, HV=HV)
    _run_modes(f"short fixed B={B} T={T} H={H} HV={HV}", inp, None, short=_chunks(T))
    _run_modes(f"short fixed B={B} T={T} H={H} HV={HV} fast_math", inp, None, modes=[0, 3], fast_math=True,
               short=_chunks(T))


def _ragged(n, most, seed, empty_every=8):
    gen = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, most + 1, (n,), generator=gen)
    lens[torch.randint(0, empty_every, (n,), generator=gen) == 0] = 0
    return lens.tolist()


@pytest.mark.parametrize("lens,H,HV,max_seqlen", [
    ([1, 0, 16, 7, 16, 3], 4, 4, 16), ([0, 9, 16, 1, 0], 1, 4, 16), ([5, 9, 2], 2, 2, 9), ([0, 0, 1], 3, 3, 1),
    ("ragged500", 2, 2, 16), ("ragged4096", 8, 8, 16), ("ragged8192", 4, 4, 16),
    ([1, 0, 64, 17, 33, 16, 48], 4, 4, 64), ([0, 20, 64, 1, 0], 1, 4, 64), ([5, 9, 2], 2, 2, 40),
    ("ragged500", 2, 2, 64), ("ragged4096", 8, 8, 64), ("ragged2048", 32, 32, 64),
], ids=["mixed_H4", "gva_H1_HV4", "max9", "one_token", "ragged500", "ragged4096_H8", "ragged8192_H4",
        "pw_mixed_H4", "pw_gva_H1_HV4", "pw_max40_short_seqs", "pw_ragged500", "pw_ragged4096_H8",
        "pw_ragged2048_H32"])
def test_short_varlen(lens, H, HV, max_seqlen, short_on):
    """The short form of varlen calls (max_seqlen <= 16, or <= 64 in the pairwise form; no
    initial state): empty and one-token sequences, GVA, thousands of sequences (one in eight
    empty); every state mode."""
    if isinstance(lens, str):
        n = int(lens[len("ragged"):])
        lens = _ragged(n, max_seqlen, n + H)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), H, cu=cu, seed=79 + len(lens) + H, HV=HV)
    modes = range(len(STATE_MODES)) if len(lens) <= 500 else [0, 3, 4]
    _run_modes(f"short varlen n={len(lens)} H={H} HV={HV} max_seqlen={max_seqlen}", inp, cu, modes=modes,
               max_seqlen=max_seqlen, short=_chunks(max_seqlen))


@pytest.mark.parametrize("lens,max_seqlen", [([3, 40, 16, 0, 20, 1], 16), ([3, 70, 64, 0, 65, 17, 1], 64)])
def test_short_max_seqlen_broken(lens, max_seqlen, short_on):
    """A varlen call whose max_seqlen understates a sequence: that sequence's o rows and final
    state come back NaN, every other sequence's are right."""
    import kda_tile
    from kda_kernels import reference as R
    from kda_kernels.reference import rel_err
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), 2, cu=cu, seed=83)
    o, ht = kda_tile.kda_prefill(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                 dt_bias=inp["dt_bias"], lower_bound=inp["lower_bound"], output_final_state=True,
                                 cu_seqlens=cu, max_seqlen=max_seqlen)
    o_ref, ht_ref = R.kda_recurrent(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], gate_kind="safe",
                                    A_log=inp["A_log"], dt_bias=inp["dt_bias"], lower_bound=inp["lower_bound"],
                                    output_final_state=True, cu_seqlens=cu)
    bounds = cu.tolist()
    errs = []
    for n, ln in enumerate(lens):
        rows = slice(bounds[n], bounds[n + 1])
        if ln > max_seqlen:
            assert bool(torch.isnan(o[0, rows]).all()) and bool(torch.isnan(ht[n]).all()), (n, ln)
        else:
            assert not bool(torch.isnan(o[0, rows]).any()) and not bool(torch.isnan(ht[n]).any()), (n, ln)
            errs.append(rel_err(ht[n], ht_ref[n]))
            if ln:
                errs.append(rel_err(o[0, rows], o_ref[0, rows]))
    RESULTS.append(dict(case=f"short varlen {lens} max_seqlen={max_seqlen} (broken)", mode="out-f32",
                        fast_math=False, err_o=max(errs), err_ht=None, unwritten_or_nan=False, seconds=None,
                        split=False, spp=1, short=_chunks(max_seqlen)))
    _flush()
    assert max(errs) <= TOL, errs


def _api_spp(N, T, H):
    """The rule's choice, asserted to group the sequences at all."""
    from kda_kernels import configs
    spp = configs.use_spp(N, T, H)
    assert spp > 1, (N, T, H)
    return spp


@pytest.mark.parametrize("spp", [4, 8])
@pytest.mark.parametrize("lens", [[1], [1, 0, 16, 1, 33], [0, 5, 0], [15, 1, 17, 0, 0, 64, 3], [700, 1, 0, 300, 2],
                                  [3, 0, 0, 40, 16, 17, 1, 0, 90, 5, 33]], ids=str)
def test_spp_forced(lens, spp, monkeypatch):
    """K2 over `spp` sequences a program (configs.use_spp) forced on small ragged batches, every
    state mode: the last program's group is partial, empty and one-token sequences inside a group."""
    from kda_tile import api
    monkeypatch.setattr(api, "FORCE_SPP", spp)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), 3, cu=cu, seed=37 + sum(lens))
    _run_modes(f"spp{spp} forced varlen {lens} H=3", inp, cu, spp=spp)
    inp = _inputs(11, 77, 2, seed=41)
    _run_modes(f"spp{spp} forced fixed B=11 T=77 H=2", inp, None, spp=spp)


@pytest.mark.parametrize("lens", [[1300, 547, 2048, 963, 271, 3063], [1, 0, 16, 1, 33], [0, 5, 0],
                                  [100, 5000, 300, 2000, 736, 0, 1], [17] * 9 + [1000]], ids=str)
def test_longest_first_forced(lens, monkeypatch):
    """K2 longest first (session 28) forced on ragged batches, every state mode: (K1, k2_order,
    K2 through the order); empty and one-token sequences, ties in length, the longest last."""
    from kda_tile import api
    from kda_kernels import configs
    api.set_longest_first(True)
    try:
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
        inp = _inputs(1, sum(lens), 3, cu=cu, seed=53 + sum(lens))
        _run_modes(f"longest first forced varlen {lens} H=3", inp, cu, spp=configs.SPP_LONGEST_FIRST)
    finally:
        api.set_longest_first(None)


@pytest.mark.parametrize("B,T,H,HV,lens,fast", [
    (1, 1000, 96, 96, None, False),             # a tail chunk
    (2, 777, 48, 48, None, False),              # a fixed batch
    (1, None, 20, 20, [0, 1700, 1, 37, 2100], False),   # empty and one-token sequences among long ones
    (1, 1536, 16, 96, None, False),             # GVA
    (1, None, 33, 33, [1200, 0, 531], True),    # fast_math
], ids=["fixed_B1_T1000_H96", "fixed_B2_T777_H48", "varlen_H20", "gva_H16_HV96_T1536", "varlen_H33_fast"])
def test_two_consumers(B, T, H, HV, lens, fast):
    """32-token chunks with two consumers a K2 program (configs.use_two_consumers), chosen by the
    API's rule at each shape (asserted), every state mode."""
    from kda_kernels import configs
    _run_rule_form("two consumers", configs.TWO_CONSUMERS, 67, B, T, H, HV, lens, fast)


def _run_rule_form(label, form, seed, B, T, H, HV, lens, fast):
    """Every state mode at one shape whose 32-token K2 form the API's rule picks as `form` (asserted)."""
    from kda_tile import api
    cu = None if lens is None else torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()),
                                                dtype=torch.int64, device="cuda")
    inp = _inputs(B, T or sum(lens), H, cu=cu, seed=seed + (T or sum(lens)) + H + HV, HV=HV)
    assert api._plan(inp["q"], inp["v"], cu) == (False, 32, form)
    case = f"{label} B={B} T={T or sum(lens)} H={H} HV={HV} lens={lens}" + (" fast_math" if fast else "")
    _run_modes(case, inp, cu, fast_math=fast)


@pytest.mark.parametrize("B,T,H,HV,lens,fast", [
    (1, 1000, 32, 32, None, False),             # a tail chunk, 64 chains
    (2, 777, 16, 16, None, False),              # a fixed batch
    (1, None, 6, 6, [0, 1700, 1, 37, 2100], False),     # empty and one-token sequences among long ones
    (1, 1536, 4, 32, None, False),              # GVA
    (1, None, 10, 10, [1200, 0, 531], True),    # fast_math
    (1, 1000, 48, 48, None, False),             # 96 chains, the rule's bound
], ids=["fixed_B1_T1000_H32", "fixed_B2_T777_H16", "varlen_H6", "gva_H4_HV32_T1536", "varlen_H10_fast",
        "fixed_B1_T1000_H48"])
def test_one_consumer_vss(B, T, H, HV, lens, fast):
    """32-token chunks with one consumer a K2 program that reads v^T from its ring slot and Ab in
    bf16 halves from its K1 (configs.use_vss_one), chosen by the API's rule at each shape
    (asserted), every state mode."""
    from kda_kernels import configs
    _run_rule_form("one consumer v_ss", configs.VSS_ONE, 71, B, T, H, HV, lens, fast)


@pytest.mark.parametrize("n", [1023, 1024, 1025, 2000])
def test_longest_first_around_max_ranked(n):
    """Around k2_order's max_ranked (1024): ranked below and at it, the identity above; lengths
    0..40 drawn at random, so ties are common. No state and fp32 in and out."""
    from kda_tile import api
    from kda_kernels import configs
    api.set_longest_first(True)
    try:
        g = torch.Generator().manual_seed(n)
        lens = torch.randint(0, 41, (n,), generator=g).tolist()
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
        inp = _inputs(1, sum(lens), 1, cu=cu, seed=n)
        _run_modes(f"longest first forced varlen {n} seqs H=1", inp, cu, modes=(0, 4), spp=configs.SPP_LONGEST_FIRST)
    finally:
        api.set_longest_first(None)


# The sequence split (issue 9): chosen by the API's rule at these shapes (asserted), fixed and
# varlen, every state mode, T up to 1M; and forced on small and ragged batches (api.FORCE_SPLIT),
# where most segments past a sequence's end are empty.
@pytest.mark.parametrize("B,T,H", [(1, 65536, 8), (2, 16384, 2), (1, 8192, 1)])
def test_split_fixed(B, T, H):
    inp = _inputs(B, T, H, seed=B + T + H)
    _run_modes(f"split fixed B={B} T={T} H={H}", inp, None, split=True)


@pytest.mark.parametrize("lens,H", [([40000, 0, 1, 25000, 17], 2), ([9000, 7000, 16], 4)], ids=["n5", "n3"])
def test_split_varlen(lens, H):
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), H, cu=cu, seed=sum(lens) + H)
    _run_modes(f"split varlen {lens} H={H}", inp, cu, split=True)


def test_split_1m():
    inp = _inputs(1, 1 << 20, 1, seed=3)
    _run_modes("split fixed B=1 T=1048576 H=1", inp, None, modes=[0, 4], split=True, chunked=True)


@pytest.mark.parametrize("lens", [[1], [1, 0, 16, 1, 33], [0, 5, 0], [700, 1, 0, 300]], ids=str)
def test_split_forced(lens, monkeypatch):
    from kda_tile import api
    monkeypatch.setattr(api, "FORCE_SPLIT", True)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int64, device="cuda")
    inp = _inputs(1, sum(lens), 3, cu=cu, seed=29 + sum(lens))
    _run_modes(f"split forced varlen {lens} H=3", inp, cu, split=True)
    inp = _inputs(2, 333, 2, seed=31)
    _run_modes("split forced fixed B=2 T=333 H=2", inp, None, split=True)


# Time slabs (issue 13's memory point, kda_tile.slabs): one-sequence calls under a workspace limit
# small enough to cut them into several slabs, 16- and 32-token chunks and the split, every state
# mode, tails; then the peak device memory beyond inputs and outputs against the limit.
@pytest.mark.parametrize("T,H,limit_mb,cu", [(3000, 96, 64, False), (3000, 96, 64, True), (3500, 4, 4, True),
                                              (5000, 4, 4, False), (70001, 1, 12, False)],
                         ids=["16-fixed", "16-cu", "32-cu", "split-whole-32-slabs", "split"])
def test_slabs(T, H, limit_mb, cu):
    from kda_tile import api
    cu_t = torch.tensor([0, T], dtype=torch.int64, device="cuda") if cu else None
    inp = _inputs(1, T, H, cu=cu_t, seed=T + H + limit_mb)
    try:
        api.set_workspace_limit(limit_mb << 20)
        tokens = api._slab_rule(1, T, H)
        assert 0 < tokens < T, tokens
        _run_modes(f"slabs T={T} H={H} limit={limit_mb} MB ({tokens}-token slabs) cu={cu}", inp, cu_t,
                   chunked=T > 8192)
    finally:
        api.set_workspace_limit(None)


def _prefill_extra_memory(args, kw):
    """kda_prefill(*args, **kw) with the allocator's cache emptied first: (o, final state, peak
    device bytes beyond the inputs and those two outputs)."""
    import kda_tile
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    o, ht = kda_tile.kda_prefill(*args, **kw)
    torch.cuda.synchronize()
    return o, ht, torch.cuda.max_memory_allocated() - base - o.numel() * o.element_size() - ht.numel() * 4


# The slab pipeline (kda_tile.slabs.run_pipelined, forced on): K1 of slab j + 1 beside K2 of slab
# j on two streams, each slab's pair on one of two workspaces; 16- and 32-token chunks, fixed and
# cu_seqlens, tails, every state mode.
@pytest.mark.parametrize("T,H,cu", [(3000, 96, False), (3000, 96, True), (8192, 32, True), (4001, 4, False),
                                     (300, 1, True)], ids=["16-fixed", "16-cu", "32-cu", "32-fixed-tail", "2-slabs"])
def test_pipeline(T, H, cu):
    from kda_tile import api
    cu_t = torch.tensor([0, T], dtype=torch.int64, device="cuda") if cu else None
    inp = _inputs(1, T, H, cu=cu_t, seed=T + H + 7)
    try:
        api.set_pipeline(True)
        tokens = api._pipe_rule(1, T, H)
        assert 0 < tokens < T, tokens
        _run_modes(f"pipeline T={T} H={H} ({tokens}-token slabs) cu={cu}", inp, cu_t)
    finally:
        api.set_pipeline(None)


def test_pipeline_on_a_caller_stream():
    """Called from the caller's own stream, the pipeline leaves that stream current and its o and
    final state in that stream's order (read there with no synchronize), equal to the whole call's."""
    import kda_tile
    from kda_tile import api
    T, H = 32768, 32
    inp = _inputs(1, T, H, seed=T + H + 3)
    args = [inp[n] for n in ("q", "k", "v", "g", "beta")]
    kw = dict(A_log=inp["A_log"], dt_bias=inp["dt_bias"], initial_state=inp["h0"], output_final_state=True)
    try:
        api.set_pipeline(False)
        o_whole, ht_whole = kda_tile.kda_prefill(*args, **kw)
        api.set_pipeline(True)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            o, ht = kda_tile.kda_prefill(*args, **kw)
            assert torch.cuda.current_stream() == s
            same = torch.equal(o, o_whole) and torch.equal(ht, ht_whole)
        assert same
    finally:
        api.set_pipeline(None)


@pytest.mark.parametrize("T,H,limit_mb", [(32768, 32, None), (8192, 96, 64)])
def test_pipeline_whole_graph_memory(T, H, limit_mb):
    """The pipeline's o and final state equal the whole call's bit for bit (the same chunks; the
    state crosses slabs in fp32), eagerly and replayed from a CUDA graph; under a limit its peak
    memory beyond inputs and outputs stays under it."""
    import kda_tile
    from kda_tile import api
    inp = _inputs(1, T, H, seed=T + H + 1)
    args = [inp[n] for n in ("q", "k", "v", "g", "beta")]
    kw = dict(A_log=inp["A_log"], dt_bias=inp["dt_bias"], initial_state=inp["h0"], output_final_state=True)
    try:
        api.set_pipeline(False)     # the whole call, which the rule would pipeline at H32 1x32768
        o_whole, ht_whole = kda_tile.kda_prefill(*args, **kw)
        api.empty_cache()
        api.set_pipeline(True)
        api.set_workspace_limit(None if limit_mb is None else limit_mb << 20)
        assert api._pipe_rule(1, T, H) > 0
        o, ht, extra = _prefill_extra_memory(args, kw)
        assert torch.equal(o, o_whole) and torch.equal(ht, ht_whole)
        if limit_mb is not None:
            assert extra <= limit_mb << 20, extra / 2 ** 20
        o_g = torch.full_like(o, float("nan"))
        ht_g = torch.full_like(ht, float("nan"))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            kda_tile.kda_prefill(*args, **kw, out=o_g, final_state_out=ht_g)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(o_g, o_whole) and torch.equal(ht_g, ht_whole)
    finally:
        api.set_pipeline(None)
        api.set_workspace_limit(None)
        api.empty_cache()
    RESULTS.append(dict(case=f"pipeline whole/graph/memory T={T} H={H} limit={limit_mb}", extra_MB=extra / 2 ** 20,
                        bitwise=True))
    _flush()


@pytest.mark.parametrize("T,H", [(8192, 96), (1 << 20, 8)])
def test_slabs_memory(T, H):
    """The default headline shapes under a 64 MB limit: peak memory beyond inputs and outputs
    stays under it, and o equals the whole call's (the same chunks; the state crosses slabs in
    fp32). At 1M tokens the whole call splits and the slabs split differently: o within 1e-3."""
    import kda_tile
    from kda_kernels.reference import rel_err
    from kda_tile import api
    inp = _inputs(1, T, H, seed=T + H)
    args = [inp[n] for n in ("q", "k", "v", "g", "beta")]
    kw = dict(A_log=inp["A_log"], dt_bias=inp["dt_bias"], initial_state=inp["h0"], output_final_state=True)
    api.empty_cache()
    o_whole, ht_whole = kda_tile.kda_prefill(*args, **kw)
    api.empty_cache()
    try:
        api.set_workspace_limit(64 << 20)
        o, ht, extra = _prefill_extra_memory(args, kw)
    finally:
        api.set_workspace_limit(None)
        api.empty_cache()
    e_o, e_h = rel_err(o, o_whole), rel_err(ht, ht_whole)
    RESULTS.append(dict(case=f"slabs memory T={T} H={H}", extra_MB=extra / 2 ** 20, o_vs_whole=e_o, ht_vs_whole=e_h))
    _flush()
    assert extra <= 64 << 20, extra / 2 ** 20
    assert e_o <= (1e-3 if T > 65536 else 1e-6) and e_h <= (1e-3 if T > 65536 else 1e-6), (e_o, e_h)
