"""Checks of the float64 reference: the recurrence against a naive per-head loop written from
docs/math.md section 1, the chunked form against the recurrence, the K1 workspace, rel_err and
random_inputs."""
import math

import pytest
import torch
import torch.nn.functional as F

from kda_kernels.reference import (chunk_workspace, gate, kda_chunked, kda_decode, kda_pairwise, kda_recurrent,
                                kda_segmented, random_inputs,
                                rel_err, segment_maps)

TOL = 1e-10


def make_case(B=1, T=52, H=3, K=32, V=24, *, seed=0, gate_kind="safe", cu_seqlens=None,
              state_dtype=torch.float32, use_qk_l2norm=True, use_beta_sigmoid=True, scale=None,
              lower_bound=-5.0, dt_bias=True):
    x = random_inputs(B, T, H, K, V, seed=seed, cu_seqlens=cu_seqlens, state_dtype=state_dtype)
    gen = torch.Generator().manual_seed(seed + 1000)
    if gate_kind == "none":
        x["g"] = F.logsigmoid(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64))
    if not use_beta_sigmoid:
        x["beta"] = torch.rand(B, T, H, generator=gen, dtype=torch.float64)
    if not use_qk_l2norm:
        # Keep ||k|| near 1 so the un-normalized delta rule stays contractive.
        x["q"] = x["q"].double() / math.sqrt(K)
        x["k"] = x["k"].double() / math.sqrt(K)
    args = (x["q"], x["k"], x["v"], x["g"], x["beta"])
    kw = dict(gate_kind=gate_kind, A_log=x["A_log"], dt_bias=x["dt_bias"] if dt_bias else None,
              lower_bound=lower_bound, scale=scale, initial_state=x["initial_state"],
              output_final_state=True, cu_seqlens=x["cu_seqlens"], use_qk_l2norm=use_qk_l2norm,
              use_beta_sigmoid=use_beta_sigmoid)
    return args, kw


