"""mbarrier protocols written by hand (TMA tiles handed from a producer warp to consumers):
a tile read before its wait; a wait that only runs inside a loop that may not run at all; a
loop that restarts the parity sequence a prologue already advanced; an empty barrier only one
of two consumer warpgroups arrives on; a producer warpgroup whose copies run one slot ahead of
its own product (the shape of K2Config.u0_in_k2's loader), with and without the wait that frees
the slot it copies into; copies whose thread never arrives on their barrier (another warp
arrives), read after a wait one phase behind them."""
import tilelang.language as T

N_ = 64


def _read_tile(name, wait_first):
    @T.prim_func
    def kern(A: T.Tensor((N_, N_), "float16"), B: T.Tensor((N_, N_), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((N_, N_), "float16")
            full = T.alloc_barrier(arrive_count=[32])
            tx = T.get_thread_binding()
            if tx < 32:
                T.tma_copy(A[0:N_, 0:N_], A_s, barrier=full[0])
                T.barrier_arrive(full[0])
            if wait_first:
                T.barrier_wait(full[0], 0)
                for j in T.serial(N_ // 2):
                    B[tx // 2, (tx % 2) * (N_ // 2) + j] = A_s[tx // 2, (tx % 2) * (N_ // 2) + j]
            else:
                for j in T.serial(N_ // 2):
                    B[tx // 2, (tx % 2) * (N_ // 2) + j] = A_s[tx // 2, (tx % 2) * (N_ // 2) + j]
                T.barrier_wait(full[0], 0)
    return kern.with_attr("global_symbol", name)


def read_before_wait():
    return _read_tile("read_before_wait", False)


def wait_then_read():
    return _read_tile("wait_then_read", True)


def _loop_wait(name, wait_in_loop):
    K = T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((N_, N_), "float16"), X: T.Tensor((K,), "float32"), B: T.Tensor((N_, N_), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((N_, N_), "float16")
            full = T.alloc_barrier(arrive_count=[32])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx < 32:
                T.tma_copy(A[0:N_, 0:N_], A_s, barrier=full[0])
                T.barrier_arrive(full[0])
            if not wait_in_loop:
                T.barrier_wait(full[0], 0)
            for k in T.serial(K):
                if wait_in_loop:
                    if k == 0:
                        T.barrier_wait(full[0], 0)   # never runs when K == 0
                acc = acc + X[k]
            for j in T.serial(N_ // 2):
                B[tx // 2, (tx % 2) * (N_ // 2) + j] = A_s[tx // 2, (tx % 2) * (N_ // 2) + j] * T.Cast("float16", acc)
    return kern.with_attr("global_symbol", name)


def wait_in_empty_loop():
    return _loop_wait("wait_in_empty_loop", True)


def wait_before_loop():
    return _loop_wait("wait_before_loop", False)


def _phases(name, offset):
    K = T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((K + 1, N_, N_), "float16"), B: T.Tensor((N_, N_), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((N_, N_), "float16")
            full = T.alloc_barrier(arrive_count=[32])
            empty = T.alloc_barrier(arrive_count=[96])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx < 32:
                T.tma_copy(A[0, 0:N_, 0:N_], A_s, barrier=full[0])     # prologue: phase 0
                T.barrier_arrive(full[0])
                for k in T.serial(K):
                    T.barrier_wait(empty[0], k % 2)
                    T.tma_copy(A[k + 1, 0:N_, 0:N_], A_s, barrier=full[0])
                    T.barrier_arrive(full[0])
            else:
                T.barrier_wait(full[0], 0)
                acc = acc + T.Cast("float32", A_s[(tx - 32) % N_, 0])
                T.barrier_arrive(empty[0])
                for k in T.serial(K):
                    T.barrier_wait(full[0], (k + offset) % 2)      # the loop's k-th tile is phase k + 1
                    acc = acc + T.Cast("float32", A_s[(tx - 32) % N_, 0])
                    T.barrier_arrive(empty[0])
                B[(tx - 32) % N_, (tx - 32) // N_] = acc
    return kern.with_attr("global_symbol", name)


def parity_restarts():
    return _phases("parity_restarts", 0)


def parity_continues():
    return _phases("parity_continues", 1)


def _roles(name, both):
    K = T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((K, N_, N_), "float16"), B: T.Tensor((256, 1), "float32")):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((N_, N_), "float16")
            full = T.alloc_barrier(arrive_count=[32])
            empty = T.alloc_barrier(arrive_count=[256])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx < 256:
                for k in T.serial(K):
                    T.barrier_wait(full[0], k % 2)
                    acc = acc + T.Cast("float32", A_s[tx // 4, tx % 4])
                    if both:
                        T.barrier_arrive(empty[0])
                    else:
                        if tx < 128:
                            T.barrier_arrive(empty[0])   # the second consumer warpgroup never arrives
                B[tx, 0] = acc
            else:
                if tx < 288:
                    for k in T.serial(K):
                        T.barrier_wait(empty[0], (k + 1) % 2)
                        T.tma_copy(A[k, 0:N_, 0:N_], A_s, barrier=full[0])
                        T.barrier_arrive(full[0])
    return kern.with_attr("global_symbol", name)


def one_role_arrives():
    return _roles("one_role_arrives", False)


def both_roles_arrive():
    return _roles("both_roles_arrive", True)


def _ahead(name, wait_empty):
    """Two ring slots. The producer warpgroup's warp 0 copies tile k + 1 of A (on `raw`) and of
    Y (on full, its transaction bytes only) while the whole warpgroup forms tile k's product
    X = 2 A in its slot and arrives on full[k % 2]: in iteration k it arrives on slot k % 2 and
    then copies into slot (k + 1) % 2 of the same barrier array, whose next arrival (iteration
    k + 1) completes the phase the copy counts toward."""
    K = T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((K, N_, N_), "float16"), Y: T.Tensor((K, N_, N_), "float16"),
             B: T.Tensor((128, 1), "float32")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((2, N_, N_), "float16")
            X_s = T.alloc_shared((2, N_, N_), "float16")
            Y_s = T.alloc_shared((2, N_, N_), "float16")
            raw = T.alloc_barrier(arrive_count=[32, 32])
            full = T.alloc_barrier(arrive_count=[128, 128])
            empty = T.alloc_barrier(arrive_count=[128, 128])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx < 128:
                for k in T.serial(K):
                    T.barrier_wait(full[k % 2], (k // 2) % 2)
                    for j in T.serial(N_ // 2):
                        acc = acc + T.Cast("float32", X_s[k % 2, tx // 2, (tx % 2) * (N_ // 2) + j]) \
                            + T.Cast("float32", Y_s[k % 2, tx // 2, (tx % 2) * (N_ // 2) + j])
                    T.barrier_arrive(empty[k % 2])
                B[tx, 0] = acc
            else:
                T.barrier_wait(empty[0], 1)
                if tx < 160:
                    T.tma_copy(A[0, 0:N_, 0:N_], A_s[0, :, :], barrier=raw[0])
                    T.tma_copy(Y[0, 0:N_, 0:N_], Y_s[0, :, :], barrier=full[0])
                    T.barrier_arrive(raw[0])
                for k in T.serial(K - 1):
                    T.barrier_wait(raw[k % 2], (k // 2) % 2)
                    for j in T.serial(N_ // 2):
                        X_s[k % 2, (tx - 128) // 2, ((tx - 128) % 2) * (N_ // 2) + j] = \
                            A_s[k % 2, (tx - 128) // 2, ((tx - 128) % 2) * (N_ // 2) + j] * T.float16(2)
                    T.barrier_arrive(full[k % 2])
                    if wait_empty:
                        T.barrier_wait(empty[(k + 1) % 2], ((k + 1) // 2 + 1) % 2)
                    if tx < 160:
                        T.tma_copy(A[k + 1, 0:N_, 0:N_], A_s[(k + 1) % 2, :, :], barrier=raw[(k + 1) % 2])
                        T.tma_copy(Y[k + 1, 0:N_, 0:N_], Y_s[(k + 1) % 2, :, :], barrier=full[(k + 1) % 2])
                        T.barrier_arrive(raw[(k + 1) % 2])
                T.barrier_wait(raw[(K - 1) % 2], ((K - 1) // 2) % 2)
                for j in T.serial(N_ // 2):
                    X_s[(K - 1) % 2, (tx - 128) // 2, ((tx - 128) % 2) * (N_ // 2) + j] = \
                        A_s[(K - 1) % 2, (tx - 128) // 2, ((tx - 128) % 2) * (N_ // 2) + j] * T.float16(2)
                T.barrier_arrive(full[(K - 1) % 2])
    return kern.with_attr("global_symbol", name)


def ahead_unfreed():
    return _ahead("ahead_unfreed", False)


def ahead_freed():
    return _ahead("ahead_freed", True)


def _tx_only(name, lag):
    """Warp 4 copies tile k into slot k % 2 with full[k % 2]'s transaction bytes and never
    arrives on full; warp 5 arrives. The consumers' wait is `lag` phases behind the copy."""
    K = T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((K, N_, N_), "float16"), B: T.Tensor((128, 1), "float32")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((2, N_, N_), "float16")
            full = T.alloc_barrier(arrive_count=[32, 32])
            empty = T.alloc_barrier(arrive_count=[128, 128])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx < 128:
                for k in T.serial(K):
                    T.barrier_wait(full[k % 2], ((k // 2) + lag) % 2)
                    for j in T.serial(N_ // 2):
                        acc = acc + T.Cast("float32", A_s[k % 2, tx // 2, (tx % 2) * (N_ // 2) + j])
                    T.barrier_arrive(empty[k % 2])
                B[tx, 0] = acc
            elif tx < 160:
                for k in T.serial(K):
                    T.barrier_wait(empty[k % 2], (k // 2 + 1) % 2)
                    T.tma_copy(A[k, 0:N_, 0:N_], A_s[k % 2, :, :], barrier=full[k % 2])
            elif tx < 192:
                for k in T.serial(K):
                    T.barrier_arrive(full[k % 2])
    return kern.with_attr("global_symbol", name)


def tx_only_lagging_wait():
    return _tx_only("tx_only_lagging_wait", 1)


def tx_only_wait():
    return _tx_only("tx_only_wait", 0)


def _unrolled(name, free_first):
    """Three ring slots. Warp 4 copies tile k into slot k % 3 (full[k % 3], transaction bytes) after
    the consumers freed it; the consumer warpgroup runs the ring's period unrolled (a loop over
    periods k3, slot u constant in each copy, chunk 3 k3 + u guarded by `< K`), as K2's "unroll"
    form does. With free_first the consumers arrive on empty before they read the slot."""
    K = T.dynamic("K")

    @T.prim_func
    def kern(A: T.Tensor((K, N_, N_), "float16"), B: T.Tensor((128, 1), "float32")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((3, N_, N_), "float16")
            full = T.alloc_barrier(arrive_count=[1, 1, 1])
            empty = T.alloc_barrier(arrive_count=[128, 128, 128])
            acc = T.alloc_var("float32", init=0.0)
            tx = T.get_thread_binding()
            if tx < 128:
                for k3 in T.serial(T.ceildiv(K, 3)):
                    for u in T.unroll(3):
                        if k3 * 3 + u < K:
                            T.barrier_wait(full[u], k3 % 2)
                            if free_first:
                                T.barrier_arrive(empty[u])
                            for j in T.serial(N_ // 2):
                                acc = acc + T.Cast("float32", A_s[u, tx // 2, (tx % 2) * (N_ // 2) + j])
                            if not free_first:
                                T.barrier_arrive(empty[u])
                B[tx, 0] = acc
            elif tx < 160:
                for k in T.serial(K):
                    T.barrier_wait(empty[k % 3], (k // 3 + 1) % 2)
                    if tx == 128:
                        T.tma_copy(A[k, 0:N_, 0:N_], A_s[k % 3, :, :], barrier=full[k % 3])
                        T.barrier_arrive(full[k % 3])
    return kern.with_attr("global_symbol", name)


def unrolled_early_free():
    return _unrolled("unrolled_early_free", True)


def unrolled_ring():
    return _unrolled("unrolled_ring", False)


KERNELS = {f.__name__: f for f in (read_before_wait, wait_then_read, wait_in_empty_loop, wait_before_loop,
                                   parity_restarts, parity_continues, one_role_arrives, both_roles_arrive,
                                   ahead_unfreed, ahead_freed, tx_only_lagging_wait, tx_only_wait,
                                   unrolled_early_free, unrolled_ring)}
MANUAL = {"tl.disable_thread_storage_sync": True, "tl.disable_warp_specialized": True}
PASS_CONFIGS = {name: MANUAL for name in KERNELS}
PRECONDITIONS = {name: ["K >= 0", "K <= 2**16"] for name in ("wait_in_empty_loop", "wait_before_loop")}
PRECONDITIONS.update({name: ["K >= 1", "K <= 2**16"] for name in ("parity_restarts", "parity_continues",
                                                                  "one_role_arrives", "both_roles_arrive",
                                                                  "ahead_unfreed", "ahead_freed",
                                                                  "tx_only_lagging_wait", "tx_only_wait",
                                                                  "unrolled_early_free", "unrolled_ring")})
BANK_BUDGET = {name: 32 for name in KERNELS}
EXPECT = {"read_before_wait": "barriers.race", "wait_then_read": None,
          "wait_in_empty_loop": "barriers.race", "wait_before_loop": None,
          "parity_restarts": "barriers.parity", "parity_continues": None,
          "one_role_arrives": "barriers.mbarrier_phase", "both_roles_arrive": None,
          "ahead_unfreed": "barriers.race", "ahead_freed": None,
          "tx_only_lagging_wait": "barriers.race", "tx_only_wait": None,
          "unrolled_early_free": "barriers.race", "unrolled_ring": None}
TWIN = {"read_before_wait": "wait_then_read", "wait_in_empty_loop": "wait_before_loop",
        "parity_restarts": "parity_continues", "one_role_arrives": "both_roles_arrive",
        "ahead_unfreed": "ahead_freed", "tx_only_lagging_wait": "tx_only_wait",
        "unrolled_early_free": "unrolled_ring"}
