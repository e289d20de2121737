"""Scatter through an index table (a serving engine's state pool): the rows of live entries are
distinct (DISTINCT), so a block per entry may update its row without atomics; a map of those
indices that is not one-to-one makes two blocks write one row."""
import tilelang.language as T

W = 128


def pool_update():
    N, P = T.dynamic("N"), T.dynamic("P")

    @T.prim_func
    def pool_update(X: T.Tensor((N, W), "float32"), idx: T.Tensor((N,), "int64"), pool: T.Tensor((P, W), "float32")):
        with T.Kernel(N, threads=W) as n:
            tx = T.get_thread_binding()
            i = idx[n]
            if i >= 0 and i < T.Cast("int64", P):
                pool[i, tx] = pool[i, tx] + X[n, tx]
    return pool_update


def pool_halved():
    N, P = T.dynamic("N"), T.dynamic("P")

    @T.prim_func
    def pool_halved(X: T.Tensor((N, W), "float32"), idx: T.Tensor((N,), "int64"), pool: T.Tensor((P, W), "float32")):
        with T.Kernel(N, threads=W) as n:
            tx = T.get_thread_binding()
            i = idx[n] // 2                                   # distinct indices 2m and 2m + 1 share a row
            if i >= 0 and i < T.Cast("int64", P):
                pool[i, tx] = pool[i, tx] + X[n, tx]
    return pool_halved


def _clamped_pool(name, guarded_read):
    """kda_decode's form: the row index clamped into the pool, written only when live; read only
    when live too, or (the bug) always: a padded entry (-1, clamped to row 0) then reads row 0
    while the live entry that owns row 0 writes it. The value is never used, but the read races."""
    N, P = T.dynamic("N"), T.dynamic("P")

    @T.prim_func
    def kern(X: T.Tensor((N, W), "float32"), idx: T.Tensor((N,), "int64"), pool: T.Tensor((P, W), "float32")):
        with T.Kernel(N, threads=W) as n:
            tx = T.get_thread_binding()
            acc = T.alloc_local((1,), "float32")
            live = idx[n] >= 0 and idx[n] < T.Cast("int64", P)
            r = T.max(T.min(idx[n], T.Cast("int64", P) - 1), T.int64(0))
            acc[0] = 0.0
            if guarded_read:
                if live:
                    acc[0] = pool[r, tx]
            else:
                acc[0] = pool[r, tx]
            acc[0] = acc[0] * 0.5 + X[n, tx]
            if live:
                pool[r, tx] = acc[0]
    return kern.with_attr("global_symbol", name)


def pool_clamped():
    return _clamped_pool("pool_clamped", True)


def pool_clamped_pad_reads():
    return _clamped_pool("pool_clamped_pad_reads", False)


KERNELS = {f.__name__: f for f in (pool_update, pool_halved, pool_clamped, pool_clamped_pad_reads)}
PRECONDITIONS = {name: ["N >= 1", "N <= 2**20", "P >= 1", "P <= 2**20"] for name in KERNELS}
DISTINCT = ["idx"]
EXPECT = {"pool_update": None, "pool_halved": "barriers.global_race", "pool_clamped": None,
          "pool_clamped_pad_reads": "barriers.global_race"}
TWIN = {"pool_halved": "pool_update", "pool_clamped_pad_reads": "pool_clamped"}


def _exit_pool(name, form):
    """The row index clamped into the pool after the block leaves when its entry is not live
    (`if not live: return`, block-uniform): later statements run only in live blocks. The bugs:
    the return under a test that skips it in odd blocks (their dead entries, clamped to row 0,
    then write row 0), and the write before the return."""
    N, P = T.dynamic("N"), T.dynamic("P")

    @T.prim_func
    def kern(X: T.Tensor((N, W), "float32"), idx: T.Tensor((N,), "int64"), pool: T.Tensor((P, W), "float32")):
        with T.Kernel(N, threads=W) as n:
            tx = T.get_thread_binding()
            r = T.max(T.min(idx[n], T.Cast("int64", P) - 1), T.int64(0))
            if form == "write_first":
                pool[r, tx] = X[n, tx]
            if form == "nested":
                if n % 2 == 0:
                    if idx[n] < 0 or idx[n] >= T.Cast("int64", P):
                        T.thread_return()
            elif idx[n] < 0 or idx[n] >= T.Cast("int64", P):
                T.thread_return()
            if form != "write_first":
                pool[r, tx] = X[n, tx]
    return kern.with_attr("global_symbol", name)


def pool_exit():
    return _exit_pool("pool_exit", "exit")


def pool_exit_nested():
    return _exit_pool("pool_exit_nested", "nested")


def pool_write_before_exit():
    return _exit_pool("pool_write_before_exit", "write_first")


KERNELS.update({f.__name__: f for f in (pool_exit, pool_exit_nested, pool_write_before_exit)})
PRECONDITIONS.update({name: ["N >= 1", "N <= 2**20", "P >= 1", "P <= 2**20"] for name in KERNELS})
EXPECT.update({"pool_exit": None, "pool_exit_nested": "barriers.global_race",
               "pool_write_before_exit": "barriers.global_race"})
TWIN.update({"pool_exit_nested": "pool_exit", "pool_write_before_exit": "pool_exit"})
