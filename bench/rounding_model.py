"""Where o's error comes from: the roundings of K1 and K2 replayed in float64 on the CPU.

    python bench/rounding_model.py [T H seeds]      # default 17 1 40, then 256 4 8

The model follows the kernels' operand dtypes and nothing else (every product and sum exact):
K1 forms kd, qd, ki = k 2^-G in fp32 and rounds them to bf16 for L = kd ki^T and Mqk = qd ki^T
(K1Config.mqk_split: optionally hi + lo parts), A = (I + L)^-1, Ab = A diag(beta) in fp16 (bf16
for the Wk product with a split), the workspace in fp16, gC in fp32; K2 rounds St to fp16 for
the wgmma each chunk and Ut = U0^T - Sh Wk^T to fp16; o is stored in bf16. Each variant turns
one of these on or off, against kda_recurrent in float64 on the same inputs (the GPU matrix's
distributions: q, k, v, g, beta ~ N(0, 1) in bf16, A_log ~ U(0, 2.7), dt_bias ~ 0.5 N(0, 1)).

Session 14 added the fused producer's options for Wk | U0 (Ab and its operands in bf16, or an
fp32 solve without the fp16 Ab).

Session 13: the model gave 2.86e-3 at T = 256 H = 4 and 4.47e-3 worst at T = 17 H = 1 for the
released roundings, the GPU matrix 2.9e-3 and 4.4e-3 (fixed B=1 T=17 H=1): the bf16 operands of
Mqk are most of the error beyond o's own bf16 rounding (1.7e-3).
"""
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kda_kernels import reference as R  # noqa: E402

F64, BF, FP16 = torch.float64, torch.bfloat16, torch.float16
C = 16


def rnd(x, dt):
    return x if dt is None else x.to(dt).to(F64)


def mqk(qd, ki, split, diag=False):
    """tril(qd ki^T) from bf16 operands, with `split` ("", "k", "qk", or None for exact); `diag`:
    the diagonal exact (K1Config.mqk_diag)."""
    if split is None:
        return (qd @ ki.transpose(-1, -2)).tril()
    if diag:
        eye = torch.eye(qd.shape[-2], dtype=torch.bool)
        return torch.where(eye, mqk(qd, ki, None), mqk(qd, ki, split))
    qh, kih = rnd(qd, BF), rnd(ki, BF)
    m = qh @ kih.transpose(-1, -2)
    if split:
        m = m + qh @ rnd(ki - kih, BF).transpose(-1, -2)
    if split == "qk":
        m = m + rnd(qd - qh, BF) @ kih.transpose(-1, -2)
    return m.tril()


