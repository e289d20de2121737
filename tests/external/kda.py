"""Chunked gated delta rule / KDA kernels (TileLang examples/kda): the inter-chunk state
recurrence, the WY representation (W = A diag(beta) k exp(g), U = A diag(beta) v) and the
chunk output. B, S, H are symbolic; S is a multiple of the chunk where the example assumes it."""
import tilelang.language as T

SOURCE = {
    "kda_chunk_delta_h_fwd": "examples/kda/chunk_delta_h_fwd.py",
    "kda_wy_fast": "examples/kda/wy_fast.py",
    "kda_chunk_o": "examples/kda/chunk_o.py",
}

DK = DV = 128
C = 64


def kda_chunk_delta_h_fwd():
    # state h [DK, block_DV] in a fragment, chunk by chunk: stores h, V_new = U - W h,
    # h = h * exp2(g_last) + K^T V_new; initial and final state
    B, S, H = T.dynamic("B"), T.dynamic("S"), T.dynamic("H")
    BV = 32
    NT = T.ceildiv(S, C)

    @T.prim_func
    def kda_chunk_delta_h_fwd(K: T.Tensor((B, S, H, DK), "bfloat16"), W: T.Tensor((B, S, H, DK), "bfloat16"),
                              U: T.Tensor((B, S, H, DV), "bfloat16"), GK: T.Tensor((B, S, H, DK), "float32"),
                              h0: T.Tensor((B, H, DK, DV), "bfloat16"),
                              h: T.Tensor((B, NT, H, DK, DV), "bfloat16"),
                              ht: T.Tensor((B, H, DK, DV), "float32"),
                              V_new: T.Tensor((B, S, H, DV), "bfloat16")):
        with T.Kernel(T.ceildiv(DV, BV), B * H, threads=128) as (bv, bbh):
            bb, bh = bbh // H, bbh % H
            h_s = T.alloc_shared((DK, BV), "bfloat16")
            h_f = T.alloc_fragment((DK, BV), "float32")
            U_s = T.alloc_shared((C, BV), "bfloat16")
            U_f = T.alloc_fragment((C, BV), "float32")
            W_s = T.alloc_shared((C, DK), "bfloat16")
            Vn_f = T.alloc_fragment((C, BV), "float32")
            Vn_s = T.alloc_shared((C, BV), "bfloat16")
            K_s = T.alloc_shared((C, DK), "bfloat16")
            G_s = T.alloc_shared((DK,), "float32")
            T.copy(h0[bb, bh, 0:DK, bv * BV:(bv + 1) * BV], h_s)
            T.copy(h_s, h_f)
            for i_s in T.Pipelined(T.ceildiv(S, C), num_stages=1):
                T.copy(h_s, h[bb, i_s, bh, :, bv * BV:(bv + 1) * BV])
                T.copy(W[bb, i_s * C:(i_s + 1) * C, bh, :], W_s)
                T.gemm(W_s, h_s, Vn_f, clear_accum=True)
                T.copy(U[bb, i_s * C:(i_s + 1) * C, bh, bv * BV:(bv + 1) * BV], U_s)
                T.copy(U_s, U_f)
                for i, j in T.Parallel(C, BV):
                    Vn_f[i, j] = -Vn_f[i, j] + U_f[i, j]
                T.copy(Vn_f, Vn_s)
                T.copy(Vn_s, V_new[bb, i_s * C:(i_s + 1) * C, bh, bv * BV:(bv + 1) * BV])
                T.copy(K[bb, i_s * C:(i_s + 1) * C, bh, 0:DK], K_s)
                T.copy(GK[bb, (i_s + 1) * C - 1, bh, :], G_s)
                for i, j in T.Parallel(DK, BV):
                    h_f[i, j] *= T.exp2(G_s[i])
                T.copy(Vn_f, Vn_s)
                T.gemm(K_s, Vn_s, h_f, transpose_A=True)
                T.copy(h_f, h_s)
            T.copy(h_f, ht[bb, bh, 0:DK, bv * BV:(bv + 1) * BV])
    return kda_chunk_delta_h_fwd


