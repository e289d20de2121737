"""Bounds bugs: off-by-one, tail-chunk overrun, shared overrun, int32 overflow, varlen."""
import tilelang.language as T

BM = 64
# TileLang guards out-of-range tile accesses by itself; these kernels turn that off so that
# the bug is in the IR as written.
RAW = {"tl.disable_safe_memory_legalize": True}


def tail_overrun():
    N = T.dynamic("N")

    @T.prim_func
    def tail_overrun(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            B[bx * BM + tx] = A[bx * BM + tx] * 2.0      # the last block runs past N
    return tail_overrun


def tail_guarded():
    N = T.dynamic("N")

    @T.prim_func
    def tail_guarded(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            if bx * BM + tx < N:
                B[bx * BM + tx] = A[bx * BM + tx] * 2.0
    return tail_guarded


def off_by_one():
    N = T.dynamic("N")

    @T.prim_func
    def off_by_one(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            if bx * BM + tx < N:
                B[bx * BM + tx] = A[bx * BM + tx + 1] - A[bx * BM + tx]   # reads A[N]
    return off_by_one


def diff_guarded():
    N = T.dynamic("N")

    @T.prim_func
    def diff_guarded(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            if bx * BM + tx + 1 < N:
                B[bx * BM + tx] = A[bx * BM + tx + 1] - A[bx * BM + tx]
    return diff_guarded


def shared_overrun():
    @T.prim_func
    def shared_overrun(A: T.Tensor((BM,), "float32"), B: T.Tensor((BM,), "float32")):
        with T.Kernel(1, threads=BM) as bx:
            S = T.alloc_shared((BM,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            T.sync_threads()
            B[tx] = S[tx] + S[tx + 1]                     # S[BM] is past the buffer
    return shared_overrun


def shared_wrapped():
    @T.prim_func
    def shared_wrapped(A: T.Tensor((BM,), "float32"), B: T.Tensor((BM,), "float32")):
        with T.Kernel(1, threads=BM) as bx:
            S = T.alloc_shared((BM,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            T.sync_threads()
            B[tx] = S[tx] + S[(tx + 1) % BM]
    return shared_wrapped


def int32_overflow():
    M = T.dynamic("M")
    H = T.dynamic("H")

    @T.prim_func
    def int32_overflow(A: T.Tensor((H, M), "float32"), B: T.Tensor((H, M), "float32")):
        with T.Kernel(T.ceildiv(M, 128), H, threads=128) as (bx, by):
            tx = T.get_thread_binding()
            row = T.alloc_var("int32")
            row = by * M + bx * 128 + tx                   # int32: wraps once H*M > 2^31
            Af = T.Tensor((H * M,), "float32", A.data)
            Bf = T.Tensor((H * M,), "float32", B.data)
            if bx * 128 + tx < M:
                Bf[row] = Af[row] + 1.0
    return int32_overflow


def int64_index():
    M = T.dynamic("M")
    H = T.dynamic("H")

    @T.prim_func
    def int64_index(A: T.Tensor((H, M), "float32"), B: T.Tensor((H, M), "float32")):
        with T.Kernel(T.ceildiv(M, 128), H, threads=128) as (bx, by):
            tx = T.get_thread_binding()
            row = T.alloc_var("int64")
            row = T.Cast("int64", by) * T.Cast("int64", M) + T.Cast("int64", bx * 128 + tx)
            Af = T.Tensor((H * M,), "float32", A.data)
            Bf = T.Tensor((H * M,), "float32", B.data)
            if bx * 128 + tx < M:
                Bf[row] = Af[row] + 1.0
    return int64_index


def varlen_overrun():
    T_ = T.dynamic("T")
    N1 = T.dynamic("N1")

    @T.prim_func
    def varlen_overrun(X: T.Tensor((T_,), "float32"), cu_seqlens: T.Tensor((N1,), "int32"),
                       Y: T.Tensor((T_,), "float32")):
        with T.Kernel(N1 - 1, threads=16) as n:
            tx = T.get_thread_binding()
            bos = cu_seqlens[n]
            Y[bos + tx] = X[bos + tx]                     # sequences shorter than 16 overrun
    return varlen_overrun


def varlen_guarded():
    T_ = T.dynamic("T")
    N1 = T.dynamic("N1")

    @T.prim_func
    def varlen_guarded(X: T.Tensor((T_,), "float32"), cu_seqlens: T.Tensor((N1,), "int32"),
                       Y: T.Tensor((T_,), "float32")):
        with T.Kernel(N1 - 1, threads=16) as n:
            tx = T.get_thread_binding()
            bos = cu_seqlens[n]
            if bos + tx < cu_seqlens[n + 1]:
                Y[bos + tx] = X[bos + tx]
    return varlen_guarded


KERNELS = {f.__name__: f for f in (tail_overrun, tail_guarded, off_by_one, diff_guarded, shared_overrun,
                                   shared_wrapped, int32_overflow, int64_index, varlen_overrun,
                                   varlen_guarded)}
PASS_CONFIGS = {name: RAW for name in KERNELS}
PRECONDITIONS = {
    "int32_overflow": ["H >= 1", "H <= 256", "M >= 1", "M <= 2**26"],
    "int64_index": ["H >= 1", "H <= 256", "M >= 1", "M <= 2**26"],
    "varlen_overrun": ["N1 >= 2", "T >= 1"],
    "varlen_guarded": ["N1 >= 2", "T >= 1"],
}
EXPECT = {"tail_overrun": "bounds.global", "tail_guarded": None, "off_by_one": "bounds.global", "diff_guarded": None,
          "shared_overrun": "bounds.shared", "shared_wrapped": None, "int32_overflow": "bounds.overflow",
          "int64_index": None, "varlen_overrun": ("bounds.global", "barriers.global_race"), "varlen_guarded": None}

# (a sequence shorter than 16 overruns into the next one's rows: blocks then also write the
# same bytes, a consequence barriers.global_race reports too)
TWIN = {"tail_overrun": "tail_guarded", "off_by_one": "diff_guarded", "shared_overrun": "shared_wrapped",
        "int32_overflow": "int64_index", "varlen_overrun": "varlen_guarded"}


def cu_trusted():
    T_ = T.dynamic("T")
    N1 = T.dynamic("N1")

    @T.prim_func
    def cu_trusted(X: T.Tensor((T_,), "float32"), cu_seqlens: T.Tensor((N1,), "int64"),
                   Y: T.Tensor((T_,), "float32")):
        with T.Kernel(N1 - 1, threads=16) as n:
            tx = T.get_thread_binding()
            bos = T.Cast("int32", cu_seqlens[n])          # in bounds only for sorted offsets
            if bos + tx < T.Cast("int32", cu_seqlens[n + 1]):
                Y[bos + tx] = X[bos + tx]
    return cu_trusted


def cu_clamped():
    T_ = T.dynamic("T")
    N1 = T.dynamic("N1")

    @T.prim_func
    def cu_clamped(X: T.Tensor((T_,), "float32"), cu_seqlens: T.Tensor((N1,), "int64"),
                   Y: T.Tensor((T_,), "float32")):
        with T.Kernel(N1 - 1, threads=16) as n:
            tx = T.get_thread_binding()
            bos = T.Cast("int32", T.max(T.min(cu_seqlens[n], T.Cast("int64", T_)), T.int64(0)))
            eos = T.Cast("int32", T.max(T.min(cu_seqlens[n + 1], T.Cast("int64", T_)), T.Cast("int64", bos)))
            if bos + tx < eos:
                Y[bos + tx] = X[bos + tx]
    return cu_clamped


KERNELS.update(cu_trusted=cu_trusted, cu_clamped=cu_clamped)
PASS_CONFIGS.update(cu_trusted=RAW, cu_clamped=RAW)
PRECONDITIONS.update(cu_trusted=["N1 >= 2", "T >= 1"], cu_clamped=["N1 >= 2", "T >= 1"])
# Kernels served without checking cu_seqlens' contents (kda_prefill's validate="fast") must stay
# in bounds for any contents: sorted offsets are assumed by every other check.
ANY_CONTENTS = ["cu_trusted", "cu_clamped"]
EXPECT.update(cu_trusted="bounds.any_contents", cu_clamped=None)
TWIN.update(cu_trusted="cu_clamped")


# A binary search over an index buffer whose probe is loaded in a nested if's condition (K1's
# varlen slot search). Its lo/hi registers are modeled as functions of the role tests around
# their stores; translating those tests must not count as loads at the place of the model
# (a phantom access with a free index was reported before verify 2.1.1).
def _search(name, slack):
    N1 = T.dynamic("N1")

    @T.prim_func
    def search(cu: T.Tensor((N1,), "int64"), out: T.Tensor((N1,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            lo = T.alloc_var("int32", init=0)
            hi = T.alloc_var("int32", init=N1 - 2)
            for _ in T.serial(8):
                # slack 1: the probe can reach index N1 - 1 + 1 (the clamp is one too loose)
                mid = (T.max(T.min(lo, N1 - 2 + slack), 0) + T.max(T.min(hi, N1 - 2 + slack), 0) + 1) // 2 + slack
                if lo < hi:
                    if cu[mid] <= tx:
                        lo = mid
                    else:
                        hi = mid - 1
            if tx < N1:
                out[tx] = lo
    search.__name__ = name
    return search


def search_probe_in_if():
    return _search("search_probe_in_if", 0)


def search_probe_overrun():
    return _search("search_probe_overrun", 1)


KERNELS.update(search_probe_in_if=search_probe_in_if, search_probe_overrun=search_probe_overrun)
PASS_CONFIGS.update(search_probe_in_if=RAW, search_probe_overrun=RAW)
PRECONDITIONS.update(search_probe_in_if=["N1 >= 2", "N1 <= 2**16"], search_probe_overrun=["N1 >= 2", "N1 <= 2**16"])
EXPECT.update(search_probe_in_if=None, search_probe_overrun="bounds.global")
TWIN.update(search_probe_overrun="search_probe_in_if")


# A loop whose trip count is a bit length, 32 - clz(x) (K1's slot search runs
# min(32 - clz(N1 - 2), SEARCH_STEPS) steps since session 15): clz is modelled exactly, so up to
# N1 = 2**20 the uncapped count reaches 20 and overruns out[16] (a true counterexample needs
# N1 > 2**16 + 1), while the count capped at 16 proves.
def _clz_steps(name, cap):
    N1 = T.dynamic("N1")

    @T.prim_func
    def steps(cu: T.Tensor((N1,), "int64"), out: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            n = 32 - T.clz(T.max(N1 - 2, 0))        # bit_length(N1 - 2): up to 20 for N1 <= 2**20
            for i in T.serial(T.min(n, 16) if cap else n):
                if tx == 0:
                    out[i] = T.Cast("int32", cu[0]) + i
    steps.__name__ = name
    return steps


def clz_steps_capped():
    return _clz_steps("clz_steps_capped", True)


def clz_steps_uncapped():
    return _clz_steps("clz_steps_uncapped", False)


KERNELS.update(clz_steps_capped=clz_steps_capped, clz_steps_uncapped=clz_steps_uncapped)
PASS_CONFIGS.update(clz_steps_capped=RAW, clz_steps_uncapped=RAW)
PRECONDITIONS.update(clz_steps_capped=["N1 >= 2", "N1 <= 2**20"], clz_steps_uncapped=["N1 >= 2", "N1 <= 2**20"])
EXPECT.update(clz_steps_capped=None, clz_steps_uncapped="bounds.global")
TWIN.update(clz_steps_uncapped="clz_steps_capped")


# An index that one thread writes to shared memory and every thread reads back (K1's GVA head,
# K1Config.head_once): the value read is only as safe as what was written, unless it is clamped
# where it is used.
def _shared_index(name, clamp):
    H = T.dynamic("H")

    @T.prim_func
    def kernel(X: T.Tensor((H, 16), "float32"), Y: T.Tensor((H, 16), "float32")):
        with T.Kernel(H, threads=16) as h:
            tx = T.get_thread_binding()
            s = T.alloc_shared((1,), "int32")
            if tx == 0:
                s[0] = h + 1                      # the next head: H in the last program
            i = T.alloc_var("int32", init=T.min(T.max(s[0], 0), H - 1) if clamp else s[0])
            Y[h, tx] = X[i, tx]
    kernel.__name__ = name
    return kernel


def shared_index_clamped():
    return _shared_index("shared_index_clamped", True)


def shared_index_unclamped():
    return _shared_index("shared_index_unclamped", False)


KERNELS.update(shared_index_clamped=shared_index_clamped, shared_index_unclamped=shared_index_unclamped)
PASS_CONFIGS.update(shared_index_clamped=RAW, shared_index_unclamped=RAW)
PRECONDITIONS.update(shared_index_clamped=["H >= 1"], shared_index_unclamped=["H >= 1"])
EXPECT.update(shared_index_clamped=None, shared_index_unclamped="bounds.global")
TWIN.update(shared_index_unclamped="shared_index_clamped")


# A bug TileLang writes (0.1.15, found in session 36's 128-thread pairwise K1): a T.Parallel loop
# over a fragment's rows whose two branches store vectorized casts into two buffers, one for each
# half of the rows. The lowering hoists both halves' stores out of the branch, so every thread
# writes both buffers from a local only one branch set: P_s past its end for the second half's
# threads, Q_s at a negative offset for the first's. The clean twin stores one stacked buffer
# from a select (what k1_prepare does).
def _cast_halves(name, select):
    R, N = 16, 32

    @T.prim_func
    def kernel(A: T.Tensor((2 * R, N), "float16"), B: T.Tensor((N, N), "float16"),
               P: T.Tensor((R, N), "float16"), Q: T.Tensor((R, N), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((2 * R, N), "float16")
            B_s = T.alloc_shared((N, N), "float16")
            F = T.alloc_fragment((2 * R, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, F, clear_accum=True)
            if select:
                PQ_s = T.alloc_shared((2 * R, N), "float16")
                for r2, j in T.Parallel(2 * R, N):
                    PQ_s[r2, j] = T.Cast("float16", T.if_then_else(r2 < R, -F[r2, j], F[r2, j]))
                for r, j in T.Parallel(R, N):
                    P[r, j] = PQ_s[r, j]
                    Q[r, j] = PQ_s[R + r, j]
            else:
                P_s = T.alloc_shared((R, N), "float16")
                Q_s = T.alloc_shared((R, N), "float16")
                for r2, j in T.Parallel(2 * R, N):
                    if r2 < R:
                        P_s[r2, j] = T.Cast("float16", -F[r2, j])
                    else:
                        Q_s[r2 - R, j] = T.Cast("float16", F[r2, j])
                for r, j in T.Parallel(R, N):
                    P[r, j] = P_s[r, j]
                    Q[r, j] = Q_s[r, j]
    kernel.__name__ = name
    return kernel


def cast_halves_branch():
    return _cast_halves("cast_halves_branch", False)


def cast_halves_select():
    return _cast_halves("cast_halves_select", True)


KERNELS.update(cast_halves_branch=cast_halves_branch, cast_halves_select=cast_halves_select)
# (the fragment's rows store 4-way conflicted in both: not what this pair is about)
BANK_BUDGET = {"cast_halves_branch": 4, "cast_halves_select": 4}
EXPECT.update(cast_halves_branch="bounds.shared", cast_halves_select=None)
TWIN.update(cast_halves_branch="cast_halves_select")
