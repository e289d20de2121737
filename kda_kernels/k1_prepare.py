"""K1, the token-parallel prepare kernel.

One program handles `chunks_per_cta` chunk slots of one value head hv (GVA: HV value heads, each
group of HV / H sharing the q, k of head hv // (HV / H); HV = H without it). For each chunk of C=16
tokens it computes, with G the per-channel cumulative base-2 log-decay inside the chunk:

    kd = k 2^G        qd = scale q 2^G        kr = k 2^(G_C - G)       gC = 2^G_C
    L  = strictly_lower(kd ki^T) * beta_row,   ki = k 2^-G
    A  = (I + L)^-1 = (I - L)(I + L^2)(I + L^4)(I + L^8)
    Ab = A diag(beta)                           (so K2 needs no beta: U = Ab (v - kd S0))
    Mqk = lower_incl_diag(qd ki^T)

and writes them to the workspace read by K2. Chunk j of sequence n goes to slot
b * ceil(T / 16) + j in a fixed batch and to slot bos_n // 16 + n + j in a varlen one, so
that K2 finds a sequence's first slot in O(1) and K1 a slot's sequence by binary search.
Slots that hold no chunk (at most one per sequence, plus the tail) write nothing.
"""

import tilelang.language as T

from . import _math
from .configs import CHUNK, SEARCH_STEPS, K1Config  # noqa: F401  (re-exported)