def kda_wy_fast():
    # W = A (beta k exp2(g)), U = A (beta v), KG = k exp2(g_last - g), over 32-wide slices
    B, S, H = T.dynamic("B"), T.dynamic("S"), T.dynamic("H")
    BK = BV = 32

    @T.prim_func
    def kda_wy_fast(K: T.Tensor((B, S, H, DK), "bfloat16"), V: T.Tensor((B, S, H, DV), "bfloat16"),
                    Beta: T.Tensor((B, S, H), "bfloat16"), G: T.Tensor((B, S, H, DK), "float32"),
                    A: T.Tensor((B, S, H, C), "bfloat16"), W: T.Tensor((B, S, H, DK), "bfloat16"),
                    U: T.Tensor((B, S, H, DV), "bfloat16"), KG: T.Tensor((B, S, H, DK), "bfloat16")):
        with T.Kernel(T.ceildiv(S, C), B * H, threads=128) as (bs, bbh):
            bb, bh = bbh // H, bbh % H
            Beta_s = T.alloc_shared((C,), "bfloat16", scope="shared")
            K_s = T.alloc_shared((C, BK), "bfloat16")
            V_s = T.alloc_shared((C, BV), "bfloat16")
            G_s = T.alloc_shared((C, BK), "float32")
            A_s = T.alloc_shared((C, C), "bfloat16")
            W_f = T.alloc_fragment((C, BK), "float32")
            U_f = T.alloc_fragment((C, BV), "float32")
            W_s = T.alloc_shared((C, BK), "bfloat16")
            U_s = T.alloc_shared((C, BV), "bfloat16")
            WB_s = T.alloc_shared((C, BK), "bfloat16")
            UB_s = T.alloc_shared((C, BV), "bfloat16")
            Gn_s = T.alloc_shared((BK,), "float32")
            KG_s = T.alloc_shared((C, BK), "bfloat16")
            T.disable_warp_group_reg_alloc()
            for i in T.Parallel(C):
                Beta_s[i] = Beta[bb, bs * C + i, bh]
            T.copy(A[bb, bs * C:(bs + 1) * C, bh, :], A_s)
            for i_v in T.Pipelined(T.ceildiv(DV, BV), num_stages=2):
                T.copy(V[bb, bs * C:(bs + 1) * C, bh, i_v * BV:(i_v + 1) * BV], V_s)
                for i, j in T.Parallel(C, BV):
                    UB_s[i, j] = V_s[i, j] * Beta_s[i]
                T.gemm(A_s, UB_s, U_f, clear_accum=True)
                T.copy(U_f, U_s)
                T.copy(U_s, U[bb, bs * C:(bs + 1) * C, bh, i_v * BV:(i_v + 1) * BV])
            for i_k in T.Pipelined(T.ceildiv(DK, BK), num_stages=2):
                T.copy(K[bb, bs * C:(bs + 1) * C, bh, i_k * BK:(i_k + 1) * BK], K_s)
                T.copy(G[bb, bs * C:(bs + 1) * C, bh, i_k * BK:(i_k + 1) * BK], G_s)
                for i, j in T.Parallel(C, BK):
                    WB_s[i, j] = K_s[i, j] * Beta_s[i] * T.exp2(G_s[i, j])
                T.gemm(A_s, WB_s, W_f, clear_accum=True)
                T.copy(W_f, W_s)
                T.copy(W_s, W[bb, bs * C:(bs + 1) * C, bh, i_k * BK:(i_k + 1) * BK])
                T.copy(G[bb, (bs + 1) * C - 1, bh, i_k * BK:(i_k + 1) * BK], Gn_s)
                for i, j in T.Parallel(C, BK):
                    KG_s[i, j] = K_s[i, j] * T.exp2(Gn_s[j] - G_s[i, j])
                T.copy(KG_s, KG[bb, bs * C:(bs + 1) * C, bh, i_k * BK:(i_k + 1) * BK])
    return kda_wy_fast


