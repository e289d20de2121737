"""Row reductions (TileLang examples/norm, examples/online_softmax): RMS norm in one pass and
split over K tiles, LayerNorm forward, and the two-pass online softmax; cross-thread reductions
go through TileLang's AllReduce."""
import tilelang.language as T

SOURCE = {
    "rms_norm": "examples/norm/rms_norm.py",
    "rms_norm_splitk": "examples/norm/rms_norm.py",
    "layernorm_fwd": "examples/norm/layernorm.py",
    "online_softmax": "examples/online_softmax/online_softmax.py",
}
NO_TMA = {"tl.disable_tma_lower": True}


def rms_norm():
    # rms_norm: a whole row in fragments, blk_m = 1, N fixed at 1024
    M = T.dynamic("M")
    N, BM = 1024, 1

    @T.prim_func
    def rms_norm(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            A_f = T.alloc_fragment((BM, N), "float32")
            A_p = T.alloc_fragment((BM, N), "float32")
            s = T.alloc_fragment((BM,), "float32")
            T.copy(A[bx * BM:(bx + 1) * BM, :], A_f)
            for i, j in T.Parallel(BM, N):
                A_p[i, j] = A_f[i, j] * A_f[i, j]
            T.reduce_sum(A_p, s, dim=1)
            for i in T.Parallel(BM):
                s[i] = T.rsqrt(s[i] / N + 1e-12)
            for i, j in T.Parallel(BM, N):
                A_f[i, j] *= s[i]
            T.copy(A_f, B[bx * BM:(bx + 1) * BM, :])
    return rms_norm


def rms_norm_splitk():
    # rms_norm_splitk: sum of squares over K tiles, then a second pass that scales each tile
    M, N = T.dynamic("M"), T.dynamic("N")
    BM, BK = 1, 512

    @T.prim_func
    def rms_norm_splitk(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            A_s = T.alloc_shared((BM, BK), "float32")
            A_f = T.alloc_fragment((BM, BK), "float32")
            s = T.alloc_fragment((BM,), "float32")
            nk = T.ceildiv(N, BK)
            T.clear(A_f)
            for k in T.serial(nk):
                T.copy(A[bx * BM, k * BK], A_s)
                for i, j in T.Parallel(BM, BK):
                    A_f[i, j] += A_s[i, j] * A_s[i, j]
            T.reduce_sum(A_f, s, dim=1)
            for i in T.Parallel(BM):
                s[i] = T.rsqrt(s[i] / N + 1e-12)
            for k in T.serial(nk):
                T.copy(A[bx * BM, (nk - 1 - k) * BK], A_s)
                for i, j in T.Parallel(BM, BK):
                    A_s[i, j] *= s[i]
                T.copy(A_s, B[bx * BM, (nk - 1 - k) * BK])
    return rms_norm_splitk


def layernorm_fwd():
    # _layernorm_fwd: mean and rstd by two reductions, gamma/beta from shared, D = 2048
    N = T.dynamic("N")
    D = 2048

    @T.prim_func
    def layernorm_fwd(X: T.Tensor((N, D), "bfloat16"), gamma: T.Tensor((D,), "bfloat16"),
                      beta: T.Tensor((D,), "bfloat16"), Y: T.Tensor((N, D), "bfloat16"),
                      Mean: T.Tensor((N,), "float32"), Rstd: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=256) as bx:
            X_s = T.alloc_shared((1, D), "bfloat16")
            G_s = T.alloc_shared((D,), "bfloat16")
            B_s = T.alloc_shared((D,), "bfloat16")
            X_f = T.alloc_fragment((1, D), "float32")
            X2_f = T.alloc_fragment((1, D), "float32")
            s1 = T.alloc_fragment((1,), "float32")
            s2 = T.alloc_fragment((1,), "float32")
            mu = T.alloc_fragment((1,), "float32")
            rs = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0], X_s)
            T.copy(gamma, G_s)
            T.copy(beta, B_s)
            for i, j in T.Parallel(1, D):
                X_f[i, j] = T.Cast("float32", X_s[i, j])
            for i, j in T.Parallel(1, D):
                X2_f[i, j] = X_f[i, j] * X_f[i, j]
            T.reduce_sum(X_f, s1, dim=1)
            T.reduce_sum(X2_f, s2, dim=1)
            for i in T.Parallel(1):
                mu[i] = s1[i] / D
                rs[i] = T.rsqrt(s2[i] / D - mu[i] * mu[i] + 1e-5)
                Mean[bx + i] = mu[i]
                Rstd[bx + i] = rs[i]
            for i, j in T.Parallel(1, D):
                X_s[i, j] = T.Cast("bfloat16", (X_f[i, j] - mu[i]) * rs[i] * T.Cast("float32", G_s[j])
                                   + T.Cast("float32", B_s[j]))
            T.copy(X_s, Y[bx, 0])
    return layernorm_fwd


