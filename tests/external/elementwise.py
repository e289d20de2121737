"""Elementwise and cast kernels (TileLang examples/elementwise, examples/cast): a tiled add
through shared memory and per-token FP8 quantization with a row absmax."""
import tilelang.language as T

SOURCE = {
    "elementwise_add": "examples/elementwise/example_elementwise_add.py",
    "per_token_cast_fp8": "examples/cast/example_per_token_cast_to_fp8.py",
}


def elementwise_add():
    M, N = T.dynamic("M"), T.dynamic("N")
    BM, BN = 32, 32

    @T.prim_func
    def elementwise_add(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
                        C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_s = T.alloc_shared((BM, BN), "float32")
            B_s = T.alloc_shared((BM, BN), "float32")
            C_f = T.alloc_fragment((BM, BN), "float32")
            C_s = T.alloc_shared((BM, BN), "float32")
            T.copy(A[by * BM, bx * BN], A_s)
            T.copy(B[by * BM, bx * BN], B_s)
            for i, j in T.Parallel(BM, BN):
                C_f[i, j] = A_s[i, j] + B_s[i, j]
            T.copy(C_f, C_s)
            T.copy(C_s, C[by * BM, bx * BN])
    return elementwise_add


def per_token_cast_fp8():
    M, N = T.dynamic("M"), T.dynamic("N")
    BM, BN = 4, 128
    fp8_max = 448.0

    @T.prim_func
    def per_token_cast_fp8(X: T.Tensor((M, N), "bfloat16"), X_fp8: T.Tensor((M, N), "float8_e4m3fn"),
                           X_amax: T.Tensor((M, T.ceildiv(N, BN)), "float32")):
        with T.Kernel(T.ceildiv(M, BM), T.ceildiv(N, BN), threads=128) as (bx, by):
            y_l = T.alloc_fragment((BM, BN), "float32")
            y_amax = T.alloc_fragment((BM,), "float32")
            y_s = T.alloc_fragment((BM,), "float32")
            y_q = T.alloc_fragment((BM, BN), "float8_e4m3fn")
            y_qs = T.alloc_shared((BM, BN), "float8_e4m3fn")
            T.copy(X[bx * BM:(bx + 1) * BM, by * BN:(by + 1) * BN], y_l)
            T.reduce_absmax(y_l, y_amax, dim=1)
            for i in T.Parallel(BM):
                y_amax[i] = T.max(y_amax[i], 1e-4)
                y_s[i] = y_amax[i] / fp8_max
            for i, j in T.Parallel(BM, BN):
                y_q[i, j] = T.clamp(y_l[i, j] / y_s[i], -fp8_max, fp8_max)
            T.copy(y_q, y_qs)
            T.copy(y_s, X_amax[bx * BM:(bx + 1) * BM, by])
            T.copy(y_qs, X_fp8[bx * BM:(bx + 1) * BM, by * BN:(by + 1) * BN])
    return per_token_cast_fp8


KERNELS = {f.__name__: f for f in (elementwise_add, per_token_cast_fp8)}
PRECONDITIONS = {"elementwise_add": ["M >= 1", "N >= 1", "M * N <= 2**31 - 1"],
                 "per_token_cast_fp8": ["M >= 1", "N >= 1", "M * N <= 2**31 - 1"]}
BANK_BUDGET = {name: 32 for name in KERNELS}
WRITTEN_ONCE = {"elementwise_add": ["C"], "per_token_cast_fp8": ["X_fp8", "X_amax"]}
EXPECT = {name: None for name in KERNELS}