def naive(q, k, v, g, beta, *, gate_kind, A_log, dt_bias, lower_bound, scale, initial_state,
          output_final_state, cu_seqlens, use_qk_l2norm, use_beta_sigmoid):
    """docs/math.md section 1, one sequence, one head, one token at a time, S kept as K x V."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K ** -0.5 if scale is None else scale
    if cu_seqlens is None:
        seqs = [(b, 0, T) for b in range(B)]
    else:
        cu = cu_seqlens.tolist()
        seqs = [(0, cu[n], cu[n + 1]) for n in range(len(cu) - 1)]
    o = torch.zeros(B, T, H, V, dtype=torch.float64)
    final = torch.zeros(len(seqs), H, V, K, dtype=torch.float64)
    for n, (b, t0, t1) in enumerate(seqs):
        for h in range(H):
            if initial_state is None:
                S = torch.zeros(K, V, dtype=torch.float64)
            else:
                S = initial_state[n, h].double().T.clone()
            a = math.exp(float(A_log[h]))
            for t in range(t0, t1):
                qt, kt, vt = q[b, t, h].double(), k[b, t, h].double(), v[b, t, h].double()
                if use_qk_l2norm:
                    qt = qt / math.sqrt(float((qt * qt).sum()) + 1e-6)
                    kt = kt / math.sqrt(float((kt * kt).sum()) + 1e-6)
                bt = float(beta[b, t, h])
                if use_beta_sigmoid:
                    bt = 1.0 / (1.0 + math.exp(-bt))
                graw = g[b, t, h].double()
                if dt_bias is not None:
                    graw = graw + dt_bias[h].double()
                if gate_kind == "safe":
                    gt = lower_bound / (1.0 + torch.exp(-a * graw))
                elif gate_kind == "softplus":
                    gt = -a * torch.log(1.0 + torch.exp(graw))
                else:
                    gt = g[b, t, h].double()
                S = torch.exp(gt)[:, None] * S
                S = S + bt * torch.outer(kt, vt - S.T @ kt)
                o[b, t, h] = S.T @ (scale * qt)
            final[n, h] = S.T
    return o, final


NAIVE_CASES = {
    "safe-fixed-B2": dict(B=2, T=7, H=2, K=8, V=6),
    "softplus-varlen-bf16state": dict(T=13, H=2, K=8, V=6, gate_kind="softplus",
                                      cu_seqlens=[0, 1, 6, 13], state_dtype=torch.bfloat16),
    "none-plain-scale": dict(T=9, H=2, K=8, V=6, gate_kind="none", state_dtype=None,
                             use_qk_l2norm=False, use_beta_sigmoid=False, scale=0.3),
    "safe-lb2-nobias": dict(B=1, T=11, H=3, K=8, V=5, lower_bound=-2.0, dt_bias=False),
    "softplus-nobias-fixed": dict(B=2, T=5, H=1, K=6, V=7, gate_kind="softplus", dt_bias=False),
}


@pytest.mark.parametrize("case", NAIVE_CASES.values(), ids=NAIVE_CASES.keys())
def test_recurrent_matches_naive_loop(case):
    args, kw = make_case(**case)
    o_ref, s_ref = naive(*args, **kw)
    o, s = kda_recurrent(*args, **kw)
    assert o.dtype == torch.float64 and s.dtype == torch.float64
    assert o.shape == o_ref.shape and s.shape == s_ref.shape
    assert o_ref.norm() > 0.1 and s_ref.norm() > 0.1
    assert rel_err(o, o_ref) <= TOL
    assert rel_err(s, s_ref) <= TOL


CHUNK_CASES = {
    "safe": dict(),
    "softplus": dict(gate_kind="softplus"),
    "none": dict(gate_kind="none"),
    "beta-no-sigmoid": dict(use_beta_sigmoid=False),
    "no-l2norm": dict(use_qk_l2norm=False),
    "custom-scale": dict(scale=0.37),
    "lower-bound-1": dict(lower_bound=-1.0),
    "no-dt-bias": dict(gate_kind="softplus", dt_bias=False),
    "no-initial-state": dict(state_dtype=None),
    "bf16-initial-state": dict(state_dtype=torch.bfloat16),
    "fixed-B2-T37": dict(B=2, T=37),
    "fixed-B2-T37-softplus": dict(B=2, T=37, gate_kind="softplus"),
    "varlen-1-16-3-32": dict(T=52, cu_seqlens=[0, 1, 17, 20, 52]),
    "varlen-16-16-5": dict(T=37, cu_seqlens=[0, 16, 32, 37], gate_kind="softplus"),
    "varlen-one-seq": dict(T=37, cu_seqlens=[0, 37], state_dtype=None),
    "varlen-empty-seq": dict(T=21, cu_seqlens=[0, 5, 5, 21]),
    "T5": dict(B=2, T=5),
    "T16": dict(T=16),
    "T1": dict(T=1),
    "H1": dict(H=1, T=40),
    "K128-V128": dict(B=2, T=40, H=2, K=128, V=128),
}


@pytest.mark.parametrize("fn", [kda_chunked, kda_pairwise])
@pytest.mark.parametrize("case", CHUNK_CASES.values(), ids=CHUNK_CASES.keys())
def test_chunked_matches_recurrent(case, fn):
    args, kw = make_case(**case)
    o_ref, s_ref = kda_recurrent(*args, **kw)
    o, s = fn(*args, **kw)
    assert o.shape == o_ref.shape and s.shape == s_ref.shape
    assert o_ref.norm() > 0.1 and s_ref.norm() > 0.1
    assert rel_err(o, o_ref) <= TOL
    assert rel_err(s, s_ref) <= TOL


@pytest.mark.parametrize("fn", [kda_recurrent, kda_chunked, kda_pairwise])
def test_without_final_state(fn):
    args, kw = make_case(T=20)
    kw["output_final_state"] = False
    o, s = fn(*args, **kw)
    assert s is None and o.shape == (1, 20, 3, 24)


@pytest.mark.parametrize("fn", [kda_recurrent, kda_chunked, kda_pairwise])
def test_initial_state_and_sequence_boundaries_matter(fn):
    args, kw = make_case(T=52, cu_seqlens=[0, 1, 17, 20, 52])
    o, _ = fn(*args, **kw)
    o_zero, _ = fn(*args, **{**kw, "initial_state": None})
    assert rel_err(o_zero, o) > 1e-3
    # Packing the sequences as one stream must not give the same outputs.
    o_joined, _ = fn(*args, **{**kw, "cu_seqlens": torch.tensor([0, 52]),
                               "initial_state": kw["initial_state"][:1]})
    assert rel_err(o_joined[:, 17:], o[:, 17:]) > 1e-3


@pytest.mark.parametrize("fn", [kda_recurrent, kda_chunked, kda_pairwise])
def test_empty_sequence_keeps_its_state(fn):
    args, kw = make_case(T=21, cu_seqlens=[0, 5, 5, 21])
    _, s = fn(*args, **kw)
    assert torch.equal(s[1], kw["initial_state"][1].double())


def test_varlen_equals_separate_calls():
    args, kw = make_case(T=52, cu_seqlens=[0, 1, 17, 20, 52])
    o, s = kda_recurrent(*args, **kw)
    cu = kw["cu_seqlens"].tolist()
    for n in range(len(cu) - 1):
        piece = tuple(x[:, cu[n]:cu[n + 1]] for x in args)
        o_n, s_n = kda_recurrent(*piece, **{**kw, "cu_seqlens": None,
                                            "initial_state": kw["initial_state"][n:n + 1]})
        assert rel_err(o[:, cu[n]:cu[n + 1]], o_n) <= TOL
        assert rel_err(s[n:n + 1], s_n) <= TOL


def test_precomputed_gate_equals_activated_gate():
    args, kw = make_case(B=2, T=37)
    o, s = kda_chunked(*args, **kw)
    g = gate(args[3], kind="safe", A_log=kw["A_log"], dt_bias=kw["dt_bias"])
    o2, s2 = kda_recurrent(*args[:3], g, args[4], **{**kw, "gate_kind": "none"})
    assert rel_err(o2, o) <= TOL and rel_err(s2, s) <= TOL


def test_gate_values():
    H, K = 2, 3
    g_raw = torch.tensor([[[[-30.0, -1.0, 20.2], [0.5, 2.0, 40.0]]]])
    A_log = torch.tensor([0.0, math.log(4.0)])
    dt_bias = torch.tensor([[0.1, -0.2, 0.3], [0.0, 0.5, -1.0]])
    safe = gate(g_raw, kind="safe", A_log=A_log, dt_bias=dt_bias, lower_bound=-3.0)
    soft = gate(g_raw, kind="softplus", A_log=A_log, dt_bias=dt_bias)
    soft_nb = gate(g_raw, kind="softplus", A_log=A_log)
    none = gate(g_raw, kind="none")
    for h in range(H):
        a = math.exp(float(A_log[h]))
        for c in range(K):
            x = float(g_raw[0, 0, h, c]) + float(dt_bias[h, c])
            assert safe[0, 0, h, c].item() == pytest.approx(-3.0 / (1.0 + math.exp(-a * x)), rel=1e-14)
            assert soft[0, 0, h, c].item() == pytest.approx(-a * math.log1p(math.exp(x)), rel=1e-14)
            x0 = float(g_raw[0, 0, h, c])
            assert soft_nb[0, 0, h, c].item() == pytest.approx(-a * math.log1p(math.exp(x0)), rel=1e-14)
    assert ((safe < 0) & (safe >= -3.0)).all() and (soft < 0).all()
    assert none.dtype == torch.float64 and torch.equal(none, g_raw.double())
    with pytest.raises(ValueError):
        gate(g_raw, kind="sigmoid", A_log=A_log)
    with pytest.raises(ValueError):
        gate(g_raw, kind="safe")


@pytest.mark.parametrize("cu", [None, [0, 1, 17, 20, 52], [0, 16, 32, 37]])
def test_workspace_reassembles_the_recurrence(cu):
    T = 37 if cu is None or cu[-1] == 37 else cu[-1]
    B = 2 if cu is None else 1
    args, kw = make_case(B=B, T=T, H=2, K=16, V=12, gate_kind="softplus", cu_seqlens=cu)
    o_ref, s_ref = kda_recurrent(*args, **kw)
    ws = chunk_workspace(*args[:5], **{k_: v_ for k_, v_ in kw.items()
                                       if k_ not in ("initial_state", "output_final_state")})
    C = 16
    lens = [T] * B if cu is None else [cu[n + 1] - cu[n] for n in range(len(cu) - 1)]
    NS = sum(-(-n // C) for n in lens)
    assert ws["Wk"].shape == (2, NS * C, 16) and ws["U0"].shape == (2, NS * C, 12)
    assert ws["Mqk"].shape == (2, NS * C, C)
    assert ws["gC"].shape == (2, NS, 16)
    # A K2-style pass over the workspace, slot by slot (the WY form: U = U0 - Wk S).
    o = torch.zeros(B * T, 2, 12, dtype=torch.float64)
    S = kw["initial_state"].double().transpose(-1, -2).clone()  # [N, H, K, V]
    for s in range(NS):
        n, t0, ln = (int(ws[x][s]) for x in ("slot_seq", "slot_t0", "slot_len"))
        rows = slice(s * C, (s + 1) * C)
        pad = ln < C
        if pad:
            for name in ("Wk", "qd", "kr", "U0", "Mqk"):
                assert torch.count_nonzero(ws[name][:, s * C + ln:(s + 1) * C]) == 0
        U = ws["U0"][:, rows] - ws["Wk"][:, rows] @ S[n]
        out = ws["qd"][:, rows] @ S[n] + ws["Mqk"][:, rows] @ U
        S[n] = ws["gC"][:, s].unsqueeze(-1) * S[n] + ws["kr"][:, rows].transpose(-1, -2) @ U
        o[t0:t0 + ln] = out[:, :ln].transpose(0, 1)
    assert rel_err(o.reshape(B, T, 2, 12), o_ref) <= TOL
    assert rel_err(S.transpose(-1, -2), s_ref) <= TOL


def test_rel_err():
    ref = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    assert rel_err(ref, ref) == 0.0
    out = ref.clone()
    out[1, 2] += 1e-3
    assert rel_err(out, ref) == pytest.approx(1e-3 / ref.norm().item(), rel=1e-6)
    assert not rel_err(out, ref) <= 1e-6
    assert rel_err(out.float(), ref) == pytest.approx(rel_err(out, ref), rel=1e-4)
    nan = ref.clone()
    nan[0, 0] = float("nan")
    assert not rel_err(nan, ref) <= 1.0
    assert not rel_err(ref, nan) <= 1.0
    inf = ref.clone()
    inf[3, 4] = float("inf")
    assert not rel_err(inf, ref) <= 1.0
    assert not rel_err(inf, inf) <= 1.0
    zero = torch.zeros(4, 5)
    assert rel_err(zero, zero) == 0.0
    assert rel_err(ref, zero) == pytest.approx(ref.norm().item())
    with pytest.raises(ValueError):
        rel_err(ref, ref[:2])


def test_random_inputs():
    x = random_inputs(2, 9, 3, 16, 12, seed=7, state_dtype=torch.float32)
    shapes = {"q": (2, 9, 3, 16), "k": (2, 9, 3, 16), "g": (2, 9, 3, 16), "v": (2, 9, 3, 12),
              "beta": (2, 9, 3), "A_log": (3,), "dt_bias": (3, 16), "initial_state": (2, 3, 12, 16)}
    for name, shape in shapes.items():
        assert x[name].shape == shape, name
        assert torch.count_nonzero(x[name]) > 0.9 * x[name].numel(), name
    for name in ("q", "k", "v", "g", "beta"):
        assert x[name].dtype == torch.bfloat16
    assert x["A_log"].dtype == torch.float32 and x["dt_bias"].dtype == torch.float32
    assert x["initial_state"].dtype == torch.float32 and x["cu_seqlens"] is None
    assert (x["A_log"] >= 0).all() and (x["A_log"] <= math.log(16.0)).all()
    y = random_inputs(2, 9, 3, 16, 12, seed=7, state_dtype=torch.float32)
    z = random_inputs(2, 9, 3, 16, 12, seed=8, state_dtype=torch.float32)
    w = random_inputs(2, 9, 3, 16, 12)
    assert all(torch.equal(x[n], y[n]) for n in shapes)
    assert not torch.equal(x["q"], z["q"]) and not torch.equal(x["q"], w["q"])
    assert not torch.equal(x["q"], x["k"])
    assert w["initial_state"] is None
    v = random_inputs(1, 20, 2, 8, 8, cu_seqlens=[0, 3, 20], state_dtype=torch.bfloat16,
                      generator=torch.Generator().manual_seed(1))
    assert v["initial_state"].shape == (2, 2, 8, 8) and v["initial_state"].dtype == torch.bfloat16
    assert v["cu_seqlens"].dtype == torch.int64 and v["cu_seqlens"].tolist() == [0, 3, 20]
    with pytest.raises(ValueError):
        random_inputs(2, 20, 2, 8, 8, cu_seqlens=[0, 3, 20])


def test_rejects_bad_shapes():
    args, kw = make_case(B=2, T=10)
    with pytest.raises(ValueError):
        kda_recurrent(*args, **{**kw, "cu_seqlens": torch.tensor([0, 4, 10])})
    with pytest.raises(ValueError):
        kda_chunked(*args, **{**kw, "initial_state": kw["initial_state"].transpose(-1, -2)})
    args, kw = make_case(T=10, cu_seqlens=[0, 4, 10])
    with pytest.raises(ValueError):
        kda_chunked(*args, **{**kw, "cu_seqlens": torch.tensor([0, 4, 9])})


@pytest.mark.gpu
def test_cuda_matches_cpu():
    args, kw = make_case(T=52, H=4, K=64, V=48, cu_seqlens=[0, 1, 17, 20, 52])
    o_cpu, s_cpu = kda_recurrent(*args, **kw)
    dev = torch.device("cuda")
    to = lambda x: x.to(dev) if isinstance(x, torch.Tensor) else x  # noqa: E731
    args_d = tuple(to(x) for x in args)
    kw_d = {k_: to(v_) for k_, v_ in kw.items()}
    for fn in (kda_recurrent, kda_chunked):
        o, s = fn(*args_d, **kw_d)
        assert o.device.type == "cuda" and s.device.type == "cuda"
        assert rel_err(o, o_cpu) <= TOL and rel_err(s, s_cpu) <= TOL
    ws = chunk_workspace(*args_d[:5], A_log=kw_d["A_log"], dt_bias=kw_d["dt_bias"], cu_seqlens=kw_d["cu_seqlens"])
    assert ws["Wk"].device.type == "cuda"
    x = random_inputs(1, 64, 2, device="cuda", seed=0, state_dtype=torch.float32)
    assert all(t.device.type == "cuda" for t in x.values() if isinstance(t, torch.Tensor))


@pytest.mark.parametrize("segment_chunks", [1, 2, 5])
@pytest.mark.parametrize("cu", [None, [0, 1, 1, 17, 40, 100, 137]], ids=["fixed", "varlen"])
@pytest.mark.parametrize("state", [None, torch.float32], ids=["h0none", "h0f32"])
def test_sequence_split_equals_recurrence(segment_chunks, cu, state):
    B, T = (2, 90) if cu is None else (1, cu[-1])
    args, kw = make_case(B=B, T=T, H=2, K=16, V=12, seed=5 + segment_chunks, state_dtype=state,
                         cu_seqlens=None if cu is None else torch.tensor(cu))
    o_ref, s_ref = kda_recurrent(*args, **kw)
    o, s = kda_segmented(*args, segment_chunks=segment_chunks, **kw)
    assert rel_err(o, o_ref) <= TOL and rel_err(s, s_ref) <= TOL


def test_segment_maps_move_any_start_state():
    """M and B are the segment's whole effect: from any start state, M S + B is the end state."""
    args, kw = make_case(B=1, T=70, H=2, K=16, V=12, seed=9, state_dtype=None)
    kw.pop("initial_state"), kw.pop("output_final_state")
    M, Bm, owner, counts = segment_maps(*args, segment_chunks=2, **kw)
    assert counts == [3] and owner == [0, 0, 0] and M.shape == (3, 2, 16, 16) and Bm.shape == (3, 2, 16, 12)
    S0 = torch.randn(1, 2, 12, 16, dtype=torch.float64)  # [N, H, V, K]: S^T
    _, s_ref = kda_recurrent(*args, initial_state=S0, output_final_state=True, **kw)
    S = S0[0].transpose(-1, -2)
    for i in range(3):
        S = M[i] @ S + Bm[i]
    assert rel_err(S.transpose(-1, -2), s_ref[0]) <= TOL