def online_softmax():
    # softmax_kernel: log-sum-exp over N tiles, then a second pass writes exp2(x - lse)
    M = T.dynamic("M")
    N, BN = 8192, 8192
    scale = 1.44269504

    @T.prim_func
    def online_softmax(X: T.Tensor((M, N), "float16"), Y: T.Tensor((M, N), "float16")):
        with T.Kernel(M, threads=128) as i_m:
            x = T.alloc_fragment((1, BN), "float16")
            y = T.alloc_fragment((1, BN), "float16")
            lse = T.alloc_fragment((1,), "float32")
            mx = T.alloc_fragment((1,), "float16")
            ex = T.alloc_fragment((1, BN), "float32")
            se = T.alloc_fragment((1,), "float32")
            T.fill(lse, -T.infinity("float32"))
            for i_n in T.Pipelined(T.ceildiv(N, BN)):
                T.copy(X[i_m, i_n * BN], x)
                T.reduce_max(x, mx, dim=1, clear=True)
                for i, j in T.Parallel(1, BN):
                    ex[i, j] = T.exp2(x[i, j] * scale - mx[i] * scale)
                T.reduce_sum(ex, se, dim=1, clear=True)
                for i in T.Parallel(1):
                    lse[i] = mx[i] * scale + T.log2(T.exp2(lse[i] - mx[i] * scale) + se[i])
            for i_n in T.Pipelined(T.ceildiv(N, BN)):
                T.copy(X[i_m, i_n * BN], x)
                for i, j in T.Parallel(1, BN):
                    y[i, j] = T.exp2(x[i, j] * scale - lse[i])
                T.copy(y, Y[i_m, i_n * BN])
    return online_softmax


KERNELS = {f.__name__: f for f in (rms_norm, rms_norm_splitk, layernorm_fwd, online_softmax)}
PASS_CONFIGS = {"rms_norm": NO_TMA, "rms_norm_splitk": NO_TMA}
PRECONDITIONS = {
    "rms_norm": ["M >= 1", "M * 1024 <= 2**31 - 1"],
    "rms_norm_splitk": ["M >= 1", "N >= 1", "M * N <= 2**31 - 1"],
    "layernorm_fwd": ["N >= 1", "N * 2048 <= 2**31 - 1"],
    "online_softmax": ["M >= 1", "M * 8192 <= 2**31 - 1"],
}
BANK_BUDGET = {name: 32 for name in KERNELS}
EXPECT = {name: None for name in KERNELS}
# Every thread of the block stores the row's mean and 1/std to Mean[bx] and Rstd[bx], unordered:
# the same values, but plain stores of one address by several threads of a block are a data race
# (found since verify 2.6.0, which races a block's threads on global memory too).
EXPECT["layernorm_fwd"] = ("barriers.race", "data race on Mean: write (store) / write (store)",
                           "every thread stores the row's mean to Mean[bx], unordered")
