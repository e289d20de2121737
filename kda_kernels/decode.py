"""Decode (issue 12): S tokens (1..8, a shape variable) for each of N sequences, each reading and
updating its own row of a state pool in place.

One program per (block of BV value columns, value head hv, sequence n), 128 threads. St = S^T
[BV, K] is the pool row's slice (the layout of kda_prefill's initial_state/final_state), fp32
in registers. q, k come from head h = hv // (HV / H) (GVA; HV = H without it). Per token:

    qn  = scale q / ||q||       kn = k / ||k||
    gl  = lower_bound sigmoid(exp(A_log) (g + dt_bias))       natural-log decay, [K]
    St  = St diag(exp(gl))
    u   = sigmoid(beta) (v - St kn)                           [BV]
    St  = St + u kn^T
    o   = St qn

A state index outside [0, P) (-1 pads a batch) skips the sequence: its o is zero and no pool
row is read or written, whatever the index tensor holds.
"""
import tilelang.language as T

from . import _math
from .configs import DecodeConfig


def build_decode(cfg: DecodeConfig):
    K, V, BV = cfg.head_dim, cfg.value_dim, cfg.block_v
    fast = cfg.fast_math
    accum = "float32"
    assert V % BV == 0

    N = T.dynamic("N")
    S = T.dynamic("S")
    H = T.dynamic("H")
    HV = T.dynamic("HV")
    P = T.dynamic("P")

    @T.prim_func
    def kda_decode(
        q: T.Tensor((N, S, H, K), cfg.in_dtype),
        k: T.Tensor((N, S, H, K), cfg.in_dtype),
        v: T.Tensor((N, S, HV, V), cfg.in_dtype),
        g: T.Tensor((N, S, HV, K), cfg.in_dtype),
        beta: T.Tensor((N, S, HV), cfg.in_dtype),
        A_log: T.Tensor((HV,), "float32"),
        dt_bias: T.Tensor((HV, K), "float32"),
        state_indices: T.Tensor((N,), "int64"),
        lower_bound: T.float32,
        scale: T.float32,
        pool: T.Tensor((P, HV, V, K), cfg.state_dtype),
        o: T.Tensor((N, S, HV, V), cfg.in_dtype),
    ):
        with T.Kernel(V // BV, HV, N, threads=cfg.threads) as (bv, hv, n):
            St = T.alloc_fragment((BV, K), accum)
            prod = T.alloc_fragment((BV, K), accum)
            row = T.alloc_fragment((BV,), accum)
            vec = T.alloc_fragment((2, K), accum)
            sq = T.alloc_fragment((2, K), accum)
            nrm = T.alloc_fragment((2,), accum)
            qk_s = T.alloc_shared((2, K), accum)
            dec_s = T.alloc_shared((K,), accum)
            u_s = T.alloc_shared((BV,), accum)

            if fast:
                T.import_source(_math.FAST_SOURCE)
            h = _math.gva_head(hv, H, HV)
            idx = state_indices[n]
            live = idx >= 0 and idx < T.Cast("int64", P)
            # Clamped so that the reads and writes below stay inside the pool for any index;
            # they run only when live.
            r = T.Cast("int32", T.max(T.min(idx, T.Cast("int64", P) - 1), T.int64(0)))
            a_h = _math.exp(A_log[hv], fast)

            for j, d in T.Parallel(BV, K):
                St[j, d] = T.if_then_else(live, T.Cast(accum, pool[r, hv, bv * BV + j, d]), 0.0)

            for s in T.serial(S):
                for i, d in T.Parallel(2, K):
                    vec[i, d] = T.if_then_else(i == 0, T.Cast(accum, q[n, s, h, d]), T.Cast(accum, k[n, s, h, d]))
                    sq[i, d] = vec[i, d] * vec[i, d]
                T.reduce_sum(sq, nrm, dim=1)
                for i, d in T.Parallel(2, K):
                    qk_s[i, d] = vec[i, d] * _math.rsqrt(nrm[i] + 1e-6, fast) * T.if_then_else(i == 0, scale, 1.0)
                for d in T.Parallel(K):
                    dec_s[d] = _math.exp2(lower_bound * _math.LOG2E * _math.sigmoid(
                        a_h * (T.Cast(accum, g[n, s, hv, d]) + dt_bias[hv, d]), fast), fast)

                for j, d in T.Parallel(BV, K):
                    St[j, d] = St[j, d] * dec_s[d]
                    prod[j, d] = St[j, d] * qk_s[1, d]
                T.reduce_sum(prod, row, dim=1)
                for j in T.Parallel(BV):
                    u_s[j] = _math.sigmoid(T.Cast(accum, beta[n, s, hv]), fast) * (
                        T.Cast(accum, v[n, s, hv, bv * BV + j]) - row[j])
                for j, d in T.Parallel(BV, K):
                    St[j, d] = St[j, d] + u_s[j] * qk_s[1, d]
                    prod[j, d] = St[j, d] * qk_s[0, d]
                T.reduce_sum(prod, row, dim=1)
                for j in T.Parallel(BV):
                    o[n, s, hv, bv * BV + j] = T.Cast(cfg.in_dtype, T.if_then_else(live, row[j], 0.0))

            if live:
                for j, d in T.Parallel(BV, K):
                    pool[r, hv, bv * BV + j, d] = T.Cast(cfg.state_dtype, St[j, d])

    return kda_decode