def gva_case(G=3, B=1, T=45, H=2, K=16, V=8, seed=21, cu=None):
    """GVA inputs: H q/k heads, H*G value heads (g, v, beta, state, A_log, dt_bias)."""
    gen = torch.Generator().manual_seed(seed)
    HV = H * G
    N = B if cu is None else len(cu) - 1
    x = dict(q=torch.randn(B, T, H, K, generator=gen, dtype=torch.float64),
             k=torch.randn(B, T, H, K, generator=gen, dtype=torch.float64),
             v=torch.randn(B, T, HV, V, generator=gen, dtype=torch.float64),
             g=torch.randn(B, T, HV, K, generator=gen, dtype=torch.float64),
             beta=torch.randn(B, T, HV, generator=gen, dtype=torch.float64))
    kw = dict(A_log=torch.rand(HV, generator=gen, dtype=torch.float64), dt_bias=torch.randn(HV, K, generator=gen,
              dtype=torch.float64) * 0.3, initial_state=torch.randn(N, HV, V, K, generator=gen, dtype=torch.float64),
              output_final_state=True, cu_seqlens=None if cu is None else torch.tensor(cu))
    return x, kw


@pytest.mark.parametrize("cu", [None, [0, 1, 20, 45]], ids=["fixed", "varlen"])
def test_gva_is_each_qk_head_repeated_over_its_value_heads(cu):
    x, kw = gva_case(cu=cu)
    o, ht = kda_recurrent(x["q"], x["k"], x["v"], x["g"], x["beta"], **kw)
    G = x["v"].shape[2] // x["q"].shape[2]
    q, k = (x[n].repeat_interleave(G, dim=2) for n in ("q", "k"))
    o_rep, ht_rep = kda_recurrent(q, k, x["v"], x["g"], x["beta"], **kw)
    assert rel_err(o, o_rep) <= TOL and rel_err(ht, ht_rep) <= TOL
    for fn in (kda_chunked, lambda *a, **k: kda_segmented(*a, segment_chunks=1, **k)):
        o_c, ht_c = fn(x["q"], x["k"], x["v"], x["g"], x["beta"], **kw)
        assert rel_err(o_c, o) <= TOL and rel_err(ht_c, ht) <= TOL


