"""TileLang's persistent warp-specialized GEMM (examples/gemm/example_gemm_persistent.py,
T.Persistent): a fixed grid walks the output tiles; TileLang keeps the mbarrier phases in
counter registers (producer_phase_cnt, consumer_phase_cnt) across the tile and K loops.

The phase accounting and the parity proofs go through the counter registers (verify.phases:
lockstep counting); some race queries still exceed the solver budget (UNKNOWN, never FAILED).
Slow (minutes): marked slow in tests/test_verify_external.py."""
import tilelang.language as T

SOURCE = {"gemm_persistent": "examples/gemm/example_gemm_persistent.py"}

BM, BN, BK = 128, 128, 32


def gemm_persistent():
    # example_gemm_persistent.py (use_persistent_primitive=True): a fixed grid of SMS blocks
    # walks the output tiles with T.Persistent; the epilogue goes through shared memory
    M, N, K = T.dynamic("M"), T.dynamic("N"), T.dynamic("K")
    SMS = 132

    @T.prim_func
    def gemm_persistent(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                        C: T.Tensor((M, N), "float16")):
        with T.Kernel(SMS, threads=256) as block_id:
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            C_f = T.alloc_fragment((BM, BN), "float32")
            C_s = T.alloc_shared((BM, BN), "float16")
            for bx, by in T.Persistent([T.ceildiv(M, BM), T.ceildiv(N, BN)], SMS, block_id):
                T.clear(C_f)
                for k in T.Pipelined(T.ceildiv(K, BK), num_stages=3):
                    T.copy(A[bx * BM, k * BK], A_s)
                    T.copy(B[k * BK, by * BN], B_s)
                    T.gemm(A_s, B_s, C_f)
                T.copy(C_f, C_s)
                T.copy(C_s, C[bx * BM, by * BN])
    return gemm_persistent


KERNELS = {"gemm_persistent": gemm_persistent}
PRECONDITIONS = {"gemm_persistent": ["M >= 1", "N >= 1", "K >= 1", "M * K <= 2**31 - 1", "K * N <= 2**31 - 1",
                                     "M * N <= 2**31 - 1"]}
BANK_BUDGET = {"gemm_persistent": 32}
# not proved: UNKNOWN (no false FAILED) until the race queries fit the solver budget
EXPECT = {"gemm_persistent": ("unknown", "barriers.race", "race queries through counter-register phases time out")}
