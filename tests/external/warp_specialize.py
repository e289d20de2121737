"""Hopper warp specialization by hand: T.ws role blocks with explicit mbarrier protocols
(TileLang examples/warp_specialize), and TileLang's own warp-specialized lowering of a split
role GEMM. M, N, K are symbolic with K a multiple of the K tile."""
import tilelang.language as T

SOURCE = {
    "ws_barrierpipe_stage2": "examples/warp_specialize/example_warp_specialize_gemm_barrierpipe_stage2.py",
    "ws_copy_0_gemm_1": "examples/warp_specialize/example_warp_specialize_gemm_copy_0_gemm_1.py",
    "ws_copy_1_gemm_0": "examples/warp_specialize/example_warp_specialize_gemm_copy_1_gemm_0.py",
    "ws_copy_gemm_0_1": "examples/warp_specialize/example_warp_specialize_gemm_copy_gemm_0_1.py",
    "ws_softpipe_stage2": "examples/warp_specialize/example_warp_specialize_gemm_softpipe_stage2.py",
}

BM, BN, BK = 128, 128, 64
SIZES = ["M >= 1", "N >= 1", "K >= 64", "K % 64 == 0", "M * K <= 2**31 - 1", "K * N <= 2**31 - 1",
         "M * N <= 2**31 - 1"]


def ws_barrierpipe_stage2():
    # two stages, four mbarriers: [full0, full1, empty0, empty1]; the producer waits on the
    # stage's empty barrier with the flipped parity, the consumer on its full barrier
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")
    S = 2

    @T.prim_func
    def ws_barrierpipe_stage2(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                              C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=256) as (bx, by):
            A_s = T.alloc_shared((S, BM, BK), "float16")
            B_s = T.alloc_shared((S, BK, BN), "float16")
            C_f = T.alloc_fragment((BM, BN), "float32")
            mbars = T.alloc_barrier([128, 128] * S)
            with T.ws(0):
                T.clear(C_f)
            for ko in range(T.ceildiv(K, BK)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbars[ko % S + S], ((ko // S) % S) ^ 1)
                    T.tma_copy(A[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK], A_s[ko % S, :, :],
                               barrier=mbars[ko % S])
                    T.tma_copy(B[ko * BK:(ko + 1) * BK, bx * BN:(bx + 1) * BN], B_s[ko % S, :, :],
                               barrier=mbars[ko % S])
                    T.mbarrier_arrive(mbars[ko % S])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbars[ko % S], (ko // S) % S)
                    T.gemm(A_s[ko % S, :, :], B_s[ko % S, :, :], C_f)
                    T.mbarrier_arrive(mbars[ko % S + S])
            with T.ws(0):
                T.copy(C_f, C[by * BM, bx * BN])
    return ws_barrierpipe_stage2


def _ws_single_buffer(name, stages, producer, consumer):
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=256) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            C_f = T.alloc_fragment((BM, BN), "float32")
            data_is_ready = T.alloc_barrier(arrive_count=128)
            compute_is_done = T.alloc_barrier(arrive_count=128)
            with T.ws(consumer):
                T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=stages):
                with T.ws(producer):
                    T.barrier_wait(compute_is_done, (ko + 1) % 2)
                    T.tma_copy(A[by * BM, ko * BK], A_s, barrier=data_is_ready)
                    T.tma_copy(B[ko * BK, bx * BN], B_s, barrier=data_is_ready)
                    T.barrier_arrive(data_is_ready)
                with T.ws(consumer):
                    T.barrier_wait(data_is_ready, ko % 2)
                    T.gemm(A_s, B_s, C_f)
                    T.barrier_arrive(compute_is_done)
            with T.ws(consumer):
                T.copy(C_f, C[by * BM, bx * BN])
    return kern.with_attr("global_symbol", name)


def ws_copy_0_gemm_1():
    # warpgroup 0 copies, warpgroup 1 computes; one buffer handed over through two mbarriers
    return _ws_single_buffer("ws_copy_0_gemm_1", 0, 0, 1)


def ws_copy_1_gemm_0():
    return _ws_single_buffer("ws_copy_1_gemm_0", 2, 1, 0)


def ws_softpipe_stage2():
    # as copy_1_gemm_0 with a two-stage software pipeline annotation on the K loop
    return _ws_single_buffer("ws_softpipe_stage2", 2, 1, 0)


def ws_copy_gemm_0_1():
    # both warpgroups copy and compute their half of N; TileLang inserts the synchronization
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")
    G = 2

    @T.prim_func
    def ws_copy_gemm_0_1(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                         C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128 * G) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16", "shared")
            B_s0 = T.alloc_shared((BK, BN // G), "float16", "shared")
            B_s1 = T.alloc_shared((BK, BN // G), "float16", "shared")
            C_f0 = T.alloc_fragment((BM, BN // G), "float32")
            C_f1 = T.alloc_fragment((BM, BN // G), "float32")
            with T.ws(1):
                T.clear(C_f1)
            with T.ws(0):
                T.clear(C_f0)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=0):
                T.copy(A[by * BM, ko * BK], A_s)
                with T.ws(1):
                    T.copy(B[ko * BK, bx * BN], B_s1)
                    T.gemm(A_s, B_s1, C_f1)
                with T.ws(0):
                    T.copy(B[ko * BK, bx * BN + BN // G], B_s0)
                    T.gemm(A_s, B_s0, C_f0)
            with T.ws(1):
                T.copy(C_f1, C[by * BM, bx * BN])
            with T.ws(0):
                T.copy(C_f0, C[by * BM, bx * BN + BN // G])
    return ws_copy_gemm_0_1


KERNELS = {f.__name__: f for f in (ws_barrierpipe_stage2, ws_copy_0_gemm_1, ws_copy_1_gemm_0, ws_copy_gemm_0_1,
                                   ws_softpipe_stage2)}
PRECONDITIONS = {name: SIZES for name in KERNELS}
BANK_BUDGET = {name: 32 for name in KERNELS}
WRITTEN_ONCE = {name: ["C"] for name in KERNELS}
EXPECT = {name: None for name in KERNELS}
# A true finding: in TileLang 0.1.15's lowering of example_warp_specialize_gemm_copy_gemm_0_1,
# all 256 threads store the next A tile into A_s at the top of iteration ko + 1 while the other
# warpgroup's wgmma of iteration ko may still be reading A_s: the block-wide barrier TileLang
# inserts sits after those stores (RAW is synchronized, the WAR across iterations is not).
EXPECT["ws_copy_gemm_0_1"] = ("barriers.race", "A_s", "WAR on A_s across iterations: no barrier between the "
                              "other warpgroup's wgmma of iteration ko and the stores of iteration ko + 1")
