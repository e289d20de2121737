"""GEMM family: tiled GEMM with a software pipeline, split-K with global atomics (scalar and
tile-wide), adapted to TileLang 0.1.15's explicit prim_func signatures with
symbolic M, N, K."""
import tilelang.language as T

SOURCE = {
    "gemm_pipelined": "examples/gemm/example_gemm.py",
    "gemm_splitk_atomic": "examples/gemm_splitk/example_tilelang_gemm_splitk.py",
    "gemm_splitk_tile_atomic": "examples/gemm_splitk/example_tilelang_gemm_splitk_vectorize_atomicadd.py",
}

BM, BN, BK = 128, 128, 32
SIZES = ["M >= 1", "N >= 1", "K >= 1", "M * K <= 2**31 - 1", "K * N <= 2**31 - 1", "M * N <= 2**31 - 1"]


def gemm_pipelined():
    # example_gemm.py: three-stage T.Pipelined over K, wgmma from shared tiles
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")

    @T.prim_func
    def gemm_pipelined(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                       C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            C_f = T.alloc_fragment((BM, BN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=3):
                T.copy(A[by * BM, k * BK], A_s)
                T.copy(B[k * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * BM, bx * BN])
    return gemm_pipelined


def gemm_splitk_atomic():
    # example_tilelang_gemm_splitk.py: each of SPLIT blocks along z adds its partial tile
    # into C with one atomic per element
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")
    SPLIT = 4

    @T.prim_func
    def gemm_splitk_atomic(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                           C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), SPLIT, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            C_f = T.alloc_fragment((BM, BN), "float32")
            ks = K // SPLIT
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(ks, BK), num_stages=0):
                T.copy(A[by * BM, bz * ks + ko * BK], A_s)
                T.copy(B[bz * ks + ko * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(BM, BN):
                T.atomic_add(C[by * BM + i, bx * BN + j], C_f[i, j])
    return gemm_splitk_atomic


def gemm_splitk_tile_atomic():
    # example_tilelang_gemm_splitk_vectorize_atomicadd.py: the whole tile in one atomic_add
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")
    SPLIT = 4

    @T.prim_func
    def gemm_splitk_tile_atomic(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                                C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), SPLIT, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            C_f = T.alloc_fragment((BM, BN), "float32")
            ks = K // SPLIT
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(ks, BK), num_stages=0):
                T.copy(A[by * BM, bz * ks + ko * BK], A_s)
                T.copy(B[bz * ks + ko * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.atomic_add(C[by * BM, bx * BN], C_f)
    return gemm_splitk_tile_atomic


KERNELS = {f.__name__: f for f in (gemm_pipelined, gemm_splitk_atomic, gemm_splitk_tile_atomic)}
PRECONDITIONS = {name: SIZES for name in KERNELS}
BANK_BUDGET = {name: 32 for name in KERNELS}
WRITTEN_ONCE = {"gemm_pipelined": ["C"]}   # the split-K forms accumulate C with atomics
EXPECT = {name: None for name in KERNELS}
