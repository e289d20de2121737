"""Decode (issue 12): S tokens (1..8) for each of N sequences, each reading and updating its own
row of a state pool in place. With `token_axis` the token inputs are [N, S, ...] and S is a
shape variable (speculative decoding); without it they are [N, ...], one token.

One program per (block of BV value columns, value head hv, sequence n). St = S^T [BV, K] is the
pool row's slice (the layout of kda_prefill's initial_state/final_state). q, k come from head
h = hv // (HV / H) (GVA; HV = H without it). Per token:

    qn  = scale q / ||q||       kn = k / ||k||
    gl  = lower_bound sigmoid(exp(A_log) (g + dt_bias))       natural-log decay, [K]
    St  = St diag(exp(gl))
    u   = sigmoid(beta) (v - St kn)                           [BV]
    St  = St + u kn^T
    o   = St qn

Thread j * TPR + c owns value row j of the block and TPR-strided 16-byte vectors of its columns
(fp32 registers): the two row sums of a token are its own partial sums and a TPR-lane shuffle,
with no shared memory and no block barrier. qn, kn and the decay are computed once per token by
the whole block into shared memory (the one barrier a token needs).

A state index outside [0, P) (-1 pads a batch) skips the sequence: its o is zero and no pool
row is read or written, whatever the index tensor holds.
"""
import tilelang.language as T

from . import _math
from .configs import DecodeConfig


