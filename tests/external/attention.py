"""Flash attention forward (TileLang examples/flash_attention): online softmax over K/V tiles
with two GEMMs per tile, cross-warp row reductions (T.reduce_max / T.reduce_sum) and a
software pipeline; MHA, GQA and the variable-length form with cu_seqlens."""
import tilelang.language as T

SOURCE = {
    "mha_fwd_bshd": "examples/flash_attention/example_mha_fwd_bshd.py",
    "gqa_fwd_bshd": "examples/flash_attention/example_gqa_fwd_bshd.py",
    "mha_fwd_varlen": "examples/flash_attention/example_mha_fwd_varlen.py",
}

D = 128
LOG2E = 1.44269504




def mha_fwd_bshd():
    # causal MHA, one program per (query tile, head, batch); T.Pipelined(num_stages=1)
    B, S, H = T.dynamic("B"), T.dynamic("S"), T.dynamic("H")
    BM, BN = 64, 64
    scale = (1.0 / D) ** 0.5 * LOG2E

    @T.prim_func
    def mha_fwd_bshd(Q: T.Tensor((B, S, H, D), "float16"), K: T.Tensor((B, S, H, D), "float16"),
                     V: T.Tensor((B, S, H, D), "float16"), O: T.Tensor((B, S, H, D), "float16")):
        with T.Kernel(T.ceildiv(S, BM), H, B, threads=128) as (bx, by, bz):
            Q_s = T.alloc_shared((BM, D), "float16")
            K_s = T.alloc_shared((BN, D), "float16")
            V_s = T.alloc_shared((BN, D), "float16")
            O_s = T.alloc_shared((BM, D), "float16")
            acc_s = T.alloc_fragment((BM, BN), "float32")
            acc_s_cast = T.alloc_fragment((BM, BN), "float16")
            acc_o = T.alloc_fragment((BM, D), "float32")
            m = T.alloc_fragment((BM,), "float32")
            m_prev = T.alloc_fragment((BM,), "float32")
            r = T.alloc_fragment((BM,), "float32")
            ssum = T.alloc_fragment((BM,), "float32")
            lse = T.alloc_fragment((BM,), "float32")
            T.copy(Q[bz, bx * BM:(bx + 1) * BM, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(lse, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.min(T.ceildiv(S, BN), T.ceildiv((bx + 1) * BM, BN)), num_stages=1):
                T.copy(K[bz, k * BN:(k + 1) * BN, by, :], K_s)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.if_then_else(bx * BM + i >= k * BN + j, 0, -T.infinity("float32"))
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(BM):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(BM):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, ssum, dim=1)
                for i in T.Parallel(BM):
                    lse[i] = lse[i] * r[i] + ssum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(BM, D):
                    acc_o[i, j] *= r[i]
                T.copy(V[bz, k * BN:(k + 1) * BN, by, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(BM, D):
                acc_o[i, j] /= lse[i]
            T.copy(acc_o, O_s)
            T.copy(O_s, O[bz, bx * BM:(bx + 1) * BM, by, :])
    return mha_fwd_bshd


def gqa_fwd_bshd():
    # grouped-query attention, non-causal, 128x128 tiles on 256 threads, 2-stage pipeline
    B, S, H = T.dynamic("B"), T.dynamic("S"), T.dynamic("H")
    G = 4
    BM, BN = 128, 128
    scale = (1.0 / D) ** 0.5 * LOG2E

    @T.prim_func
    def gqa_fwd_bshd(Q: T.Tensor((B, S, H * G, D), "float16"), K: T.Tensor((B, S, H, D), "float16"),
                     V: T.Tensor((B, S, H, D), "float16"), O: T.Tensor((B, S, H * G, D), "float16")):
        with T.Kernel(T.ceildiv(S, BM), H * G, B, threads=256) as (bx, by, bz):
            Q_s = T.alloc_shared((BM, D), "float16")
            K_s = T.alloc_shared((BN, D), "float16")
            V_s = T.alloc_shared((BN, D), "float16")
            O_s = T.alloc_shared((BM, D), "float16")
            acc_s = T.alloc_fragment((BM, BN), "float32")
            acc_s_cast = T.alloc_fragment((BM, BN), "float16")
            acc_o = T.alloc_fragment((BM, D), "float32")
            m = T.alloc_fragment((BM,), "float32")
            m_prev = T.alloc_fragment((BM,), "float32")
            r = T.alloc_fragment((BM,), "float32")
            ssum = T.alloc_fragment((BM,), "float32")
            lse = T.alloc_fragment((BM,), "float32")
            T.copy(Q[bz, bx * BM:(bx + 1) * BM, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(lse, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(S, BN), num_stages=2):
                T.copy(K[bz, k * BN:(k + 1) * BN, by // G, :], K_s)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.if_then_else(k * BN + j >= S, -T.infinity("float32"), 0)
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(BM):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(BM):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, ssum, dim=1)
                for i in T.Parallel(BM):
                    lse[i] = lse[i] * r[i] + ssum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(BM, D):
                    acc_o[i, j] *= r[i]
                T.copy(V[bz, k * BN:(k + 1) * BN, by // G, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(BM, D):
                acc_o[i, j] /= lse[i]
            T.copy(acc_o, O_s)
            T.copy(O_s, O[bz, bx * BM:(bx + 1) * BM, by, :])
    return gqa_fwd_bshd


def mha_fwd_varlen():
    # packed sequences: cu_seqlens_q/k give each batch entry's token range; tiles that run past
    # a sequence are masked in the scores and read (in bounds) from the next sequence
    UQ, UKV, H, NB1 = T.dynamic("UQ"), T.dynamic("UKV"), T.dynamic("H"), T.dynamic("N1")
    BM, BN = 64, 64
    scale = (1.0 / D) ** 0.5 * LOG2E

    @T.prim_func
    def mha_fwd_varlen(Q: T.Tensor((UQ, H, D), "float16"), K: T.Tensor((UKV, H, D), "float16"),
                       V: T.Tensor((UKV, H, D), "float16"), cu_seqlens_q: T.Tensor((NB1,), "int32"),
                       cu_seqlens_k: T.Tensor((NB1,), "int32"), max_seqlen_q: T.int32,
                       O: T.Tensor((UQ, H, D), "float16")):
        with T.Kernel(T.ceildiv(max_seqlen_q, BM), H, NB1 - 1, threads=128) as (bx, by, bz):
            Q_s = T.alloc_shared((BM, D), "float16")
            K_s = T.alloc_shared((BN, D), "float16")
            V_s = T.alloc_shared((BN, D), "float16")
            O_s = T.alloc_shared((BM, D), "float16")
            acc_s = T.alloc_fragment((BM, BN), "float32")
            acc_s_cast = T.alloc_fragment((BM, BN), "float16")
            acc_o = T.alloc_fragment((BM, D), "float32")
            m = T.alloc_fragment((BM,), "float32")
            m_prev = T.alloc_fragment((BM,), "float32")
            r = T.alloc_fragment((BM,), "float32")
            ssum = T.alloc_fragment((BM,), "float32")
            lse = T.alloc_fragment((BM,), "float32")
            q0 = cu_seqlens_q[bz]
            k0 = cu_seqlens_k[bz]
            q_len = cu_seqlens_q[bz + 1] - q0
            k_len = cu_seqlens_k[bz + 1] - k0
            T.copy(Q[q0 + bx * BM:q0 + bx * BM + BM, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(lse, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(k_len, BN), num_stages=1):
                T.copy(K[k0 + k * BN:k0 + k * BN + BN, by, :], K_s)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.if_then_else(bx * BM + i >= q_len or k * BN + j >= k_len, -1e9, 0)
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(BM):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(BM):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, ssum, dim=1)
                for i in T.Parallel(BM):
                    lse[i] = lse[i] * r[i] + ssum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(BM, D):
                    acc_o[i, j] *= r[i]
                T.copy(V[k0 + k * BN:k0 + k * BN + BN, by, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(BM, D):
                acc_o[i, j] /= lse[i]
            T.copy(acc_o, O_s)
            for i, d in T.Parallel(BM, D):
                if bx * BM + i < q_len:
                    O[q0 + bx * BM + i, by, d] = O_s[i, d]
    return mha_fwd_varlen


KERNELS = {f.__name__: f for f in (mha_fwd_bshd, gqa_fwd_bshd, mha_fwd_varlen)}
_SIZES = ["B >= 1", "S >= 1", "H >= 1", "B * S * H * 128 <= 2**31 - 1"]
PRECONDITIONS = {
    "mha_fwd_bshd": _SIZES,
    "gqa_fwd_bshd": _SIZES + ["B * S * H * 4 * 128 <= 2**31 - 1"],
    "mha_fwd_varlen": ["N1 >= 2", "N1 <= 2**20", "H >= 1", "UQ >= 1", "UKV >= 1", "UQ * H * 128 <= 2**31 - 1",
                       "UKV * H * 128 <= 2**31 - 1", "max_seqlen_q >= 1", "max_seqlen_q <= UQ"],
}
BANK_BUDGET = {name: 32 for name in KERNELS}
MONOTONE = {"cu_seqlens_q": ("N1", "UQ"), "cu_seqlens_k": ("N1", "UKV")}
WRITTEN_ONCE = {name: ["O"] for name in KERNELS}   # barriers.written_once on upstream outputs
EXPECT = {name: None for name in KERNELS}
# A true finding: TileLang's warp specialization waits for the Q tile's TMA inside the K/V loop
# (`if k == 0: wait`). A sequence with no keys (cu_seqlens_k[b + 1] == cu_seqlens_k[b]) runs the
# loop zero times, so the consumer never waits, and its epilogue stores to O_s (which TileLang
# placed on Q_s's bytes) while the Q TMA may still be writing them.
EXPECT["mha_fwd_varlen"] = ("barriers.race", "Q_s", "empty key sequence: the Q tile's TMA is never waited for")