def test_gva_rejects_value_heads_not_a_multiple():
    x, kw = gva_case(G=3, H=2)  # 6 value heads; keep 5
    kw.update(A_log=kw["A_log"][:5], dt_bias=kw["dt_bias"][:5], initial_state=kw["initial_state"][:, :5])
    with pytest.raises(ValueError, match="HV a multiple"):
        kda_recurrent(x["q"], x["k"], x["v"][:, :, :5], x["g"][:, :, :5], x["beta"][:, :, :5], **kw)


@pytest.mark.parametrize("G", [1, 2])
def test_prefill_then_decode_equals_prefill(G):
    """Prefill of T tokens == prefill of T - 1 tokens, then one decode step from the pool."""
    x, kw = gva_case(G=G, B=3, T=30, H=2, seed=31)
    args = [x[n] for n in ("q", "k", "v", "g", "beta")]
    o_full, ht_full = kda_recurrent(*args, **kw)
    o_pre, ht_pre = kda_recurrent(*[a[:, :-1] for a in args], **kw)
    pool = torch.randn(7, *ht_pre.shape[1:], dtype=torch.float64)
    slots = torch.tensor([5, 0, 3])
    pool[slots] = ht_pre
    act = {n: kw[n] for n in ("A_log", "dt_bias")}
    o_dec, pool_after = kda_decode(*[a[:, -1] for a in args], state_pool=pool, state_indices=slots, **act)
    assert rel_err(o_dec, o_full[:, -1]) <= TOL
    assert rel_err(pool_after[slots], ht_full) <= TOL
    others = torch.tensor([1, 2, 4, 6])
    assert torch.equal(pool_after[others], pool[others])


