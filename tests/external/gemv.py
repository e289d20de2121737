"""GEMV and split-K reductions (TileLang examples/gemv, examples/dequantize_gemm): per-thread
dot products combined through a shared atomic_add, through tvm_thread_allreduce, and through a
reducer; an int4-dequantizing GEMV."""
import tilelang.language as T

SOURCE = {
    "gemv_naive_splitk": "examples/gemv/example_gemv.py",
    "gemv_splitk_vectorized": "examples/gemv/example_gemv.py",
    "gemv_allreduce": "examples/gemv/example_gemv.py",
    "gemv_alloc_reducer": "examples/gemv/example_gemv.py",
    "dequant_gemv_int4": "examples/dequantize_gemm/example_dequant_gemv_fp16xint4.py",
}
BN_ = 128


def gemv_naive_splitk():
    # naive_splitk_gemv: threads (BLOCK_N, BLOCK_K); partial sums meet in C_shared by atomic_add
    N, K = T.dynamic("N"), T.dynamic("K")
    BN, BK = 32, 32

    @T.prim_func
    def gemv_naive_splitk(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BN), threads=(BN, BK)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            A_l = T.alloc_local((1,), "float16")
            B_l = T.alloc_local((1,), "float16")
            acc = T.alloc_local((1,), "float32")
            C_s = T.alloc_shared((BN,), "float32")
            if tk == 0:
                C_s[tn] = 0
            T.clear(acc)
            for bk in T.serial(T.ceildiv(K, BK)):
                A_l[0] = A[bk * BK + tk]
                B_l[0] = B[bn * BN + tn, bk * BK + tk]
                acc[0] += T.Cast("float32", A_l[0]) * T.Cast("float32", B_l[0])
            T.atomic_add(C_s[tn], acc[0])
            C[bn * BN + tn] = C_s[tn]
    return gemv_naive_splitk


def gemv_splitk_vectorized():
    # splitk_gemv_vectorized: 128-bit loads per thread, shared atomic_add of the partial sums
    N, K = T.dynamic("N"), T.dynamic("K")
    BN, R, TK = 32, 8, 8
    BK = R * TK

    @T.prim_func
    def gemv_splitk_vectorized(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"),
                               C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BN), threads=(BN, R)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            A_l = T.alloc_local((TK,), "float16")
            B_l = T.alloc_local((TK,), "float16")
            C_s = T.alloc_shared((BN,), "float32")
            acc = T.alloc_local((1,), "float32")
            if tk == 0:
                C_s[tn] = 0
            T.clear(acc)
            for bk in T.serial(T.ceildiv(K, BK)):
                for k in T.vectorized(TK):
                    A_l[k] = A[bk * BK + tk * TK + k]
                    B_l[k] = B[bn * BN + tn, bk * BK + tk * TK + k]
                for k in T.serial(TK):
                    acc[0] += T.Cast("float32", A_l[k]) * T.Cast("float32", B_l[k])
            T.atomic_add(C_s[tn], acc[0])
            C[bn * BN + tn] = C_s[tn]
    return gemv_splitk_vectorized


def gemv_allreduce():
    # splitk_gemv_vectorized_tvm: the partial sums meet in tvm_thread_allreduce over tk
    N, K = T.dynamic("N"), T.dynamic("K")
    BN, R, TK = 32, 8, 8
    BK = R * TK

    @T.prim_func
    def gemv_allreduce(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BN), threads=(BN, R)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            A_l = T.alloc_local((TK,), "float16")
            B_l = T.alloc_local((TK,), "float16")
            acc = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(T.ceildiv(K, BK)):
                for k in T.vectorized(TK):
                    A_l[k] = A[bk * BK + tk * TK + k]
                    B_l[k] = B[bn * BN + tn, bk * BK + tk * TK + k]
                for k in T.serial(TK):
                    acc[0] += T.Cast("float32", A_l[k]) * T.Cast("float32", B_l[k])
            red = T.alloc_local((1,), "float32")
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.Cast("float32", 0)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle"))
            C[bn * BN + tn] = red[0]
    return gemv_allreduce


