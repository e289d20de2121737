"""Barrier bugs in hand-synchronized kernels (TileLang's automatic sync insertion is off)."""
import tilelang.language as T

NT = 128
MANUAL = {"tl.disable_thread_storage_sync": True}


def missing_sync():
    @T.prim_func
    def missing_sync(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            B[tx] = S[(tx + 1) % NT]                      # reads a neighbour's write, unsynchronized
    return missing_sync


def synced():
    @T.prim_func
    def synced(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            T.sync_threads()
            B[tx] = S[(tx + 1) % NT]
    return synced


def divergent_sync():
    @T.prim_func
    def divergent_sync(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            if tx < NT // 2:
                T.sync_threads()                          # only half the block reaches it
            B[tx] = S[(tx + 1) % NT]
    return divergent_sync


def uniform_sync():
    N = T.dynamic("N")

    @T.prim_func
    def uniform_sync(A: T.Tensor((N, NT), "float32"), B: T.Tensor((N, NT), "float32")):
        with T.Kernel(N, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[bx, tx]
            if bx < N:                                    # the same for every thread of a block
                T.sync_threads()
                B[bx, tx] = S[(tx + 1) % NT]
    return uniform_sync


def divergent_return():
    N1 = T.dynamic("N1")
    Tn = T.dynamic("T")

    @T.prim_func
    def divergent_return(cu_seqlens: T.Tensor((N1,), "int64"), A: T.Tensor((Tn, NT), "float32"),
                         B: T.Tensor((N1, NT), "float32")):
        with T.Kernel(N1 - 1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            if tx >= cu_seqlens[bx + 1] - cu_seqlens[bx]:   # per thread: the rest wait below forever
                T.thread_return()
            S[tx] = A[T.min(cu_seqlens[bx], Tn - 1), tx]
            T.sync_threads()
            B[bx, tx] = S[(tx + 1) % NT]
    return divergent_return


def uniform_return():
    N1 = T.dynamic("N1")
    Tn = T.dynamic("T")

    @T.prim_func
    def uniform_return(cu_seqlens: T.Tensor((N1,), "int64"), A: T.Tensor((Tn, NT), "float32"),
                       B: T.Tensor((N1, NT), "float32")):
        with T.Kernel(N1 - 1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            if cu_seqlens[bx + 1] == cu_seqlens[bx]:         # an empty sequence: the whole block leaves
                T.thread_return()
            S[tx] = A[T.min(cu_seqlens[bx], Tn - 1), tx]
            T.sync_threads()
            B[bx, tx] = S[(tx + 1) % NT]
    return uniform_return


def global_neighbour():
    N = T.dynamic("N")

    @T.prim_func
    def global_neighbour(A: T.Tensor((N, NT), "float32"), B: T.Tensor((N, NT), "float32"),
                         C: T.Tensor((N, NT), "float32")):
        with T.Kernel(N, threads=NT) as bx:
            tx = T.get_thread_binding()
            B[bx, tx] = A[bx, tx] * 2.0
            C[bx, tx] = B[bx, (tx + 1) % NT]              # a neighbour's global write, unsynchronized
    return global_neighbour


def global_synced():
    N = T.dynamic("N")

    @T.prim_func
    def global_synced(A: T.Tensor((N, NT), "float32"), B: T.Tensor((N, NT), "float32"),
                      C: T.Tensor((N, NT), "float32")):
        with T.Kernel(N, threads=NT) as bx:
            tx = T.get_thread_binding()
            B[bx, tx] = A[bx, tx] * 2.0
            T.sync_threads()                              # orders the block's global accesses too
            C[bx, tx] = B[bx, (tx + 1) % NT]
    return global_synced


def named_count():
    @T.prim_func
    def named_count(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            if tx < 64:
                S[tx] = A[tx]
                T.sync_threads(1, 128)                    # 64 threads arrive, 128 expected
                B[tx] = S[63 - tx]
    return named_count


def named_ok():
    @T.prim_func
    def named_ok(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            if tx < 64:
                S[tx] = A[tx]
                T.sync_threads(1, 64)
                B[tx] = S[63 - tx]
    return named_ok


def loop_war():
    K = 4

    @T.prim_func
    def loop_war(A: T.Tensor((K, NT), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            for k in T.serial(K):
                S[tx] = A[k, tx]                          # overwrites what a neighbour still reads
                T.sync_threads()
                acc = acc + S[(tx + 1) % NT]
            B[tx] = acc
    return loop_war


def loop_synced():
    K = 4

    @T.prim_func
    def loop_synced(A: T.Tensor((K, NT), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            for k in T.serial(K):
                S[tx] = A[k, tx]
                T.sync_threads()
                acc = acc + S[(tx + 1) % NT]
                T.sync_threads()
            B[tx] = acc
    return loop_synced


def _empty_loop(name, synced):
    """A zero fill read by a neighbour after a loop of N passes: the loop's barriers order the two
    only when it runs (the pairwise K1's final-state decay after an empty sequence, session 35)."""
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N, NT), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            S[tx] = 0.0
            for k in T.serial(N):
                T.sync_threads()
                S[tx] = S[tx] + A[k, tx]
                T.sync_threads()
            if synced:
                T.sync_threads()
            B[tx] = S[(tx + 1) % NT]
    return kern.with_attr("global_symbol", name)


def empty_loop_read():
    return _empty_loop("empty_loop_read", False)          # N = 0: the read meets the fill unordered


def empty_loop_synced():
    return _empty_loop("empty_loop_synced", True)


def _mbar_kernel(count, arrive_all=True, parity=0):
    @T.prim_func
    def kern(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT,), "float32")
            mb = T.alloc_barrier([count])
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            if arrive_all:
                T.barrier_arrive(mb[0])
            else:
                if tx < NT // 2:
                    T.barrier_arrive(mb[0])
            T.barrier_wait(mb[0], parity)
            B[tx] = S[NT - 1 - tx]
    return kern


def mbar_ok():
    return _mbar_kernel(NT)


def mbar_count():
    return _mbar_kernel(NT // 2)                          # phase completes after half the writes


def mbar_half_arrive():
    return _mbar_kernel(NT, arrive_all=False)             # only half the threads arrive: hangs


def mbar_parity():
    return _mbar_kernel(NT, parity=1)                     # parity 1 passes at once on a fresh barrier


def mbar_loop_ok():
    K = 4

    @T.prim_func
    def mbar_loop_ok(A: T.Tensor((K, NT), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((2, NT), "float32")
            mb = T.alloc_barrier([NT])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            for k in T.serial(K):
                S[k % 2, tx] = A[k, tx]
                T.barrier_arrive(mb[0])
                T.barrier_wait(mb[0], k % 2)
                acc = acc + S[k % 2, NT - 1 - tx]
            B[tx] = acc
    return mbar_loop_ok


def mbar_loop_parity():
    K = 4

    @T.prim_func
    def mbar_loop_parity(A: T.Tensor((K, NT), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((2, NT), "float32")
            mb = T.alloc_barrier([NT])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            for k in T.serial(K):
                S[k % 2, tx] = A[k, tx]
                T.barrier_arrive(mb[0])
                T.barrier_wait(mb[0], 0)                  # must alternate with the phase
                acc = acc + S[k % 2, NT - 1 - tx]
            B[tx] = acc
    return mbar_loop_parity


def _ws_carry(name, synced):
    """The fused pairs producer's exchange (kda_kernels/fused.py, column_pass_pairs): inside the
    second warpgroup of a warp-specialized block, the lower row half writes its column totals
    and the upper half reads them, chunk after chunk, with the warpgroup's named barrier."""
    K = 4

    @T.prim_func
    def kern(A: T.Tensor((K, NT), "float32"), B: T.Tensor((2 * NT,), "float32")):
        with T.Kernel(1, threads=2 * NT) as bx:
            part = T.alloc_shared((2, NT // 2), "float32")
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx >= NT:
                p = tx - NT
                for k in T.serial(K):
                    part[p // 64, p % 64] = A[k, p]
                    if synced:
                        T.sync_threads(3, NT)
                    acc = acc + T.if_then_else(p >= 64, part[0, p % 64], 0.0) + part[1, p % 64]
                    if synced:
                        T.sync_threads(3, NT)
            B[tx] = acc
    return kern.with_attr("global_symbol", name)


def ws_carry_unsynced():
    return _ws_carry("ws_carry_unsynced", False)          # the upper half reads before the lower half wrote


def ws_carry_synced():
    return _ws_carry("ws_carry_synced", True)


def _cp_async_rows(name, row, read_early=False):
    """Four passes of 16-byte cp.async copies, all in flight at once (K1's prologue), then one
    wait: row(it, tx) is the shared row each pass writes. read_early: each thread reads back its
    own first copy's bytes before the wait that retires it."""
    @T.prim_func
    def kern(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((64, 64), "bfloat16")
            tx = T.get_thread_binding()
            for it in T.unroll(4):
                T.ptx_cp_async(T.access_ptr(S[row(it, tx), tx % 8 * 8], "w", 8),
                               T.access_ptr(A[it * 16 + tx // 8, tx % 8 * 8], "r", 8), 8)
            T.ptx_commit_group()
            if read_early:
                B[tx // 8, tx % 8 * 8] = S[tx // 8, tx % 8 * 8]
            T.ptx_wait_group(0)
            T.sync_threads()
            for i in T.serial(32):
                B[(i * NT + tx) // 64, (i * NT + tx) % 64] = S[(i * NT + tx) // 64, (i * NT + tx) % 64]
    return kern.with_attr("global_symbol", name)


def cp_async_read_early():
    return _cp_async_rows("cp_async_read_early", lambda it, tx: it * 16 + tx // 8, read_early=True)


def cp_async_rows():
    return _cp_async_rows("cp_async_rows", lambda it, tx: it * 16 + tx // 8)


def cp_async_rows_again():
    # passes 0 and 2 (1 and 3) copy into the same row while both copies are in flight
    return _cp_async_rows("cp_async_rows_again", lambda it, tx: it % 2 * 16 + tx // 8)


def cp_async_rows_unindexed():
    # every pass copies into the same row: the address does not name the pass at all
    return _cp_async_rows("cp_async_rows_unindexed", lambda it, tx: tx // 8)


def _next_in_flight(name, v_last):
    """The pairwise form's next_early pattern (k1_prepare, session 37): chunk c + 1's rows X are
    copied during chunk c, behind the barrier after X's last read, while chunk c's V copy is
    retired by wait_group(1), which leaves only the newest group in flight; one wait_group(0) after
    the loop. v_last: V's group is committed after X's, so wait_group(1) leaves V's in flight
    while the block reads it (the bug: groups retire oldest first)."""
    @T.prim_func
    def kern(A: T.Tensor((4, 64, 64), "bfloat16"), W: T.Tensor((4, 64, 64), "bfloat16"),
             B: T.Tensor((4, 64, 64), "bfloat16"), O: T.Tensor((4, 64, 64), "bfloat16")):
        with T.Kernel(1, threads=NT) as bx:
            X = T.alloc_shared((64, 64), "bfloat16")
            Vs = T.alloc_shared((64, 64), "bfloat16")
            tx = T.get_thread_binding()
            for it in T.unroll(4):
                T.ptx_cp_async(T.access_ptr(X[it * 16 + tx // 8, tx % 8 * 8], "w", 8),
                               T.access_ptr(A[0, it * 16 + tx // 8, tx % 8 * 8], "r", 8), 8)
            T.ptx_commit_group()
            for c in T.serial(4):
                T.ptx_wait_group(0)
                T.sync_threads()
                for i in T.serial(32):
                    B[c, (i * NT + tx) // 64, (i * NT + tx) % 64] = X[(i * NT + tx) // 64, (i * NT + tx) % 64]
                T.sync_threads()
                for half in T.unroll(2):
                    if half == (1 if v_last else 0):
                        for it in T.unroll(4):
                            T.ptx_cp_async(T.access_ptr(Vs[it * 16 + tx // 8, tx % 8 * 8], "w", 8),
                                           T.access_ptr(W[c, it * 16 + tx // 8, tx % 8 * 8], "r", 8), 8)
                        T.ptx_commit_group()
                    else:
                        for it in T.unroll(4):
                            T.ptx_cp_async(T.access_ptr(X[it * 16 + tx // 8, tx % 8 * 8], "w", 8),
                                           T.access_ptr(A[T.min(c + 1, 3), it * 16 + tx // 8, tx % 8 * 8], "r", 8),
                                           8, c + 1 < 4)
                        T.ptx_commit_group()
                T.ptx_wait_group(1)
                T.sync_threads()
                for i in T.serial(32):
                    O[c, (i * NT + tx) // 64, (i * NT + tx) % 64] = Vs[(i * NT + tx) // 64, (i * NT + tx) % 64]
            T.ptx_wait_group(0)
    return kern.with_attr("global_symbol", name)


def next_in_flight():
    return _next_in_flight("next_in_flight", False)


def next_in_flight_newest():
    return _next_in_flight("next_in_flight_newest", True)   # wait_group(1) leaves V's group in flight


KERNELS = {f.__name__: f for f in (next_in_flight, next_in_flight_newest, cp_async_rows, cp_async_rows_again, cp_async_rows_unindexed, cp_async_read_early, ws_carry_unsynced, ws_carry_synced, missing_sync, synced, divergent_sync, uniform_sync, divergent_return,
                                   uniform_return, global_neighbour, global_synced, named_count, named_ok,
                                   loop_war, loop_synced, empty_loop_read, empty_loop_synced, mbar_ok, mbar_count, mbar_half_arrive,
                                   mbar_parity, mbar_loop_ok, mbar_loop_parity)}
PASS_CONFIGS = {name: MANUAL for name in KERNELS}
PRECONDITIONS = {"uniform_sync": ["N >= 1"], "divergent_return": ["N1 >= 2", "T >= 1"], "global_neighbour": ["N >= 1"], "global_synced": ["N >= 1"],
                 "uniform_return": ["N1 >= 2", "T >= 1"]}
EXPECT = {"missing_sync": "barriers.race", "synced": None, "divergent_sync": "barriers.divergence", "uniform_sync": None,
          "divergent_return": "barriers.divergence", "uniform_return": None,
          "global_neighbour": "barriers.race", "global_synced": None,
          "named_count": "barriers.named_count", "named_ok": None, "loop_war": "barriers.race", "loop_synced": None,
          "empty_loop_read": "barriers.race", "empty_loop_synced": None,
          "mbar_ok": None, "mbar_count": "barriers.mbarrier_phase", "mbar_half_arrive": "barriers.mbarrier_phase",
          "mbar_parity": "barriers.race", "mbar_loop_ok": None, "mbar_loop_parity": "barriers.parity",
          "ws_carry_unsynced": "barriers.race", "ws_carry_synced": None,
          "cp_async_rows": None, "cp_async_rows_again": "barriers.race", "cp_async_rows_unindexed": "barriers.race",
          "cp_async_read_early": "barriers.race", "next_in_flight": None, "next_in_flight_newest": "barriers.race"}
TWIN = {"missing_sync": "synced", "divergent_sync": "uniform_sync", "divergent_return": "uniform_return",
        "global_neighbour": "global_synced", "named_count": "named_ok",
        "loop_war": "loop_synced", "empty_loop_read": "empty_loop_synced", "mbar_count": "mbar_ok", "mbar_half_arrive": "mbar_ok", "mbar_parity": "mbar_ok",
        "mbar_loop_parity": "mbar_loop_ok", "ws_carry_unsynced": "ws_carry_synced",
        "cp_async_rows_again": "cp_async_rows", "cp_async_rows_unindexed": "cp_async_rows",
        "cp_async_read_early": "cp_async_rows", "next_in_flight_newest": "next_in_flight"}
# the early read's 2-byte loads at a 16-byte stride (degree 4): not the bug it seeds
BANK_BUDGET = {"cp_async_read_early": 4}