def kda_chunk_o():
    # O = (q exp2(g)) h + tril(A) v, per (value block, chunk, batch*head)
    B, S, H = T.dynamic("B"), T.dynamic("S"), T.dynamic("H")
    BK, BV = 32, 32
    NT = T.ceildiv(S, C)

    @T.prim_func
    def kda_chunk_o(Q: T.Tensor((B, S, H, DK), "bfloat16"), V: T.Tensor((B, S, H, DV), "bfloat16"),
                    GK: T.Tensor((B, S, H, DK), "float32"), A: T.Tensor((B, S, H, C), "bfloat16"),
                    HID: T.Tensor((B, NT, H, DK, DV), "bfloat16"), O: T.Tensor((B, S, H, DV), "bfloat16")):
        with T.Kernel(T.ceildiv(DV, BV), T.ceildiv(S, C), B * H, threads=128) as (bv, bs, bbh):
            bb, bh = bbh // H, bbh % H
            Q_s = T.alloc_shared((C, BK), "bfloat16")
            V_s = T.alloc_shared((C, BV), "bfloat16")
            H_s = T.alloc_shared((BK, BV), "bfloat16")
            A_s = T.alloc_shared((C, C), "bfloat16")
            O_s = T.alloc_shared((C, BV), "bfloat16")
            O_f = T.alloc_fragment((C, BV), "float32")
            GK_s = T.alloc_shared((C, BK), "float32")
            GQ_s = T.alloc_shared((C, BK), "bfloat16")
            T.clear(O_f)
            for i_k in T.Pipelined(T.ceildiv(DK, BK), num_stages=2):
                T.copy(Q[bb, bs * C:(bs + 1) * C, bh, i_k * BK:(i_k + 1) * BK], Q_s)
                T.copy(HID[bb, bs, bh, i_k * BK:(i_k + 1) * BK, bv * BV:(bv + 1) * BV], H_s)
                T.copy(GK[bb, bs * C:(bs + 1) * C, bh, i_k * BK:(i_k + 1) * BK], GK_s)
                for i, j in T.Parallel(C, BK):
                    GQ_s[i, j] = Q_s[i, j] * T.exp2(GK_s[i, j])
                T.gemm(GQ_s, H_s, O_f)
            T.copy(V[bb, bs * C:(bs + 1) * C, bh, bv * BV:(bv + 1) * BV], V_s)
            T.copy(A[bb, bs * C:(bs + 1) * C, bh, 0:C], A_s)
            for i, j in T.Parallel(C, C):
                A_s[i, j] = T.if_then_else(i < j, 0, A_s[i, j])
            T.gemm(A_s, V_s, O_f)
            T.copy(O_f, O_s)
            T.copy(O_s, O[bb, bs * C:(bs + 1) * C, bh, bv * BV:(bv + 1) * BV])
    return kda_chunk_o


KERNELS = {f.__name__: f for f in (kda_chunk_delta_h_fwd, kda_wy_fast, kda_chunk_o)}
_SIZES = ["B >= 1", "H >= 1", "S >= 64", "S % 64 == 0", "B * S * H * 128 <= 2**31 - 1"]
PRECONDITIONS = {name: _SIZES for name in KERNELS}
BANK_BUDGET = {name: 32 for name in KERNELS}
WRITTEN_ONCE = {"kda_chunk_delta_h_fwd": ["h", "ht", "V_new"], "kda_wy_fast": ["W", "U", "KG"], "kda_chunk_o": ["O"]}
EXPECT = {name: None for name in KERNELS}
# A true finding: TileLang's warp specialization moves the initial-state TMA (h0 -> h_s) to the
# prologue and waits for it inside the chunk loop (`if i_s == 0: wait`), but the consumer reads
# h_s into its fragment (T.copy(h_s, h_f)) before the loop: it may read the tile before it lands.
EXPECT["kda_chunk_delta_h_fwd"] = ("barriers.race", "h_s", "h_s read before the wait for its TMA")