def gemv_alloc_reducer():
    # gemv_alloc_reducer: a replicated reducer fragment accumulates a_frag * x_frag per row
    M, N = T.dynamic("M"), T.dynamic("N")
    BM, BNn = 128, 128

    @T.prim_func
    def gemv_alloc_reducer(a: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), o: T.Tensor((M,), "float16")):
        with T.Kernel(T.ceildiv(M, BM), threads=256) as i0_m:
            o_r = T.alloc_reducer(BM, "float32", replication="all")
            T.clear(o_r)
            for i0_n in T.Pipelined(T.ceildiv(N, BNn), num_stages=2):
                a_s = T.alloc_shared((BM, BNn), "float16")
                T.copy(a[i0_m * BM, i0_n * BNn], a_s)
                a_f = T.alloc_fragment((BM, BNn), "float16")
                T.copy(a_s, a_f)
                x_f = T.alloc_fragment(BNn, "float16")
                T.copy(x[i0_n * BNn], x_f)
                for i, j in T.Parallel(BM, BNn):
                    o_r[i] += a_f[i, j] * x_f[j]
            T.finalize_reducer(o_r)
            T.copy(o_r, o[i0_m * BM])
    return gemv_alloc_reducer


def dequant_gemv_int4():
    # dequantize_gemv: B packs two int4 values per int8; each thread unpacks 8 values from
    # 4 bytes, multiplies with A and the threads along x reduce with tvm_thread_allreduce
    N, K = T.dynamic("N"), T.dynamic("K")
    R, NP, MK = 32, 4, 8
    BK = R * MK

    @T.prim_func
    def dequant_gemv_int4(A: T.Tensor((1, K), "float16"), B: T.Tensor((N, K // 2), "int8"),
                          C: T.Tensor((1, N), "float16")):
        with T.Kernel(T.ceildiv(N, NP), threads=(R, NP)) as bx:
            A_l = T.alloc_local((MK,), "float16")
            Bq = T.alloc_local((MK // 2,), "int8")
            Bd = T.alloc_local((MK,), "float16")
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            kr = T.get_thread_binding(0)
            ni = T.get_thread_binding(1)
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, BK)):
                for v in T.vectorized(MK):
                    A_l[v] = A[0, ko * BK + kr * MK + v]
                for v in T.vectorized(MK // 2):
                    Bq[v] = B[bx * NP + ni, ko * BK // 2 + kr * MK // 2 + v]
                for v in T.serial(MK):
                    Bd[v] = T.Cast("float16", T.Cast("int32", T.shift_right(T.shift_left(Bq[v // 2], 4 * (1 - v % 2)), 4)))
                for ki in T.serial(MK):
                    acc[0] += T.Cast("float32", A_l[ki]) * T.Cast("float32", Bd[ki])
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.Cast("float32", 0)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], kr, dtype="handle"))
            if kr == 0:
                C[0, bx * NP + ni] = T.Cast("float16", red[0])
    return dequant_gemv_int4


KERNELS = {f.__name__: f for f in (gemv_naive_splitk, gemv_splitk_vectorized, gemv_allreduce, gemv_alloc_reducer,
                                   dequant_gemv_int4)}
_NK = ["N >= 1", "K >= 1", "N * K <= 2**31 - 1"]
PRECONDITIONS = {
    "gemv_naive_splitk": _NK + ["N % 32 == 0", "K % 32 == 0"],
    "gemv_splitk_vectorized": _NK + ["N % 32 == 0", "K % 64 == 0"],
    "gemv_allreduce": _NK + ["N % 32 == 0", "K % 64 == 0"],
    # T.ceildiv(N, 128) is (N + 127) // 128 in int32: N must leave room for the + 127
    "gemv_alloc_reducer": ["M >= 1", "N >= 1", "M * N <= 2**31 - 1", "N <= 2**31 - 128"],
    "dequant_gemv_int4": _NK + ["N % 4 == 0", "K % 256 == 0"],
}
PASS_CONFIGS = {"gemv_alloc_reducer": {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}}
BANK_BUDGET = {name: 32 for name in KERNELS}
EXPECT = {name: None for name in KERNELS}
# As upstream wrote them, every thread of a reduction group stores the group's sum to the same
# C element, with no order between the stores: the same value each time, but plain stores of
# one address by several threads of a block are a data race (found since verify 2.6.0, which
# races a block's threads on global memory too). Storing from one thread (tk == 0) removes it.
for _name in ("gemv_naive_splitk", "gemv_splitk_vectorized", "gemv_allreduce"):
    EXPECT[_name] = ("barriers.race", "data race on C: write (store) / write (store)",
                     "every thread of a reduction group stores the same sum to C[n], unordered")
