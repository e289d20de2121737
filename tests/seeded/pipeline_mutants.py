"""TMA + mbarrier + wgmma pipelines, and IR-level mutants of them.

The clean kernels are TileLang's own warp-specialized lowering; each mutant rewrites one
intrinsic argument (or drops one statement) of the lowered device PrimFunc, the way a
hand-written low-level kernel could get it wrong."""
import tilelang.language as T
from tilelang import tvm  # noqa: F401

from verify import mutate
from verify.tir import tirx

BM, BK, KT = 64, 64, 4


def tma_gemm():
    N = T.dynamic("N")

    @T.prim_func
    def tma_gemm(A: T.Tensor((N, BK * KT), "float16"), B: T.Tensor((128, BK * KT), "float16"),
                 C: T.Tensor((N, 128), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=256) as bx:
            As = T.alloc_shared((BM, BK), "float16")
            Bs = T.alloc_shared((128, BK), "float16")
            Cf = T.alloc_fragment((BM, 128), "float32")
            T.clear(Cf)
            for ko in T.Pipelined(KT, num_stages=2):
                T.copy(A[bx * BM, ko * BK], As)
                T.copy(B[0, ko * BK], Bs)
                T.gemm(As, Bs, Cf, transpose_B=True)
            T.copy(Cf, C[bx * BM, 0])
    return tma_gemm


def staged_gemm():
    """Shared tile written by threads (generic proxy), then read by wgmma (async proxy)."""
    @T.prim_func
    def staged_gemm(A: T.Tensor((BM, BK), "float16"), B: T.Tensor((BM, BK), "float16"),
                    C: T.Tensor((BM, BM), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((BM, BK), "float16")
            Bs = T.alloc_shared((BM, BK), "float16")
            Cf = T.alloc_fragment((BM, BM), "float32")
            for i, j in T.Parallel(BM, BK):
                As[i, j] = A[i, j] * T.float16(2.0)
                Bs[i, j] = B[i, j]
            T.gemm(As, Bs, Cf, transpose_B=True, clear_accum=True)
            T.copy(Cf, C)
    return staged_gemm


def cp_async_gemm():
    """The same GEMM without TMA: a three-stage cp.async pipeline retired by wait_group(n)."""
    N = T.dynamic("N")

    @T.prim_func
    def cp_async_gemm(A: T.Tensor((N, BK * KT), "float16"), B: T.Tensor((64, BK * KT), "float16"),
                      C: T.Tensor((N, 64), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=128) as bx:
            As = T.alloc_shared((BM, BK), "float16")
            Bs = T.alloc_shared((64, BK), "float16")
            Cf = T.alloc_fragment((BM, 64), "float32")
            T.clear(Cf)
            for ko in T.Pipelined(KT, num_stages=3):
                T.copy(A[bx * BM, ko * BK], As)
                T.copy(B[0, ko * BK], Bs)
                T.gemm(As, Bs, Cf, transpose_B=True)
            T.copy(Cf, C[bx * BM, 0])
    return cp_async_gemm


def tma_store_epilogue():
    """An epilogue through shared memory: fragment -> stmatrix -> TMA store."""
    N = T.dynamic("N")

    @T.prim_func
    def tma_store_epilogue(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 64), "float16")):
        with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
            F = T.alloc_fragment((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            T.copy(A[bx * 64, 0], F)
            for i, j in T.Parallel(64, 64):
                F[i, j] = F[i, j] * T.float16(2.0)
            T.copy(F, S)
            T.copy(S, B[bx * 64, 0])
    return tma_store_epilogue


def ring_gemm_late_release(early=False):
    """A warp-specialized ring (one TMA warp, one wgmma warpgroup) in which the consumer keeps
    one wgmma group in flight: after issuing chunk c it waits with wait_wgmma(1), which retires
    chunk c - 1, and only then hands chunk c - 1's slot back. `early` hands back chunk c's own
    slot at that point, while its wgmma may still read it."""
    N = T.dynamic("N")
    S = 2

    @T.prim_func
    def ring_gemm(X: T.Tensor((N * 64, 64), "float16"), Y: T.Tensor((64, 64), "float16"),
                  C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            Xr = T.alloc_shared((S, 64, 64), "float16")
            Ys = T.alloc_shared((64, 64), "float16")
            Acc = T.alloc_fragment((64, 64), "float32")
            full = T.alloc_barrier(arrive_count=[32] * S)
            empty = T.alloc_barrier(arrive_count=[128] * S)
            tx = T.get_thread_binding()
            if tx < 128:
                T.copy(Y, Ys)
                T.clear(Acc)
                for c in T.serial(N):
                    T.barrier_wait(full[c % S], (c // S) % 2)
                    T.wgmma_gemm(Xr[c % S, :, :], Ys, Acc, transpose_B=True)
                    T.wait_wgmma(1)
                    if early:
                        T.barrier_arrive(empty[c % S])
                    elif c >= 1:
                        T.barrier_arrive(empty[(c - 1) % S])
                T.wait_wgmma(0)
                T.copy(Acc, C)
            elif tx < 160:
                for c in T.serial(N):
                    T.barrier_wait(empty[c % S], (c // S + 1) % 2)
                    T.tma_copy(X[c * 64:c * 64 + 64, :], Xr[c % S, :, :], barrier=full[c % S])
                    T.barrier_arrive(full[c % S])
    return ring_gemm


def cp_async_noinc_ring(late=False):
    """A two-slot ring filled by one producer warp with cp.async, each slot handed over by
    cp.async.mbarrier.arrive.noinc, which arrives once the thread's earlier copies have landed.
    `late` issues each row's last copy after that arrival: it lands whenever it lands, and the
    consumers read it (the next slot's arrival covers it, not this one's)."""
    N = T.dynamic("N")
    S = 2

    @T.prim_func
    def cp_async_ring(X: T.Tensor((N * 32, 64), "float16"), Y: T.Tensor((N * 32, 64), "float16")):
        with T.Kernel(1, threads=256):
            Xr = T.alloc_shared((S, 32, 64), "float16")
            full = T.alloc_barrier(arrive_count=[32] * S)
            empty = T.alloc_barrier(arrive_count=[128] * S)
            tx = T.get_thread_binding()
            if tx < 128:
                for c in T.serial(N):
                    T.barrier_wait(full[c % S], (c // S) % 2)
                    for i, j in T.Parallel(32, 64):
                        Y[c * 32 + i, j] = Xr[c % S, i, j]
                    T.barrier_arrive(empty[c % S])
            elif tx < 160:
                t = tx - 128
                for c in T.serial(N):
                    T.barrier_wait(empty[c % S], (c // S + 1) % 2)
                    for u in T.serial(7):
                        T.ptx_cp_async(T.access_ptr(Xr[c % S, t, u * 8], "w", 8),
                                       T.access_ptr(X[c * 32 + t, u * 8], "r", 8), 8)
                    if late:
                        T.cp_async_barrier_noinc(full[c % S])
                    T.ptx_cp_async(T.access_ptr(Xr[c % S, t, 56], "w", 8), T.access_ptr(X[c * 32 + t, 56], "r", 8), 8)
                    if not late:
                        T.cp_async_barrier_noinc(full[c % S])
    return cp_async_ring


def tma_store_twice():
    """Two tiles through one shared buffer: each written by every thread, then stored by TMA from
    one elected thread, which waits for the store's read before the barrier that lets the next
    tile's writes in."""
    N = T.dynamic("N")

    @T.prim_func
    def tma_store_twice(A: T.Tensor((N, 128), "float16"), B: T.Tensor((N, 128), "float16")):
        with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
            F = T.alloc_fragment((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            for h in T.serial(2):
                T.copy(A[bx * 64, h * 64], F)
                for i, j in T.Parallel(64, 64):
                    F[i, j] = F[i, j] * T.float16(2.0)
                T.copy(F, S)
                T.copy(S, B[bx * 64, h * 64])
    return tma_store_twice


def _tma_store_wait_later(f):
    # the store's wait leaves its group in flight: the next tile's writes meet its read of S
    return mutate.rewrite_call(f, "tl.tma_store_wait", lambda c: mutate.with_arg(c, 0, int(c.args[0]) + 1))


def _xor1(e):
    return tirx.Call("int32", tirx.op.Op.get("tirx.bitwise_xor"), [e, tirx.const(1, "int32")])


def _wrong_tx(f):
    # the expected transaction bytes of the first full barrier no longer match the TMA boxes
    return mutate.rewrite_call(f, "tirx.ptx_arrive_barrier_expect_tx", lambda c: mutate.with_arg(c, 1, 4096))


def _wrong_parity(f):
    # the consumer's first wait on a full barrier: parity flipped, so it does not wait for data
    waits = _consumer_full_wait_index(f)
    return mutate.rewrite_call(f, "tl.mbarrier_wait_parity", lambda c: mutate.with_arg(c, 1, _xor1(c.args[1])),
                               nth=waits)


def _wrong_count(f):
    # an "empty" barrier expects half the consumer threads
    return mutate.rewrite_call(f, "tirx.ptx_init_barrier_thread_count",
                               lambda c: mutate.with_arg(c, 1, 64), nth=-1)


def _no_init_fence(f):
    return mutate.drop_call(f, "tl.ptx_fence_barrier_init")


def _no_proxy_fence(f):
    return mutate.drop_call(f, "tl.fence_proxy_async")


def _wrong_barrier(f):
    # the producer signals the data of stage ko on the other stage's barrier
    def swap(c):
        ld = c.args[0]
        idx = ld.indices[0]
        return mutate.with_arg(c, 0, tirx.BufferLoad(ld.buffer, [(idx + 1) % 2]))
    return mutate.rewrite_call(f, "tirx.ptx_arrive_barrier_expect_tx", swap)


def _wait_group_later(f):
    # the pipeline's steady-state wait leaves one more group in flight than it may
    return mutate.rewrite_call(f, "tirx.ptx_wait_group", lambda c: mutate.with_arg(c, 0, int(c.args[0]) + 1))


def _no_store_fence(f):
    # the generic-proxy writes of S (stmatrix) are not fenced before the TMA store reads S
    return mutate.drop_call(f, "tl.fence_proxy_async", nth=-1)


def _wgmma_wait_later(f):
    # the consumer's wgmma wait leaves its group in flight when it releases the stage on "empty"
    return mutate.rewrite_call(f, "tl.warpgroup_wait", lambda c: mutate.with_arg(c, 0, int(c.args[0]) + 1))


def _consumer_full_wait_index(f):
    """Program-order index of the first wait with a parity that is not XOR-ed (consumer side)."""
    from tvm.tirx.stmt_functor import post_order_visit

    from verify.tir import op_name
    waits = []

    def v(n):
        if isinstance(n, tirx.Call) and op_name(n) == "tl.mbarrier_wait_parity":
            waits.append(n)
    post_order_visit(f.body, v)
    for i, w in enumerate(waits):
        if not (isinstance(w.args[1], tirx.Call) and op_name(w.args[1]) == "tirx.bitwise_xor"):
            return i
    raise ValueError("no consumer wait")


KERNELS = {"tma_gemm": tma_gemm, "staged_gemm": staged_gemm, "cp_async_gemm": cp_async_gemm,
           "tma_store_epilogue": tma_store_epilogue, "ring_late_release": ring_gemm_late_release,
           "ring_release_early": lambda: ring_gemm_late_release(early=True),
           "cp_async_noinc_ring": cp_async_noinc_ring, "cp_async_noinc_late": lambda: cp_async_noinc_ring(late=True),
           "tma_store_twice": tma_store_twice}
MUTATIONS = {
    "tma_wrong_tx_bytes": ("tma_gemm", _wrong_tx),
    "tma_wrong_parity": ("tma_gemm", _wrong_parity),
    "tma_wrong_arrive_count": ("tma_gemm", _wrong_count),
    "tma_no_init_fence": ("tma_gemm", _no_init_fence),
    "tma_wrong_barrier": ("tma_gemm", _wrong_barrier),
    "wgmma_no_proxy_fence": ("staged_gemm", _no_proxy_fence),
    "cp_async_wait_group_late": ("cp_async_gemm", _wait_group_later),
    "tma_store_no_proxy_fence": ("tma_store_epilogue", _no_store_fence),
    "wgmma_wait_late": ("tma_gemm", _wgmma_wait_later),
    "tma_store_wait_late": ("tma_store_twice", _tma_store_wait_later),
}
PRECONDITIONS = {name: ["N >= 1", "N <= 2**20"] for name in ("tma_gemm", "cp_async_gemm", "tma_store_epilogue",
                                                            "ring_late_release", "ring_release_early",
                                                            "cp_async_noinc_ring", "cp_async_noinc_late",
                                                            "tma_store_twice",
                                                            *MUTATIONS) if name != "wgmma_no_proxy_fence"}
BANK_BUDGET = {name: 8 for name in ("tma_gemm", "staged_gemm", "cp_async_gemm", "tma_store_epilogue",
                                    "ring_late_release", "ring_release_early", "cp_async_noinc_ring",
                                    "cp_async_noinc_late", "tma_store_twice", *MUTATIONS)}
PASS_CONFIGS = {name: {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}
                for name in ("cp_async_gemm", "cp_async_wait_group_late")}
EXPECT = {"tma_gemm": None, "staged_gemm": None, "tma_wrong_tx_bytes": "barriers.mbarrier_phase",
          "tma_wrong_parity": "barriers.race", "tma_wrong_arrive_count": "barriers.mbarrier_phase",
          "tma_no_init_fence": "barriers.mbarrier_init", "tma_wrong_barrier": "barriers.mbarrier_phase",
          "wgmma_no_proxy_fence": "barriers.proxy_fence", "cp_async_gemm": None, "tma_store_epilogue": None,
          "cp_async_wait_group_late": "barriers.race", "tma_store_no_proxy_fence": "barriers.proxy_fence",
          "wgmma_wait_late": "barriers.race", "ring_late_release": None, "ring_release_early": "barriers.race",
          "cp_async_noinc_ring": None, "cp_async_noinc_late": "barriers.race",
          "tma_store_twice": None, "tma_store_wait_late": "barriers.race"}
TWIN = {"tma_wrong_tx_bytes": "tma_gemm", "tma_wrong_parity": "tma_gemm", "tma_wrong_arrive_count": "tma_gemm",
        "tma_no_init_fence": "tma_gemm", "tma_wrong_barrier": "tma_gemm", "wgmma_no_proxy_fence": "staged_gemm",
        "cp_async_wait_group_late": "cp_async_gemm", "tma_store_no_proxy_fence": "tma_store_epilogue",
        "wgmma_wait_late": "tma_gemm", "ring_release_early": "ring_late_release",
        "cp_async_noinc_late": "cp_async_noinc_ring", "tma_store_wait_late": "tma_store_twice"}