def test_decode_several_tokens_and_padded_slots():
    x, kw = gva_case(G=2, B=4, T=3, H=1, seed=41)  # S = 3 tokens per sequence (speculative decoding)
    args = [x[n] for n in ("q", "k", "v", "g", "beta")]
    pool = torch.randn(6, 2, x["v"].shape[-1], x["q"].shape[-1], dtype=torch.float64)
    slots = torch.tensor([2, -1, 4, -1])
    act = {n: kw[n] for n in ("A_log", "dt_bias")}
    o, pool_after = kda_decode(*args, state_pool=pool, state_indices=slots, **act)
    live = torch.tensor([0, 2])
    o_ref, ht_ref = kda_recurrent(*[a[live] for a in args], initial_state=pool[slots[live]], output_final_state=True,
                                  **act)
    assert rel_err(o[live], o_ref) <= TOL and rel_err(pool_after[slots[live]], ht_ref) <= TOL
    assert torch.count_nonzero(o[torch.tensor([1, 3])]) == 0
    untouched = torch.tensor([0, 1, 3, 5])
    assert torch.equal(pool_after[untouched], pool[untouched])
    with pytest.raises(ValueError, match="distinct"):
        kda_decode(*args, state_pool=pool, state_indices=torch.tensor([2, 2, -1, -1]), **act)
    with pytest.raises(ValueError, match="distinct"):
        kda_decode(*args, state_pool=pool, state_indices=torch.tensor([6, 0, -1, -1]), **act)


def test_rel_err_in_blocks_matches_the_whole_norm():
    """rel_err takes its float64 copies a block at a time (70000 fp32 states do not fit an 80 GB
    card twice over): the value, NaN before inf, and the zero reference keep their meaning."""
    import math

    from kda_kernels.reference import rel_err
    g = torch.Generator().manual_seed(3)
    a = torch.randn(1000, 37, generator=g)
    b = a + 1e-3 * torch.randn(1000, 37, generator=g)
    whole = float(torch.linalg.vector_norm((a - b).double()) / torch.linalg.vector_norm(b.double()))
    for block in (1 << 24, 100, 7):
        assert abs(rel_err(a, b, block=block) - whole) <= 1e-9 * whole
    c = b.clone()
    c[999, 36] = float("inf")
    assert rel_err(a, c, block=100) == math.inf
    c[0, 0] = float("nan")
    assert math.isnan(rel_err(a, c, block=100))
    assert abs(rel_err(a, torch.zeros_like(a), block=64) - float(torch.linalg.vector_norm(a.double()))) < 1e-9