def build_k1(cfg: K1Config):
    K = cfg.head_dim
    C = CHUNK
    CPB = cfg.chunks_per_cta
    R = C * CPB
    fast = cfg.fast_math
    accum = "float32"

    B = T.dynamic("B")
    Tn = T.dynamic("T")
    H = T.dynamic("H")
    HV = T.dynamic("HV")
    NC = T.dynamic("NC")
    N1 = T.dynamic("N1")

    @T.macro
    def _body(q, k, g, beta, A_log, dt_bias, cu_seqlens, lower_bound, scale,
              kd, qd, kr, Ab, Mqk, gC):
        with T.Kernel(T.ceildiv(NC, CPB), HV, threads=cfg.threads) as (bc, hv):
            slot_b = T.alloc_shared((CPB,), "int32")
            slot_t0 = T.alloc_shared((CPB,), "int32")
            slot_len = T.alloc_shared((CPB,), "int32")

            q_s = T.alloc_shared((R, K), cfg.in_dtype)
            k_s = T.alloc_shared((R, K), cfg.in_dtype)
            g_s = T.alloc_shared((R, K), cfg.in_dtype)
            G_s = T.alloc_shared((R, K), accum)
            beta_s = T.alloc_shared((R,), accum)
            rq_s = T.alloc_shared((R,), accum)
            rk_s = T.alloc_shared((R,), accum)
            # bf16 for the L and Mqk products: ki = k 2^-G reaches 2^115, past fp16's range.
            ki_s = T.alloc_shared((R, K), cfg.in_dtype)
            L_s = T.alloc_shared((R, C), accum)
            M_s = T.alloc_shared((R, C), accum)
            P_s = T.alloc_shared((R, C), accum)
            X_s = T.alloc_shared((R, C), accum)
            Y_s = T.alloc_shared((R, C), accum)

            sq = T.alloc_fragment((R, K), accum)
            nrm = T.alloc_fragment((R,), accum)
            Lf = T.alloc_fragment((R, R), accum)
            Mf = T.alloc_fragment((R, R), accum)

            if fast:
                T.import_source(_math.FAST_SOURCE)
            # GVA: value head hv reads q and k of head h, held in a register: inlined, the int64
            # divisions would run once per element loaded.
            h = T.alloc_var("int32", init=_math.gva_head(hv, H, HV))
            tx = T.get_thread_binding()
            if tx < CPB:
                slot = bc * CPB + tx
                if cfg.varlen:
                    # Slot s holds chunk j of sequence n when s = f(n) + j, f(n) = bos_n // C + n,
                    # j < ceil(len_n / C): f grows by at least ceil(len_n / C) from n to n + 1, so
                    # the ranges are disjoint and below NC = T // C + N. n is the largest with
                    # f(n) <= s: a binary search of SEARCH_STEPS steps for N <= MAX_SEQUENCES
                    # (cu_seqlens clamped to [0, T], so that any contents stay inside the buffers).
                    lo = T.alloc_var("int32", init=0)
                    hi = T.alloc_var("int32", init=N1 - 2)
                    f_mid = T.alloc_var("int32", init=0)
                    for _ in T.serial(SEARCH_STEPS):
                        # lo, hi stay in [0, N1 - 2]; the clamps say so to `verify`, which does
                        # not infer loop invariants. Once lo == hi a step loads nothing, so the
                        # chain of dependent loads is ceil(log2 N) long, not SEARCH_STEPS.
                        mid = (T.max(T.min(lo, N1 - 2), 0) + T.max(T.min(hi, N1 - 2), 0) + 1) // 2
                        if lo < hi:
                            f_mid = _math.token_index(cu_seqlens[mid], Tn) // C + mid
                            if f_mid <= slot:
                                lo = mid
                            else:
                                hi = mid - 1
                    n = T.max(T.min(lo, N1 - 2), 0)
                    bos = _math.token_index(cu_seqlens[n], Tn)
                    eos = T.max(_math.token_index(cu_seqlens[n + 1], Tn), bos)
                    j = slot - (bos // C + n)
                    t0 = bos + j * C
                    ln = T.if_then_else(j >= 0 and j < T.ceildiv(eos - bos, C), T.min(C, eos - t0), 0)
                    slot_b[tx] = 0
                    slot_t0[tx] = t0
                    slot_len[tx] = T.if_then_else(slot < NC, ln, 0)
                else:
                    ncs = T.ceildiv(Tn, C)
                    slot_b[tx] = slot // ncs
                    slot_t0[tx] = (slot % ncs) * C
                    slot_len[tx] = T.if_then_else(slot < NC, T.min(C, Tn - (slot % ncs) * C), 0)

            # Guards below repeat what the slot computation ensures, so that each global access's
            # bounds follow from its own condition, which is what `verify` proves.
            for r, d in T.Parallel(R, K):
                c = r // C
                t = slot_t0[c] + r % C
                valid = r % C < slot_len[c] and t >= 0 and t < Tn and slot_b[c] >= 0 and slot_b[c] < B
                q_s[r, d] = T.if_then_else(valid, q[slot_b[c], t, h, d], T.Cast(cfg.in_dtype, 0))
                k_s[r, d] = T.if_then_else(valid, k[slot_b[c], t, h, d], T.Cast(cfg.in_dtype, 0))
                g_s[r, d] = T.if_then_else(valid, g[slot_b[c], t, hv, d], T.Cast(cfg.in_dtype, 0))
            for r in T.Parallel(R):
                c = r // C
                valid = (r % C < slot_len[c] and slot_t0[c] + r % C >= 0 and slot_t0[c] + r % C < Tn
                         and slot_b[c] >= 0 and slot_b[c] < B)
                beta_s[r] = T.if_then_else(
                    valid, _math.sigmoid(T.Cast(accum, beta[slot_b[c], slot_t0[c] + r % C, hv]), fast), 0.0)

            # Gate and its in-chunk cumsum, one (chunk, channel) column per thread, in registers.
            for c, d in T.Parallel(CPB, K):
                gcol = T.alloc_local((C,), accum)
                a_h = _math.exp(A_log[hv], fast)
                for i in T.unroll(C):
                    gcol[i] = T.if_then_else(
                        i < slot_len[c],
                        lower_bound * _math.LOG2E * _math.sigmoid(
                            a_h * (T.Cast(accum, g_s[c * C + i, d]) + dt_bias[hv, d]), fast),
                        0.0)
                for i in T.unroll(1, C):
                    gcol[i] = gcol[i] + gcol[i - 1]
                for i in T.unroll(C):
                    G_s[c * C + i, d] = gcol[i]

            for r, d in T.Parallel(R, K):
                sq[r, d] = T.Cast(accum, q_s[r, d]) * T.Cast(accum, q_s[r, d])
            T.reduce_sum(sq, nrm, dim=1)
            for r in T.Parallel(R):
                rq_s[r] = _math.rsqrt(nrm[r] + 1e-6, fast) * scale
            for r, d in T.Parallel(R, K):
                sq[r, d] = T.Cast(accum, k_s[r, d]) * T.Cast(accum, k_s[r, d])
            T.reduce_sum(sq, nrm, dim=1)
            for r in T.Parallel(R):
                rk_s[r] = _math.rsqrt(nrm[r] + 1e-6, fast)

            # kd, qd, kr go to the workspace from fp32; the bf16 operands of the L and Mqk
            # products overwrite q_s and k_s in place (each element read, then written, by one thread).
            for r, d in T.Parallel(R, K):
                c = r // C
                Gr = G_s[r, d]
                kn = T.Cast(accum, k_s[r, d]) * rk_s[r]
                qn = T.Cast(accum, q_s[r, d]) * rq_s[r]
                e_pos = _math.exp2(Gr, fast)
                if slot_len[c] > 0 and bc * CPB + c < NC:
                    row = (bc * CPB + c) * C + r % C
                    kd[hv, row, d] = T.Cast(cfg.ws_dtype, kn * e_pos)
                    qd[hv, row, d] = T.Cast(cfg.ws_dtype, qn * e_pos)
                    kr[hv, row, d] = T.Cast(cfg.ws_dtype, kn * _math.exp2(G_s[c * C + C - 1, d] - Gr, fast))
                ki_s[r, d] = T.Cast(cfg.in_dtype, kn * _math.exp2(-Gr, fast))
                k_s[r, d] = T.Cast(cfg.in_dtype, kn * e_pos)
                q_s[r, d] = T.Cast(cfg.in_dtype, qn * e_pos)
            for c, d in T.Parallel(CPB, K):
                if slot_len[c] > 0 and bc * CPB + c < NC:
                    gC[hv, bc * CPB + c, d] = _math.exp2(G_s[c * C + C - 1, d], fast)

            T.gemm(k_s, ki_s, Lf, transpose_B=True, clear_accum=True)
            T.gemm(q_s, ki_s, Mf, transpose_B=True, clear_accum=True)

            for r, j in T.Parallel(R, R):
                if r // C == j // C:
                    L_s[r, j % C] = T.if_then_else(r % C > j % C, Lf[r, j] * beta_s[r], 0.0)
                    M_s[r, j % C] = T.if_then_else(r % C >= j % C, Mf[r, j], 0.0)

            for r, j in T.Parallel(R, C):
                c = r // C
                if slot_len[c] > 0 and bc * CPB + c < NC:
                    Mqk[hv, (bc * CPB + c) * C + r % C, j] = T.Cast(cfg.mat_dtype, M_s[r, j])

            # A = (I - L)(I + L^2)(I + L^4)(I + L^8), block-diagonal 16x16 products.
            for r, j in T.Parallel(R, C):
                X_s[r, j] = T.if_then_else(r % C == j, 1.0, 0.0) - L_s[r, j]
                P_s[r, j] = L_s[r, j]
            for _ in T.serial(3):
                for r, j in T.Parallel(R, C):
                    acc2 = T.alloc_var(accum, init=0.0)
                    for m in T.serial(C):
                        acc2 = acc2 + P_s[r, m] * P_s[(r // C) * C + m, j]
                    Y_s[r, j] = acc2
                for r, j in T.Parallel(R, C):
                    P_s[r, j] = Y_s[r, j]
                for r, j in T.Parallel(R, C):
                    acc3 = T.alloc_var(accum, init=0.0)
                    for m in T.serial(C):
                        acc3 = acc3 + X_s[r, m] * P_s[(r // C) * C + m, j]
                    Y_s[r, j] = X_s[r, j] + acc3
                for r, j in T.Parallel(R, C):
                    X_s[r, j] = Y_s[r, j]

            for r, j in T.Parallel(R, C):
                c = r // C
                if slot_len[c] > 0 and bc * CPB + c < NC:
                    Ab[hv, (bc * CPB + c) * C + r % C, j] = T.Cast(cfg.mat_dtype, X_s[r, j] * beta_s[c * C + j])

    if cfg.varlen:
        @T.prim_func
        def k1_prepare(
            q: T.Tensor((B, Tn, H, K), cfg.in_dtype),
            k: T.Tensor((B, Tn, H, K), cfg.in_dtype),
            g: T.Tensor((B, Tn, HV, K), cfg.in_dtype),
            beta: T.Tensor((B, Tn, HV), cfg.in_dtype),
            A_log: T.Tensor((HV,), "float32"),
            dt_bias: T.Tensor((HV, K), "float32"),
            cu_seqlens: T.Tensor((N1,), "int64"),
            lower_bound: T.float32,
            scale: T.float32,
            kd: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
            qd: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
            kr: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
            Ab: T.Tensor((HV, NC * C, C), cfg.mat_dtype),
            Mqk: T.Tensor((HV, NC * C, C), cfg.mat_dtype),
            gC: T.Tensor((HV, NC, K), "float32"),
        ):
            _body(q, k, g, beta, A_log, dt_bias, cu_seqlens, lower_bound, scale, kd, qd, kr, Ab, Mqk, gC)
    else:
        @T.prim_func
        def k1_prepare(
            q: T.Tensor((B, Tn, H, K), cfg.in_dtype),
            k: T.Tensor((B, Tn, H, K), cfg.in_dtype),
            g: T.Tensor((B, Tn, HV, K), cfg.in_dtype),
            beta: T.Tensor((B, Tn, HV), cfg.in_dtype),
            A_log: T.Tensor((HV,), "float32"),
            dt_bias: T.Tensor((HV, K), "float32"),
            lower_bound: T.float32,
            scale: T.float32,
            kd: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
            qd: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
            kr: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
            Ab: T.Tensor((HV, NC * C, C), cfg.mat_dtype),
            Mqk: T.Tensor((HV, NC * C, C), cfg.mat_dtype),
            gC: T.Tensor((HV, NC, K), "float32"),
        ):
            _body(q, k, g, beta, A_log, dt_bias, None, lower_bound, scale, kd, qd, kr, Ab, Mqk, gC)

    return k1_prepare
