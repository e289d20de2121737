"""Float64 reference for the KDA forward (docs/math.md sections 1 and 2).

Pure torch, on whatever device the inputs live; everything is computed in float64.

- `gate`            the per-channel natural-log decay g for the three gate kinds.
- `kda_recurrent`   the exact token-by-token recurrence: the ground truth.
- `kda_chunked`     the chunked algorithm (C = 16) the kernels implement.
- `kda_pairwise`    the chunked algorithm with no state between chunks (a short-sequence form).
- `kda_decode`      one (or a few) tokens per sequence against a state pool, as serving calls it.
- `segment_maps`    the sequence split's pass A: each segment's affine map S_end = M S_start + B.
- `kda_segmented`   the sequence split: pass A, an fp64 scan over segments, pass C.
- `chunk_workspace` the per-chunk quantities K1 writes (Wk, qd, kr, U0, Mqk, gC), in K1's layout.
- `rel_err`         ||out - ref|| / ||ref||, the project's accuracy measure.
- `random_inputs`   random test inputs in the kernel's dtypes.

Layouts: q, k [B, T, H, K]; g [B, T, HV, K]; v, o [B, T, HV, V]; beta [B, T, HV]; states
[N, HV, V, K] (V-major: S^T is stored). HV = H without GVA; with GVA (HV a multiple of H) every
HV / H value heads share one q/k head. Internally the state is held as S [N*HV, K, V].
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

F64 = torch.float64
CHUNK = 16
GATE_KINDS = ("safe", "softplus", "none")


def _softplus(x: torch.Tensor) -> torch.Tensor:
    # Exact for all x, unlike torch's thresholded softplus (off by ~2e-9 past x = 20).
    return x.clamp_min(0) + torch.log1p(torch.exp(-x.abs()))


def gate(g_raw, *, kind, A_log=None, dt_bias=None, lower_bound=-5.0):
    """Per-channel natural-log decay g [..., H, K] in float64 from the raw gate input."""
    x = g_raw.to(F64)
    if kind == "none":
        return x
    if kind not in GATE_KINDS:
        raise ValueError(f"unknown gate kind {kind!r}; expected one of {GATE_KINDS}")
    if A_log is None:
        raise ValueError(f"gate kind {kind!r} needs A_log")
    H, K = x.shape[-2], x.shape[-1]
    a = torch.exp(A_log.to(device=x.device, dtype=F64)).reshape(H, 1)
    if dt_bias is not None:
        x = x + dt_bias.to(device=x.device, dtype=F64).reshape(H, K)
    if kind == "safe":
        return lower_bound * torch.sigmoid(a * x)
    return -a * _softplus(x)


def _l2norm(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


@dataclass
class _Tokens:
    """Activated inputs, flattened over (B, T) to rows, plus one neutral row at index `dummy`
    (q = k = v = 0, g = 0, beta = 0) that leaves the state unchanged and absorbs padded outputs."""
    q: torch.Tensor  # [R+1, H, K], normalized and scaled
    k: torch.Tensor  # [R+1, H, K], normalized
    v: torch.Tensor | None  # [R+1, H, V]
    g: torch.Tensor  # [R+1, H, K], natural-log decay
    beta: torch.Tensor  # [R+1, H]
    starts: torch.Tensor  # [N] int64, first row of each sequence
    lens: torch.Tensor  # [N] int64
    max_len: int
    B: int
    T: int
    H: int
    K: int
    N: int
    dummy: int


def _tokens(q, k, v, g, beta, *, gate_kind, A_log, dt_bias, lower_bound, scale, cu_seqlens,
            use_qk_l2norm, use_beta_sigmoid) -> _Tokens:
    if q.dim() != 4:
        raise ValueError(f"q must be [B, T, H, K], got {tuple(q.shape)}")
    B, T, Hq, K = q.shape
    dev = q.device
    if k.shape != q.shape:
        raise ValueError(f"q, k must share shape [B, T, H, K]; got {tuple(q.shape)}, {tuple(k.shape)}")
    # GVA: g, v, beta (and the state) have HV heads; every HV / H of them share one q/k head.
    if g.dim() != 4 or g.shape[:2] != q.shape[:2] or g.shape[-1] != K or g.shape[2] % Hq:
        raise ValueError(f"g must be [B, T, HV, K] with HV a multiple of H = {Hq}, got {tuple(g.shape)}")
    H = g.shape[2]
    if v is not None and (v.dim() != 4 or v.shape[:3] != g.shape[:3]):
        raise ValueError(f"v must be [B, T, HV, V] = [{B}, {T}, {H}, V], got {tuple(v.shape)}")
    if beta.shape != g.shape[:3]:
        raise ValueError(f"beta must be [B, T, HV] = {tuple(g.shape[:3])}, got {tuple(beta.shape)}")

    qf, kf = q.to(F64), k.to(F64)
    if use_qk_l2norm:
        qf, kf = _l2norm(qf), _l2norm(kf)
    qf = qf * (K ** -0.5 if scale is None else float(scale))
    if H != Hq:
        qf, kf = qf.repeat_interleave(H // Hq, dim=2), kf.repeat_interleave(H // Hq, dim=2)
    gf = gate(g, kind=gate_kind, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound)
    bf = beta.to(F64)
    if use_beta_sigmoid:
        bf = torch.sigmoid(bf)

    def rows(x):
        x = x.reshape(B * T, *x.shape[2:])
        return torch.cat([x, x.new_zeros((1, *x.shape[1:]))])

    if cu_seqlens is None:
        N = B
        starts = torch.arange(B, device=dev, dtype=torch.int64) * T
        lens = torch.full((B,), T, device=dev, dtype=torch.int64)
    else:
        cu = torch.as_tensor(cu_seqlens, device=dev).to(torch.int64)
        if B != 1:
            raise ValueError(f"cu_seqlens needs B == 1, got B = {B}")
        if cu.dim() != 1 or cu.numel() < 2:
            raise ValueError("cu_seqlens must be 1-D with at least two entries")
        lens = cu[1:] - cu[:-1]
        if int(cu[0]) != 0 or int(cu[-1]) != T or bool((lens < 0).any()):
            raise ValueError(f"cu_seqlens must rise from 0 to T = {T}, got {cu.tolist()}")
        N = cu.numel() - 1
        starts = cu[:-1]
    max_len = int(lens.max()) if N > 0 else 0
    return _Tokens(rows(qf), rows(kf), None if v is None else rows(v.to(F64)), rows(gf), rows(bf),
                   starts, lens, max_len, B, T, H, K, N, B * T)


def _initial_state(initial_state, N, H, K, V, device) -> torch.Tensor:
    if initial_state is None:
        return torch.zeros(N * H, K, V, dtype=F64, device=device)
    if tuple(initial_state.shape) != (N, H, V, K):
        raise ValueError(f"initial_state must be [N, H, V, K] = {(N, H, V, K)}, got {tuple(initial_state.shape)}")
    return initial_state.to(device=device, dtype=F64).transpose(-1, -2).reshape(N * H, K, V).clone()


def _final_state(S, N, H, K, V):
    return S.reshape(N, H, K, V).transpose(-1, -2).contiguous()


def kda_recurrent(q, k, v, g, beta, *, gate_kind="safe", A_log=None, dt_bias=None, lower_bound=-5.0,
                  scale=None, initial_state=None, output_final_state=False, cu_seqlens=None,
                  use_qk_l2norm=True, use_beta_sigmoid=True):
    """The exact recurrence, one token at a time for all sequences and heads at once.

    Returns (o [B, T, H, V] float64, final_state [N, H, V, K] float64 or None)."""
    tk = _tokens(q, k, v, g, beta, gate_kind=gate_kind, A_log=A_log, dt_bias=dt_bias,
                 lower_bound=lower_bound, scale=scale, cu_seqlens=cu_seqlens,
                 use_qk_l2norm=use_qk_l2norm, use_beta_sigmoid=use_beta_sigmoid)
    N, H, K, V = tk.N, tk.H, tk.K, v.shape[-1]
    S = _initial_state(initial_state, N, H, K, V, q.device)
    decay = torch.exp(tk.g)
    o = torch.zeros(tk.dummy + 1, H, V, dtype=F64, device=q.device)
    for i in range(tk.max_len):
        idx = torch.where(tk.lens > i, tk.starts + i, tk.dummy)
        q_t = tk.q.index_select(0, idx).reshape(N * H, 1, K)
        k_t = tk.k.index_select(0, idx).reshape(N * H, 1, K)
        v_t = tk.v.index_select(0, idx).reshape(N * H, 1, V)
        b_t = tk.beta.index_select(0, idx).reshape(N * H, 1, 1)
        d_t = decay.index_select(0, idx).reshape(N * H, K, 1)
        S.mul_(d_t)
        u_t = b_t * (v_t - torch.bmm(k_t, S))
        S.baddbmm_(k_t.transpose(1, 2), u_t)
        o.index_copy_(0, idx, torch.bmm(q_t, S).reshape(N, H, V))
    o = o[:tk.dummy].reshape(tk.B, tk.T, H, V)
    return o, (_final_state(S, N, H, K, V) if output_final_state else None)


def _unit_lower_inverse(L: torch.Tensor) -> torch.Tensor:
    """(I + L)^-1 for strictly lower L of size C <= 16, as (I - L)(I + L^2)(I + L^4)(I + L^8)."""
    C = L.shape[-1]
    if C > 16:
        raise ValueError("the four-factor inverse is exact only for C <= 16")
    eye = torch.eye(C, dtype=L.dtype, device=L.device)
    L2 = L @ L
    L4 = L2 @ L2
    L8 = L4 @ L4
    return (eye - L) @ (eye + L2) @ (eye + L4) @ (eye + L8)


def _chunk_prepare(q, k, g, beta):
    """The state-independent part of a chunk (K1's work), over any leading batch dims.

    q (normalized and scaled), k, g: [..., C, K]; beta: [..., C]. Pad rows carry g = 0, k = 0,
    beta = 0. Returns kd, qd, kr [..., C, K], gC [..., K], L, A, Mqk [..., C, C]."""
    C = g.shape[-2]
    G = g.cumsum(-2)
    GC = G[..., -1:, :]
    eG = torch.exp(G)
    kd = k * eG
    qd = q * eG
    kr = k * torch.exp(GC - G)
    # (kd ki^T)[r, j] = sum_k k_r k_j exp(G_r - G_j); formed from the difference so that no
    # exp(-G) is ever built: a softplus or precomputed gate can make it overflow float64.
    incl = torch.ones(C, C, dtype=torch.bool, device=g.device).tril()
    D = (G.unsqueeze(-2) - G.unsqueeze(-3)).masked_fill(~incl.unsqueeze(-1), -math.inf)
    E = torch.exp(D)  # [..., r, j, K], zero above the diagonal
    kki = (k.unsqueeze(-2) * k.unsqueeze(-3) * E).sum(-1)
    Mqk = (q.unsqueeze(-2) * k.unsqueeze(-3) * E).sum(-1)
    L = kki.tril(-1) * beta.unsqueeze(-1)
    A = _unit_lower_inverse(L)
    return kd, qd, kr, torch.exp(GC.squeeze(-2)), L, A, Mqk


def _chunk_rows(tk, C):
    """(chunk count, row index [N, chunks, C] with the dummy row past each sequence's end, and
    take(x, c): chunk c of every sequence's rows of x as [N * H, C, ...])."""
    N, H = tk.N, tk.H
    n_chunks = -(-tk.max_len // C)
    pos = torch.arange(n_chunks * C, device=tk.lens.device, dtype=torch.int64)
    idx = torch.where(pos < tk.lens[:, None], tk.starts[:, None] + pos, tk.dummy).reshape(N, n_chunks, C)

    def take(x, c):
        rows = x.index_select(0, idx[:, c].reshape(-1))  # [N*C, H, ...]
        return rows.reshape(N, C, H, *x.shape[2:]).transpose(1, 2).reshape(N * H, C, *x.shape[2:])
    return n_chunks, idx, take


def kda_chunked(q, k, v, g, beta, *, gate_kind="safe", A_log=None, dt_bias=None, lower_bound=-5.0,
                scale=None, initial_state=None, output_final_state=False, cu_seqlens=None,
                use_qk_l2norm=True, use_beta_sigmoid=True, chunk=CHUNK):
    """The chunked algorithm of docs/math.md section 2, sequential over chunks, all sequences and
    heads at once. Same arguments and results as `kda_recurrent`."""
    tk = _tokens(q, k, v, g, beta, gate_kind=gate_kind, A_log=A_log, dt_bias=dt_bias,
                 lower_bound=lower_bound, scale=scale, cu_seqlens=cu_seqlens,
                 use_qk_l2norm=use_qk_l2norm, use_beta_sigmoid=use_beta_sigmoid)
    N, H, K, V, C = tk.N, tk.H, tk.K, v.shape[-1], chunk
    dev = q.device
    S = _initial_state(initial_state, N, H, K, V, dev)
    o = torch.zeros(tk.dummy + 1, H, V, dtype=F64, device=dev)
    n_chunks, idx, take = _chunk_rows(tk, C)

    for c in range(n_chunks):
        b_c = take(tk.beta, c)
        kd, qd, kr, gC, _, A, Mqk = _chunk_prepare(take(tk.q, c), take(tk.k, c), take(tk.g, c), b_c)
        W = b_c.unsqueeze(-1) * (take(tk.v, c) - kd @ S)
        U = A @ W
        out = qd @ S + Mqk @ U
        S = gC.unsqueeze(-1) * S + kr.transpose(-1, -2) @ U
        out = out.reshape(N, H, C, V).transpose(1, 2).reshape(N * C, H, V)
        o.index_copy_(0, idx[:, c].reshape(-1), out)
    o = o[:tk.dummy].reshape(tk.B, tk.T, H, V)
    return o, (_final_state(S, N, H, K, V) if output_final_state else None)


def kda_pairwise(q, k, v, g, beta, *, gate_kind="safe", A_log=None, dt_bias=None, lower_bound=-5.0,
                 scale=None, initial_state=None, output_final_state=False, cu_seqlens=None,
                 use_qk_l2norm=True, use_beta_sigmoid=True, chunk=CHUNK):
    """The chunked algorithm with no state between chunks: the form of a short-sequence kernel
    (one program a sequence and head, every chunk's K1 work in it, no workspace). Same arguments
    and results as `kda_recurrent`; the work grows as the square of the chunk count.

    With Wk_j = A_j diag(beta_j) kd_j, U0_j = A_j diag(beta_j) v_j and, for i < j,
    gam_ij = prod_{i < m < j} gC_m (per channel, <= 1; gam_init,j = prod_{m < j} gC_m):

        S_{j-1} = gam_init,j S0 + sum_{i<j} (kr_i gam_ij)^T U_i
        U_j     = U0_j - (Wk_j gam_init,j) S0 - sum_{i<j} P_ji U_i,    P_ji = Wk_j diag(gam_ij) kr_i^T
        o_j     = (qd_j gam_init,j) S0 + sum_{i<j} Q_ji U_i + Mqk_j U_j,  Q_ji = qd_j diag(gam_ij) kr_i^T

    so every product is C x K x C or C x C x V, and S0 and the final state S_n enter only where the
    caller passes or asks for them. Every operand is a K1 output scaled by factors <= 1."""
    tk = _tokens(q, k, v, g, beta, gate_kind=gate_kind, A_log=A_log, dt_bias=dt_bias,
                 lower_bound=lower_bound, scale=scale, cu_seqlens=cu_seqlens,
                 use_qk_l2norm=use_qk_l2norm, use_beta_sigmoid=use_beta_sigmoid)
    N, H, K, V, C = tk.N, tk.H, tk.K, v.shape[-1], chunk
    dev = q.device
    S0 = None if initial_state is None else _initial_state(initial_state, N, H, K, V, dev)
    o = torch.zeros(tk.dummy + 1, H, V, dtype=F64, device=dev)
    n_chunks, idx, take = _chunk_rows(tk, C)

    prep = []
    for c in range(n_chunks):
        b_c = take(tk.beta, c)
        kd, qd, kr, gC, _, A, Mqk = _chunk_prepare(take(tk.q, c), take(tk.k, c), take(tk.g, c), b_c)
        Ab = A * b_c.unsqueeze(-2)
        prep.append((Ab @ kd, qd, kr, gC, Mqk, Ab @ take(tk.v, c)))
    U = []
    for j, (Wk, qd, kr, gC, Mqk, U0) in enumerate(prep):
        Uj, oj = U0.clone(), torch.zeros_like(U0)
        gam = torch.ones_like(gC)                 # gam_ij for i = j - 1, j - 2, ..., then gam_init,j
        for i in range(j - 1, -1, -1):
            kri = prep[i][2] * gam.unsqueeze(-2)
            Uj -= (Wk @ kri.transpose(-1, -2)) @ U[i]
            oj += (qd @ kri.transpose(-1, -2)) @ U[i]
            gam = gam * prep[i][3]
        if S0 is not None:
            Uj -= (Wk * gam.unsqueeze(-2)) @ S0
            oj += (qd * gam.unsqueeze(-2)) @ S0
        U.append(Uj)
        oj = oj + Mqk @ Uj
        o.index_copy_(0, idx[:, j].reshape(-1), oj.reshape(N, H, C, V).transpose(1, 2).reshape(N * C, H, V))
    o = o[:tk.dummy].reshape(tk.B, tk.T, H, V)
    if not output_final_state:
        return o, None
    S = torch.zeros(N * H, K, V, dtype=F64, device=dev)
    gam = torch.ones(N * H, K, dtype=F64, device=dev)     # gam_i,n, then gam_init,n
    for i in range(n_chunks - 1, -1, -1):
        S += (prep[i][2] * gam.unsqueeze(-2)).transpose(-1, -2) @ U[i]
        gam = gam * prep[i][3]
    if S0 is not None:
        S += gam.unsqueeze(-1) * S0
    return o, _final_state(S, N, H, K, V)


def kda_decode(q, k, v, g, beta, *, state_pool, state_indices, gate_kind="safe", A_log=None, dt_bias=None,
               lower_bound=-5.0, scale=None, use_qk_l2norm=True, use_beta_sigmoid=True):
    """A decode step: S tokens (S = 1 for [N, H, K] inputs) for each of N sequences, each reading
    and updating its own row of a state pool.

    q, k [N, H, K] or [N, S, H, K]; v [N, (S,) HV, V]; g [N, (S,) HV, K]; beta [N, (S,) HV];
    state_pool [P, HV, V, K]; state_indices [N]: the pool row of each sequence, -1 for a padded
    slot (its outputs are zero and no row is touched). Indices must be distinct.
    Returns (o [N, (S,) HV, V] float64, the updated pool as a new float64 tensor)."""
    single = q.dim() == 3
    if single:
        q, k, v, g, beta = (x.unsqueeze(1) for x in (q, k, v, g, beta))
    N, S = q.shape[:2]
    idx = torch.as_tensor(state_indices).to(device=q.device, dtype=torch.int64)
    P = state_pool.shape[0]
    if idx.shape != (N,):
        raise ValueError(f"state_indices must be [N] = [{N}], got {tuple(idx.shape)}")
    live = (idx >= 0).nonzero().flatten()
    rows = idx[live]
    if bool((rows >= P).any()) or rows.unique().numel() != rows.numel():
        raise ValueError(f"state_indices must be distinct rows of the pool (< {P}) or -1, got {idx.tolist()}")
    HV, V = v.shape[2], v.shape[-1]
    pool = state_pool.to(F64).clone()
    o = torch.zeros(N, S, HV, V, dtype=F64, device=q.device)
    if live.numel():
        o_live, s_live = kda_recurrent(q[live], k[live], v[live], g[live], beta[live], gate_kind=gate_kind,
                                       A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale,
                                       initial_state=pool[rows], output_final_state=True,
                                       use_qk_l2norm=use_qk_l2norm, use_beta_sigmoid=use_beta_sigmoid)
        o[live] = o_live
        pool[rows] = s_live
    return (o.squeeze(1) if single else o), pool


def _segments(B, T, cu_seqlens, segment_chunks, chunk, device):
    """Splits every sequence into segments of `segment_chunks` chunks (the last may be shorter).
    Returns (cu of all segments over the flattened (B, T) tokens, the owning sequence of each
    segment, and each sequence's number of segments)."""
    if cu_seqlens is None:
        cu = torch.arange(B + 1, dtype=torch.int64) * T
    else:
        cu = torch.as_tensor(cu_seqlens, dtype=torch.int64).cpu()
    step = segment_chunks * chunk
    bounds, owner, counts = [0], [], []
    for n in range(cu.numel() - 1):
        t0, t1 = int(cu[n]), int(cu[n + 1])
        cuts = list(range(t0 + step, t1, step)) + [t1]
        if t1 == t0:
            cuts = [t1]  # an empty sequence still owns one (empty) segment: its state passes through
        bounds += cuts
        owner += [n] * len(cuts)
        counts.append(len(cuts))
    return torch.tensor(bounds, dtype=torch.int64, device=device), owner, counts


def _flat(x):
    return x.reshape(1, x.shape[0] * x.shape[1], *x.shape[2:])


def segment_maps(q, k, v, g, beta, *, segment_chunks, gate_kind="safe", A_log=None, dt_bias=None,
                 lower_bound=-5.0, scale=None, cu_seqlens=None, use_qk_l2norm=True, use_beta_sigmoid=True,
                 chunk=CHUNK):
    """Pass A of the sequence split: every sequence is cut into segments of `segment_chunks` chunks,
    and each segment's chunk maps compose into one affine map of the state, S_end = M S_start + B.
    It is computed as the kernels will: the chunked recurrence on a state widened by K columns,
    started from [0 | I], with v = 0 on the extra columns; its final state is [B | M].

    Returns (M [NSEG, H, K, K], B [NSEG, H, K, V], owner: the sequence of each segment, counts:
    the segments of each sequence), in float64, S kept as K x V."""
    Bt, T, _, K = q.shape
    H, V = v.shape[2], v.shape[-1]
    cu_seg, owner, counts = _segments(Bt, T, cu_seqlens, segment_chunks, chunk, q.device)
    nseg = cu_seg.numel() - 1
    v_ext = torch.cat([v.to(F64), v.new_zeros(*v.shape[:-1], K).to(F64)], -1)
    s0 = torch.zeros(nseg, H, V + K, K, dtype=F64, device=q.device)  # S^T of [0 | I]
    s0[:, :, V:, :] = torch.eye(K, dtype=F64, device=q.device)
    _, fin = kda_chunked(_flat(q), _flat(k), _flat(v_ext), _flat(g), _flat(beta), gate_kind=gate_kind, A_log=A_log,
                         dt_bias=dt_bias, lower_bound=lower_bound, scale=scale, initial_state=s0,
                         output_final_state=True, cu_seqlens=cu_seg, use_qk_l2norm=use_qk_l2norm,
                         use_beta_sigmoid=use_beta_sigmoid, chunk=chunk)
    S_end = fin.transpose(-1, -2)  # [NSEG, H, K, V + K]
    return S_end[..., V:], S_end[..., :V], owner, counts


def kda_segmented(q, k, v, g, beta, *, segment_chunks, gate_kind="safe", A_log=None, dt_bias=None,
                  lower_bound=-5.0, scale=None, initial_state=None, output_final_state=False,
                  cu_seqlens=None, use_qk_l2norm=True, use_beta_sigmoid=True, chunk=CHUNK):
    """The sequence split (docs/math.md section 4), exact: pass A gives every segment's map (M, B); a
    scan S_{i+1} = M_i S_i + B_i over the segments of each sequence gives every segment's start
    state; pass C is the chunked forward of each segment from its start state. Same arguments and
    results as `kda_chunked`, plus `segment_chunks`."""
    Bt, T, _, K = q.shape
    H, V = v.shape[2], v.shape[-1]
    act = dict(gate_kind=gate_kind, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale,
               use_qk_l2norm=use_qk_l2norm, use_beta_sigmoid=use_beta_sigmoid, chunk=chunk)
    M, Bm, owner, counts = segment_maps(q, k, v, g, beta, segment_chunks=segment_chunks, cu_seqlens=cu_seqlens,
                                        **act)
    N = len(counts)
    S = _initial_state(initial_state, N, H, K, V, q.device).reshape(N, H, K, V)
    starts = torch.empty(len(owner), H, K, V, dtype=F64, device=q.device)
    i = 0
    for n in range(N):
        for _ in range(counts[n]):
            starts[i] = S[n]
            S[n] = M[i] @ S[n] + Bm[i]
            i += 1
    cu_seg, _, _ = _segments(Bt, T, cu_seqlens, segment_chunks, chunk, q.device)
    o, _ = kda_chunked(_flat(q), _flat(k), _flat(v), _flat(g), _flat(beta), initial_state=starts.transpose(-1, -2),
                       output_final_state=False, cu_seqlens=cu_seg, **act)
    final = S.transpose(-1, -2).contiguous() if output_final_state else None
    return o.reshape(Bt, T, H, V), final


def chunk_workspace(q, k, v, g, beta, *, gate_kind="safe", A_log=None, dt_bias=None, lower_bound=-5.0,
                    scale=None, cu_seqlens=None, use_qk_l2norm=True, use_beta_sigmoid=True,
                    chunk=CHUNK, slots_per_block=256):
    """K1's workspace in float64 and in K1's layout (see k1_prepare.py).

    Chunk slots are numbered sequence by sequence (for fixed batches, slot = b * ceil(T/C) + chunk);
    NS = sum_n ceil(len_n / C) slots are returned (a varlen K1 allocates more and leaves the rest).
    Returns a dict: Wk = A diag(beta) kd, qd, kr [H, NS*C, K]; U0 = A diag(beta) v [H, NS*C, V];
    Mqk [H, NS*C, C]; gC = exp(G_C) [H, NS, K]; slot_seq, slot_t0 (first token row in the flattened
    (B, T)), slot_len [NS] int64. Pad rows of a tail chunk are zero in every matrix."""
    tk = _tokens(q, k, v, g, beta, gate_kind=gate_kind, A_log=A_log, dt_bias=dt_bias,
                 lower_bound=lower_bound, scale=scale, cu_seqlens=cu_seqlens,
                 use_qk_l2norm=use_qk_l2norm, use_beta_sigmoid=use_beta_sigmoid)
    H, K, C = tk.H, tk.K, chunk
    dev = q.device
    nch = (tk.lens + C - 1) // C
    slot_seq = torch.repeat_interleave(torch.arange(tk.N, device=dev), nch)
    NS = slot_seq.numel()
    first_slot = torch.cumsum(nch, 0) - nch
    slot_c = torch.arange(NS, device=dev) - first_slot[slot_seq]
    slot_t0 = tk.starts[slot_seq] + slot_c * C
    slot_len = torch.clamp(tk.lens[slot_seq] - slot_c * C, max=C)
    r = torch.arange(C, device=dev)
    idx = torch.where(r < slot_len[:, None], slot_t0[:, None] + r, tk.dummy)  # [NS, C]

    out = {name: [] for name in ("Wk", "qd", "kr", "U0", "Mqk", "gC")}
    for s0 in range(0, NS, slots_per_block):
        rows = idx[s0:s0 + slots_per_block]
        ns = rows.shape[0]

        def take(x):
            y = x.index_select(0, rows.reshape(-1))
            return y.reshape(ns, C, H, *x.shape[2:]).transpose(1, 2).transpose(0, 1)  # [H, ns, C, ...]

        b = take(tk.beta)
        kd, qd, kr, gC, _, A, Mqk = _chunk_prepare(take(tk.q), take(tk.k), take(tk.g), b)
        Ab = A * b.unsqueeze(-2)
        for name, x in (("Wk", Ab @ kd), ("qd", qd), ("kr", kr), ("U0", Ab @ take(tk.v)), ("Mqk", Mqk)):
            out[name].append(x.reshape(H, ns * C, x.shape[-1]))
        out["gC"].append(gC)
    empty = {"Wk": K, "qd": K, "kr": K, "U0": v.shape[-1], "Mqk": C}
    ws = {name: (torch.cat(xs, dim=1) if xs else torch.zeros(H, 0, empty.get(name, K), dtype=F64, device=dev))
          for name, xs in out.items()}
    ws.update(slot_seq=slot_seq, slot_t0=slot_t0, slot_len=slot_len)
    return ws


def rel_err(out, ref, block: int = 1 << 24) -> float:
    """||out - ref|| / ||ref|| in float64 (||out|| when ref is all zeros). Any NaN gives nan and
    any other non-finite value gives inf, so that `rel_err(...) <= tol` fails. Taken `block`
    elements at a time: a float64 copy of a whole fp32 state of 70000 sequences is 9 GB, which an
    80 GB card did not have left beside the test's tensors (session 28)."""
    out = torch.as_tensor(out)
    ref = torch.as_tensor(ref)
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch: {tuple(out.shape)} vs {tuple(ref.shape)}")
    o, r = out.reshape(-1), ref.reshape(-1)
    num = den = 0.0
    nan = inf = False
    for s in range(0, o.numel(), block):
        x = o[s:s + block].to(F64)
        y = r[s:s + block].to(device=x.device, dtype=F64)
        nan = nan or bool(torch.isnan(x).any()) or bool(torch.isnan(y).any())
        inf = inf or not (bool(torch.isfinite(x).all()) and bool(torch.isfinite(y).all()))
        if nan or inf:
            continue
        den += float(torch.sum(y * y))
        num += float(torch.sum((x - y) ** 2))
    if nan:
        return math.nan
    if inf:
        return math.inf
    num, den = math.sqrt(num), math.sqrt(den)
    return num if den == 0.0 else num / den


def random_inputs(B, T, H, K=128, V=128, *, dtype=torch.bfloat16, device="cpu", seed=None,
                  cu_seqlens=None, state_dtype=None, generator=None, HV=None) -> dict:
    """Random KDA inputs: q, k [B, T, H, K] and v, g (raw gate input), beta (logits) with HV
    value heads (HV = H unless given: GVA) in `dtype`; A_log [HV] fp32, uniform in
    [log 1, log 16]; dt_bias [HV, K] fp32; initial_state [N, HV, V, K] in state_dtype (None when
    state_dtype is None); cu_seqlens as an int64 tensor or None.

    `generator` wins over `seed`; with neither, a fresh nondeterministic seed is drawn."""
    device = torch.device(device)
    if generator is None:
        generator = torch.Generator(device=device)
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
    N = B
    if cu_seqlens is not None:
        cu_seqlens = torch.as_tensor(cu_seqlens, dtype=torch.int64).to(device)
        if B != 1 or int(cu_seqlens[0]) != 0 or int(cu_seqlens[-1]) != T:
            raise ValueError("cu_seqlens needs B == 1 and must run from 0 to T")
        N = cu_seqlens.numel() - 1

    def randn(*shape, dt=dtype):
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(dt)

    def rand(*shape):
        return torch.rand(*shape, generator=generator, device=device, dtype=torch.float32)

    HV = HV or H
    return {
        "q": randn(B, T, H, K),
        "k": randn(B, T, H, K),
        "v": randn(B, T, HV, V),
        "g": randn(B, T, HV, K),
        "beta": randn(B, T, HV),
        "A_log": rand(HV) * math.log(16.0),
        "dt_bias": 0.1 * randn(HV, K, dt=torch.float32),
        "initial_state": None if state_dtype is None else randn(N, HV, V, K, dt=state_dtype),
        "cu_seqlens": cu_seqlens,
    }