def build_decode(cfg: DecodeConfig):
    K, V, BV, NT = cfg.head_dim, cfg.value_dim, cfg.block_v, cfg.threads
    fast = cfg.fast_math
    accum = "float32"
    TPR = NT // BV                               # threads per value row
    VW = 16 // (4 if cfg.state_dtype == "float32" else 2)   # pool elements per 16-byte vector
    NVEC = K // (VW * TPR)                       # vectors per thread
    CPT = NVEC * VW                              # state columns per thread
    assert V % BV == 0 and NT % BV == 0 and NT >= K and TPR & (TPR - 1) == 0 and TPR <= 32
    assert K % (VW * TPR) == 0

    N = T.dynamic("N")
    H = T.dynamic("H")
    HV = T.dynamic("HV")
    P = T.dynamic("P")
    if cfg.token_axis:
        S = T.dynamic("S")
        qk_shape, vg_shape, beta_shape = (N, S, H, K), (N, S, HV, V), (N, S, HV)
    else:
        S = 1
        qk_shape, vg_shape, beta_shape = (N, H, K), (N, HV, V), (N, HV)

    def tok(buf, n, s, *rest):
        """buf[n, s, *rest], or buf[n, *rest] without a token axis."""
        return buf[(n, s) + rest] if cfg.token_axis else buf[(n,) + rest]

    def col(c, i):
        """State column of thread column-lane c's i-th element."""
        return (c + TPR * (i // VW)) * VW + i % VW

    @T.macro
    def load_token(q, k, v, g, beta, dt_bias, vec, sq, gx, vb, n, s, h, hv, row, a_h):
        """Token s's inputs: the gate's argument a_h (g + dt_bias), v of this thread's row and
        sigmoid(beta), q and k with their squares."""
        for d in T.Parallel(K):
            gx[d] = a_h * (T.Cast(accum, tok(g, n, s, hv, d)) + dt_bias[hv, d])
        vb[0] = T.Cast(accum, tok(v, n, s, hv, row))
        vb[1] = _math.sigmoid(T.Cast(accum, tok(beta, n, s, hv)), fast)
        for i, d in T.Parallel(2, K):
            vec[i, d] = T.if_then_else(i == 0, T.Cast(accum, tok(q, n, s, h, d)), T.Cast(accum, tok(k, n, s, h, d)))
            sq[i, d] = vec[i, d] * vec[i, d]

    @T.prim_func
    def kda_decode(
        q: T.Tensor(qk_shape, cfg.in_dtype),
        k: T.Tensor(qk_shape, cfg.in_dtype),
        v: T.Tensor(vg_shape, cfg.in_dtype),
        g: T.Tensor(vg_shape, cfg.in_dtype),
        beta: T.Tensor(beta_shape, cfg.in_dtype),
        A_log: T.Tensor((HV,), "float32"),
        dt_bias: T.Tensor((HV, K), "float32"),
        state_indices: T.Tensor((N,), "int64"),
        lower_bound: T.float32,
        scale: T.float32,
        pool: T.Tensor((P, HV, V, K), cfg.state_dtype),
        o: T.Tensor(vg_shape, cfg.in_dtype),
    ):
        with T.Kernel(V // BV, HV, N, threads=NT) as (bv, hv, n):
            T.annotate_min_blocks_per_sm(cfg.min_blocks)
            tx = T.get_thread_binding()
            St = T.alloc_local((CPT,), accum)
            part = T.alloc_local((2,), accum)        # this thread's two row partial sums
            vb = T.alloc_local((2,), accum)          # v of its row and sigmoid(beta)
            vec = T.alloc_fragment((2, K), accum)
            sq = T.alloc_fragment((2, K), accum)
            nrm = T.alloc_fragment((2,), accum)
            gx = T.alloc_fragment((K,), accum)
            qk_s = T.alloc_shared((2, K), accum)
            dec_s = T.alloc_shared((K,), accum)

            if fast:
                T.import_source(_math.FAST_SOURCE)
            # in a register: inlined, q's and k's addresses each ran an int64 division
            h = T.alloc_var("int32", init=_math.gva_head(hv, H, HV))
            row = bv * BV + tx // TPR
            c = tx % TPR
            idx = state_indices[n]
            live = idx >= 0 and idx < T.Cast("int64", P)
            # Clamped so that the reads and writes below stay inside the pool for any index;
            # they run only when live.
            r = T.Cast("int32", T.max(T.min(idx, T.Cast("int64", P) - 1), T.int64(0)))
            a_h = _math.exp(A_log[hv], fast)

            # Token 0's loads go out before the pool row's, which waits on idx, and the decay is
            # formed before the norms' barriers: at N = 1 the kernel is a chain of DRAM round trips
            # (g read behind those barriers made a third one).
            load_token(q, k, v, g, beta, dt_bias, vec, sq, gx, vb, n, 0, h, hv, row, a_h)
            if live:
                for m in T.unroll(NVEC):
                    for e in T.vectorized(VW):
                        St[m * VW + e] = T.Cast(accum, pool[r, hv, row, (c + TPR * m) * VW + e])

            for s in T.serial(S):
                if s > 0:
                    load_token(q, k, v, g, beta, dt_bias, vec, sq, gx, vb, n, s, h, hv, row, a_h)
                for d in T.Parallel(K):
                    dec_s[d] = _math.exp2(lower_bound * _math.LOG2E * _math.sigmoid(gx[d], fast), fast)
                T.reduce_sum(sq, nrm, dim=1)
                for i, d in T.Parallel(2, K):
                    qk_s[i, d] = vec[i, d] * _math.rsqrt(nrm[i] + 1e-6, fast) * T.if_then_else(i == 0, scale, 1.0)

                part[0] = 0.0
                for i in T.unroll(CPT):
                    St[i] = St[i] * dec_s[col(c, i)]
                    part[0] = part[0] + St[i] * qk_s[1, col(c, i)]
                for w in T.unroll(TPR.bit_length() - 1):
                    part[0] = part[0] + T.shfl_xor(part[0], 1 << w)
                part[0] = vb[1] * (vb[0] - part[0])       # u of this row
                part[1] = 0.0
                for i in T.unroll(CPT):
                    St[i] = St[i] + part[0] * qk_s[1, col(c, i)]
                    part[1] = part[1] + St[i] * qk_s[0, col(c, i)]
                for w in T.unroll(TPR.bit_length() - 1):
                    part[1] = part[1] + T.shfl_xor(part[1], 1 << w)
                if c == 0:
                    if cfg.token_axis:
                        o[n, s, hv, row] = T.Cast(cfg.in_dtype, T.if_then_else(live, part[1], 0.0))
                    else:
                        o[n, hv, row] = T.Cast(cfg.in_dtype, T.if_then_else(live, part[1], 0.0))

            if live:
                for m in T.unroll(NVEC):
                    for e in T.vectorized(VW):
                        pool[r, hv, row, (c + TPR * m) * VW + e] = T.Cast(cfg.state_dtype, St[m * VW + e])

    return kda_decode