def model(inp, T, H, split="", diag=False, L_bf16=True, ws=True, state_fp16=True, u_fp16=True, o_bf16=True,
          ab="fp16", pairwise=False):
    """o [1, T, H, V] with the chosen roundings."""
    tk = R._tokens(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], gate_kind="safe", A_log=inp["A_log"],
                   dt_bias=inp["dt_bias"], lower_bound=-5.0, scale=None, cu_seqlens=None, use_qk_l2norm=True,
                   use_beta_sigmoid=True)
    NC = -(-T // C)

    def chunks(x):  # [T, H, ...] -> [H, NC, C, ...], zero rows past T
        x = torch.cat([x[:T], x.new_zeros((NC * C - T,) + x.shape[1:])])
        return x.reshape(NC, C, *x.shape[1:]).transpose(1, 2).transpose(0, 1)
    q, k, v, g, b = (chunks(x) for x in (tk.q, tk.k, tk.v, tk.g, tk.beta))
    G = g.cumsum(-2)
    GC = G[..., -1, :]
    kd, qd, ki = k * torch.exp(G), q * torch.exp(G), k * torch.exp(-G)
    kr = k * torch.exp(GC.unsqueeze(-2) - G)
    L = (rnd(kd, BF if L_bf16 else None) @ rnd(ki, BF if L_bf16 else None).transpose(-1, -2)).tril(-1)
    L = L * b.unsqueeze(-1)
    M = mqk(qd, ki, split, diag)
    A = torch.linalg.inv(torch.eye(C, dtype=F64) + L)
    Ab = A * b.unsqueeze(-2)
    w = FP16 if ws else None
    if ab == "bf16":        # Wk and U0 from bf16 Ab, kd and v (the raw bf16 v tile, kd from the L operand)
        Wk = rnd(rnd(Ab, BF) @ rnd(kd, BF), w)
        U0 = rnd(rnd(Ab, BF) @ rnd(v, BF), w)
    elif ab == "solve":     # (I + L) [Wk | U0] = diag(beta) [kd | v] solved in fp32 (exact here)
        Wk = rnd(Ab @ kd, w)
        U0 = rnd(Ab @ v, w)
    elif ab in ("k2_bf16", "k2_hilo"):   # U0 formed in K2's accumulator from v and K1's fp16 Ab
        Wk = rnd(rnd(Ab, w) @ rnd(kd, w), w)
        Ah = rnd(rnd(Ab, FP16), BF)
        if ab == "k2_hilo":
            Ah = Ah + rnd(rnd(Ab, FP16) - Ah, BF)
        U0 = Ah @ v
    elif split:
        Wk = rnd(rnd(Ab, BF) @ rnd(kd, BF), w)
        U0 = rnd(rnd(Ab, w) @ rnd(v, w), w)
    else:
        Wk = rnd(rnd(Ab, w) @ rnd(kd, w), w)
        U0 = rnd(rnd(Ab, w) @ rnd(v, w), w)
    kr32 = kr.float().double()
    qd, kr, M = rnd(qd, w), rnd(kr, w), rnd(M, w)
    gC = torch.exp(GC).float().double()
    if pairwise:
        return rnd(pairwise_o(Wk, qd, kr32, gC, U0, M, T), BF if o_bf16 else None)
    St = torch.zeros(H, v.shape[-1], k.shape[-1], dtype=F64)
    out = []
    for c in range(NC):
        Sh = rnd(St, FP16 if state_fp16 else None)
        Ut = rnd(U0[:, c].transpose(1, 2) - Sh @ Wk[:, c].transpose(1, 2), FP16 if u_fp16 else None)
        out.append((Sh @ qd[:, c].transpose(1, 2) + Ut @ M[:, c].transpose(1, 2)).transpose(1, 2))
        St = St * gC[:, c][:, None, :] + Ut @ kr[:, c]
    o = torch.cat(out, 1)[:, :T].transpose(0, 1).unsqueeze(0)
    return rnd(o, BF if o_bf16 else None)


def pairwise_o(Wk, qd, kr32, gC, U0, M, T):
    """o of kda_reference.kda_pairwise's form in a short-sequence kernel's roundings (session 32):
    kr_i gam_ij formed in fp32 and rounded to fp16, P_ji = Wk_j (kr_i gam_ij)^T and Q_ji likewise
    accumulated in fp32 and rounded to fp16, U_i in fp16 as the operand of P_ji U_i and Q_ji U_i,
    U_j accumulated in fp32 from U0_j. [H, NC, C, ...] in, o [1, T, H, V] out."""
    NC = Wk.shape[1]
    Us, out = [], []
    for j in range(NC):
        Uj, oj = U0[:, j].clone(), torch.zeros_like(U0[:, j])
        gam = torch.ones_like(gC[:, 0])
        for i in range(j - 1, -1, -1):
            kri = rnd(kr32[:, i] * gam.unsqueeze(-2), FP16).transpose(-1, -2)
            Ui = rnd(Us[i], FP16)
            Uj = Uj - rnd(Wk[:, j] @ kri, FP16) @ Ui
            oj = oj + rnd(qd[:, j] @ kri, FP16) @ Ui
            gam = gam * gC[:, i]
        Us.append(Uj)
        out.append(oj + M[:, j] @ rnd(Uj, FP16))
    return torch.cat(out, 1)[:, :T].transpose(0, 1).unsqueeze(0)


def inputs(T, H, seed):
    gen = torch.Generator().manual_seed(seed)
    rn = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    return dict(q=rn(1, T, H, 128).to(BF), k=rn(1, T, H, 128).to(BF), v=rn(1, T, H, 128).to(BF),
                g=rn(1, T, H, 128).to(BF), beta=rn(1, T, H).to(BF),
                A_log=torch.empty(H).uniform_(0, 2.7, generator=gen), dt_bias=rn(H, 128) * 0.5)


VARIANTS = {
    "session 13 release (Mqk, L bf16)": dict(),
    "o's bf16 rounding only": dict(split=None, L_bf16=False, ws=False, state_fp16=False, u_fp16=False),
    "workspace fp16 only": dict(split=None, L_bf16=False, state_fp16=False, u_fp16=False, o_bf16=False),
    "L exact": dict(L_bf16=False),
    "Mqk exact": dict(split=None),
    "mqk_diag (session 14 release)": dict(diag=True),
    "mqk_split k": dict(split="k"),
    "mqk_split qk": dict(split="qk"),
    "mqk_split qk, o fp32": dict(split="qk", o_bf16=False),
    # session 14: the fused producer's options for Wk | U0 (on top of the released mqk_diag)
    "mqk_diag, Ab bf16 (Wk, U0)": dict(diag=True, ab="bf16"),
    "mqk_diag, Wk|U0 solved in fp32": dict(diag=True, ab="solve"),
    # session 17: U0 = Ab v inside K2's Ut accumulator (no fp16 U0), Ab from K1's fp16 Ab_s
    "mqk_diag, U0 in K2, Ab bf16": dict(diag=True, ab="k2_bf16"),
    "mqk_diag, U0 in K2, Ab bf16 hi+lo": dict(diag=True, ab="k2_hilo"),
    # session 32: the pairwise (state-free) form of a short-sequence kernel, on the released K1
    # roundings (Wk from fp16 Ab and kd, Mqk with its fp32 diagonal)
    "mqk_diag, pairwise (no state)": dict(diag=True, pairwise=True),
}


def main():
    runs = [tuple(int(a) for a in sys.argv[1:4])] if len(sys.argv) >= 4 else [(17, 1, 40), (256, 4, 8)]
    for T, H, n in runs:
        errs = {name: [] for name in VARIANTS}
        for s in range(n):
            inp = inputs(T, H, s)
            ref, _ = R.kda_recurrent(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                     dt_bias=inp["dt_bias"], lower_bound=-5.0)
            for name, kw in VARIANTS.items():
                errs[name].append(R.rel_err(model(inp, T, H, **kw), ref))
        print(f"T={T} H={H}, {n} seeds: rel. error of o against float64 (median / p90 / max)")
        for name, x in errs.items():
            x = sorted(x)
            print(f"  {name:30s} {statistics.median(x):.2e} / {x[math.floor(0.9 * (len(x) - 1))]:.2e} / {x[-1]:.2e}")


if __name__ == "__main__":
    main()
