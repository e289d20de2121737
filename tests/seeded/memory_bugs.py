"""Global-memory bugs: a tail tile TileLang silently guards (the kernel computes zeros there),
an in-kernel view larger than its tensor, split-K partial results stored by several blocks
without atomics, overlapping output tiles (plain stores, and TMA stores' boxes), a block reading
a row another block's TMA store writes, a TMA load of the tile another block writes, and shared
accumulation without atomics."""
import tilelang.language as T

BM = 64
RAW = {"tl.disable_safe_memory_legalize": True}
MANUAL = {"tl.disable_thread_storage_sync": True}   # the kernel places its own barriers


def _scale(name, guarded):
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            if guarded:
                if bx * BM + tx < N:
                    B[bx * BM + tx] = A[bx * BM + tx] * 2.0
            else:
                B[bx * BM + tx] = A[bx * BM + tx] * 2.0      # TileLang guards the tail silently
    return kern.with_attr("global_symbol", name)


def silent_tail():
    return _scale("silent_tail", False)


def explicit_tail():
    return _scale("explicit_tail", True)


def _view(name, pad):
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N, 64), "float32"), B: T.Tensor((N, 64), "float32")):
        with T.Kernel(N, threads=64) as bx:
            tx = T.get_thread_binding()
            Af = T.Tensor((N * 64 + pad,), "float32", A.data)    # a flat view of A
            B[bx, tx] = Af[bx * 64 + tx + pad]                    # reads one row ahead when padded
    return kern.with_attr("global_symbol", name)


def padded_view():
    return _view("padded_view", 64)


def exact_view():
    return _view("exact_view", 0)


def _splitk(name, atomic):
    M = T.dynamic("M")

    @T.prim_func
    def kern(A: T.Tensor((M, 256), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 64), 4, threads=64) as (bx, bz):
            tx = T.get_thread_binding()
            acc = T.alloc_var("float32", init=0.0)
            for k in T.serial(64):
                acc = acc + A[bx * 64 + tx, bz * 64 + k]
            if atomic:
                T.atomic_add(C[bx * 64 + tx], acc)
            else:
                C[bx * 64 + tx] = acc          # the 4 split-K blocks store into the same slot
    return kern.with_attr("global_symbol", name)


def splitk_plain_store():
    return _splitk("splitk_plain_store", False)


def splitk_atomic():
    return _splitk("splitk_atomic", True)


def _tiles(name, stride):
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, stride), threads=BM) as bx:
            tx = T.get_thread_binding()
            if bx * stride + tx < N:
                B[bx * stride + tx] = A[bx * stride + tx] + 1.0   # tiles of 64 every `stride`
    return kern.with_attr("global_symbol", name)


def overlapping_tiles():
    return _tiles("overlapping_tiles", 48)


def disjoint_tiles():
    return _tiles("disjoint_tiles", 64)


def _tma_tiles(name, step, peek):
    """64 x 64 tiles of B stored by TMA, one every `step` rows and two a row of tiles; `peek`
    reads (plainly) the row below the block's tile, which the next block's TMA store writes, or
    else the tile's own first row before the store."""
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N, 128), "float16"), B: T.Tensor((N, 128), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, step), 2, threads=128) as (bx, by):
            tx = T.get_thread_binding()
            F = T.alloc_fragment((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            if tx == 0 and by == 0:
                r = T.min(bx * step + (64 if peek else 0), N - 1)
                C[bx] = B[r, 0]
            T.copy(A[bx * step, by * 64], F)
            T.copy(F, S)
            T.copy(S, B[bx * step, by * 64])
    return kern.with_attr("global_symbol", name)


def tma_overlapping_tiles():
    return _tma_tiles("tma_overlapping_tiles", 32, False)


def tma_disjoint_tiles():
    return _tma_tiles("tma_disjoint_tiles", 64, False)


def tma_tile_read_below():
    return _tma_tiles("tma_tile_read_below", 64, True)


def _tma_read_tiles(name, ahead):
    """Each block reads a 64 x 64 tile of B through TMA (the next block's tile when `ahead`, else
    its own) and then writes its own tile of B with plain stores."""
    N = T.dynamic("N")

    @T.prim_func
    def kern(B: T.Tensor((N, 64), "float16")):
        with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
            F = T.alloc_fragment((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            full = T.alloc_barrier(arrive_count=[128])
            r0 = (bx + 1) * 64 if ahead else bx * 64
            T.tma_copy(B[r0:r0 + 64, :], S, barrier=full[0])
            T.barrier_arrive(full[0])
            T.barrier_wait(full[0], 0)
            T.copy(S, F)
            for i, j in T.Parallel(64, 64):
                F[i, j] = F[i, j] * T.float16(2.0)
            T.copy(F, B[bx * 64, 0])
    return kern.with_attr("global_symbol", name)


def tma_load_ahead():
    return _tma_read_tiles("tma_load_ahead", True)


def tma_load_own():
    return _tma_read_tiles("tma_load_own", False)


def _shared_sum(name, atomic):
    NT = 128

    @T.prim_func
    def kern(A: T.Tensor((NT,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((1,), "float32")
            tx = T.get_thread_binding()
            if tx == 0:
                S[0] = 0.0
            T.sync_threads()
            if atomic:
                T.atomic_add(S[0], A[tx])
            else:
                S[0] = S[0] + A[tx]             # read-modify-write by all threads at once
            T.sync_threads()
            if tx == 0:
                B[0] = S[0]
    return kern.with_attr("global_symbol", name)


def shared_plain_sum():
    return _shared_sum("shared_plain_sum", False)


def shared_atomic_sum():
    return _shared_sum("shared_atomic_sum", True)


KERNELS = {f.__name__: f for f in (silent_tail, explicit_tail, padded_view, exact_view, splitk_plain_store,
                                   splitk_atomic, overlapping_tiles, disjoint_tiles, shared_plain_sum,
                                   shared_atomic_sum, tma_overlapping_tiles, tma_disjoint_tiles,
                                   tma_tile_read_below, tma_load_ahead, tma_load_own)}
SIZE = ["N >= 1", "N <= 2**20"]
PRECONDITIONS = {"silent_tail": SIZE, "explicit_tail": SIZE, "padded_view": SIZE, "exact_view": SIZE,
                 "splitk_plain_store": ["M >= 64", "M % 64 == 0", "M <= 2**20"],
                 "splitk_atomic": ["M >= 64", "M % 64 == 0", "M <= 2**20"],
                 "overlapping_tiles": SIZE, "disjoint_tiles": SIZE, "tma_overlapping_tiles": SIZE,
                 "tma_disjoint_tiles": SIZE, "tma_tile_read_below": SIZE, "tma_load_ahead": SIZE,
                 "tma_load_own": SIZE}
PASS_CONFIGS = {"padded_view": RAW, "exact_view": RAW, "overlapping_tiles": RAW, "disjoint_tiles": RAW,
                "splitk_plain_store": RAW, "splitk_atomic": RAW, "shared_plain_sum": RAW, "shared_atomic_sum": RAW}
STRICT = ["silent_tail", "explicit_tail"]
EXPECT = {"silent_tail": "bounds.guarded", "explicit_tail": None, "padded_view": "bounds.global", "exact_view": None,
          "splitk_plain_store": "barriers.global_race", "splitk_atomic": None,
          "overlapping_tiles": "barriers.global_race", "disjoint_tiles": None,
          "shared_plain_sum": "barriers.race", "shared_atomic_sum": None,
          "tma_overlapping_tiles": "barriers.global_race", "tma_disjoint_tiles": None,
          "tma_tile_read_below": "barriers.global_race", "tma_load_ahead": "barriers.global_race",
          "tma_load_own": None}
TWIN = {"silent_tail": "explicit_tail", "padded_view": "exact_view", "splitk_plain_store": "splitk_atomic",
        "overlapping_tiles": "disjoint_tiles", "shared_plain_sum": "shared_atomic_sum",
        "tma_overlapping_tiles": "tma_disjoint_tiles", "tma_tile_read_below": "tma_disjoint_tiles",
        "tma_load_ahead": "tma_load_own"}


def _tma_store_rows(name, step, read_back):
    """One block stores four 64 x 64 tiles of B through TMA, one every `step` rows (64: disjoint;
    32: each overlaps the last, two stores in flight on one half tile), and with `read_back`
    thread 0 reads the first tile's first row after the stores: the writes are still in flight
    (tma_store_wait waits for the shared-memory read only)."""
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 64), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, 256), threads=128) as bx:
            tx = T.get_thread_binding()
            F = T.alloc_fragment((64, 64), "float16")
            S = T.alloc_shared((64, 64), "float16")
            for i in T.serial(4):
                T.copy(A[bx * 256 + i * 64, 0], F)
                T.copy(F, S)
                T.copy(S, B[bx * 256 + i * step, 0])
            if read_back and tx == 0:
                C[bx] = B[T.min(bx * 256, N - 1), 0]
    return kern.with_attr("global_symbol", name)


def tma_store_rows():
    return _tma_store_rows("tma_store_rows", 64, False)


def tma_store_rows_overlap():
    return _tma_store_rows("tma_store_rows_overlap", 32, False)


def tma_store_read_back():
    return _tma_store_rows("tma_store_read_back", 64, True)


KERNELS.update({f.__name__: f for f in (tma_store_rows, tma_store_rows_overlap, tma_store_read_back)})
PRECONDITIONS.update({n: SIZE for n in ("tma_store_rows", "tma_store_rows_overlap", "tma_store_read_back")})
EXPECT.update({"tma_store_rows": None, "tma_store_rows_overlap": "barriers.tma_store_overlap",
               "tma_store_read_back": "barriers.tma_store_overlap"})
TWIN.update({"tma_store_rows_overlap": "tma_store_rows", "tma_store_read_back": "tma_store_rows"})


# 1-D bulk TMA copies (tl::tma_load / tl::tma_store with a pointer and a byte count): TileLang
# lowers T.tma_copy to them where the region is contiguous and provably in bounds, hence the
# static length
BULK_N = 4096


def _bulk_read(name, ahead):
    """Each block bulk-loads 256 elements of B (the next block's when `ahead`, else its own) and
    then writes its own 256 with plain stores."""
    N = BULK_N

    @T.prim_func
    def kern(B: T.Tensor((N,), "float16")):
        with T.Kernel(N // 256 - 1, threads=128) as bx:
            S = T.alloc_shared((256,), "float16")
            full = T.alloc_barrier(arrive_count=[128])
            tx = T.get_thread_binding()
            r0 = (bx + 1) * 256 if ahead else bx * 256
            T.tma_copy(B[r0:r0 + 256], S, barrier=full[0])
            T.barrier_arrive(full[0])
            T.barrier_wait(full[0], 0)
            for i in T.serial(2):
                B[bx * 256 + tx * 2 + i] = S[tx * 2 + i] * T.float16(2.0)
    return kern.with_attr("global_symbol", name)


def bulk_load_ahead():
    return _bulk_read("bulk_load_ahead", True)


def bulk_load_own():
    return _bulk_read("bulk_load_own", False)


def _bulk_store(name, read_back):
    """Each block bulk-stores its 256 elements of B; with `read_back` thread 0 then reads the first
    of them, which the store may still be writing."""
    N = BULK_N

    @T.prim_func
    def kern(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16"), C: T.Tensor((N // 256,), "float16")):
        with T.Kernel(N // 256, threads=128) as bx:
            S = T.alloc_shared((256,), "float16")
            tx = T.get_thread_binding()
            for i in T.serial(2):
                S[tx * 2 + i] = A[bx * 256 + tx * 2 + i] * T.float16(2.0)
            T.tma_copy(S, B[bx * 256:bx * 256 + 256])
            if read_back and tx == 0:
                C[bx] = B[bx * 256]
    return kern.with_attr("global_symbol", name)


def bulk_store_rows():
    return _bulk_store("bulk_store_rows", False)


def bulk_store_read_back():
    return _bulk_store("bulk_store_read_back", True)


KERNELS.update({f.__name__: f for f in (bulk_load_ahead, bulk_load_own, bulk_store_rows, bulk_store_read_back)})
EXPECT.update({"bulk_load_ahead": "barriers.global_race", "bulk_load_own": None,
               "bulk_store_rows": None, "bulk_store_read_back": "barriers.tma_store_overlap"})
TWIN.update({"bulk_load_ahead": "bulk_load_own", "bulk_store_read_back": "bulk_store_rows"})



def _write_then_store(name, tiled, synced, apart=False):
    """Each thread zeroes two elements of every row of its block's 64 x 64 tile of B with plain
    stores, then one thread stores the block's shared copy of A over the same tile through TMA
    (a tiled store when `tiled`: B's rows are twice the tile's width, so the tile is not one
    contiguous range; else a 1-D bulk store). Without a barrier between the two (`synced`
    False), another thread's zeroes may land after the store's bytes. With it they still need a
    fence.proxy.async.global between the generic writes and the async-proxy store (2.21.0), which
    TileLang does not emit: both are bugs. `apart`: the zeroes go to the other half of the rows,
    bytes the store does not write (clean)."""
    N = BULK_N
    W = 2 if tiled else 1

    @T.prim_func
    def kern(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 64 * W), "float16")):
        with T.Kernel(N // 64, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            tx = T.get_thread_binding()
            for r in T.serial(32):
                S[r * 2 + tx // 64, tx % 64] = A[bx * 64 + r * 2 + tx // 64, tx % 64] * T.float16(2.0)
            T.fence_proxy_async()
            T.sync_threads()
            for r in T.serial(32):
                B[bx * 64 + r * 2 + tx // 64, tx % 64 + (64 if apart else 0)] = T.float16(0.0)
            if synced:
                T.sync_threads()
            T.copy(S, B[bx * 64:bx * 64 + 64, 0:64])
    return kern.with_attr("global_symbol", name)


def write_then_tma_store():
    return _write_then_store("write_then_tma_store", True, False)


def write_sync_tma_store():
    return _write_then_store("write_sync_tma_store", True, True)


def write_beside_tma_store():
    return _write_then_store("write_beside_tma_store", True, True, apart=True)


def write_then_bulk_store():
    return _write_then_store("write_then_bulk_store", False, False)


def write_sync_bulk_store():
    return _write_then_store("write_sync_bulk_store", False, True)


_WTS = ("write_then_tma_store", "write_sync_tma_store", "write_beside_tma_store", "write_then_bulk_store",
        "write_sync_bulk_store")
KERNELS.update({n: globals()[n] for n in _WTS})
PASS_CONFIGS.update({n: MANUAL for n in _WTS})
# the bulk store's global side is a write of its issuing thread in barriers.race as well
EXPECT.update({"write_then_tma_store": "barriers.tma_store_overlap", "write_sync_tma_store": "barriers.proxy_fence",
               "write_beside_tma_store": None, "write_then_bulk_store": "barriers.race",
               "write_sync_bulk_store": "barriers.proxy_fence"})
TWIN.update({"write_then_tma_store": "write_beside_tma_store", "write_sync_tma_store": "write_beside_tma_store",
             "write_then_bulk_store": "write_beside_tma_store", "write_sync_bulk_store": "write_beside_tma_store"})


def _load_then_store(name, wait_first):
    """Each block bulk-loads its 256 elements of B into shared memory and bulk-stores twice A's
    over them (an in-place update). The store must wait for the load's mbarrier phase
    (`wait_first`); issued before that wait, it may write bytes the load has not read yet."""
    N = BULK_N

    @T.prim_func
    def kern(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(N // 256, threads=128) as bx:
            S = T.alloc_shared((256,), "float16")
            R = T.alloc_shared((256,), "float16")
            full = T.alloc_barrier(arrive_count=[128])
            tx = T.get_thread_binding()
            for i in T.serial(2):
                R[tx * 2 + i] = A[bx * 256 + tx * 2 + i] * T.float16(2.0)
            T.tma_copy(B[bx * 256:bx * 256 + 256], S, barrier=full[0])
            if wait_first:
                T.barrier_arrive(full[0])
                T.barrier_wait(full[0], 0)
            T.tma_copy(R, B[bx * 256:bx * 256 + 256])
            if not wait_first:
                T.barrier_arrive(full[0])
                T.barrier_wait(full[0], 0)
            for i in T.serial(2):
                C[bx * 256 + tx * 2 + i] = S[tx * 2 + i]
    return kern.with_attr("global_symbol", name)


def store_before_load_done():
    return _load_then_store("store_before_load_done", False)


def store_after_load_done():
    return _load_then_store("store_after_load_done", True)


KERNELS.update({f.__name__: f for f in (store_before_load_done, store_after_load_done)})
EXPECT.update({"store_before_load_done": "barriers.tma_store_overlap", "store_after_load_done": None})
TWIN.update({"store_before_load_done": "store_after_load_done"})


def _write_then_load(name, apart, extern_fence=False):
    """Each block writes half of every row of its 64 rows of B with plain stores (a workspace),
    synchronises, then reads columns 0..63 of those rows back through a tiled TMA load. The load
    is an async-proxy read of bytes the generic proxy wrote (`apart` False): it needs a
    fence.proxy.async.global, which TileLang does not emit, and a barrier does not stand in for it.
    `apart`: the plain stores write columns 64..127, bytes the load does not read (clean).
    `extern_fence`: an extern call between the two, which could be the user's own global fence
    (verify models no ordering of extern calls, so the finding is UNKNOWN, not FAILED: a unit test,
    not a seeded bug)."""
    N = BULK_N

    @T.prim_func
    def kern(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 128), "float16"), C: T.Tensor((N, 64), "float16")):
        with T.Kernel(N // 64, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            full = T.alloc_barrier(arrive_count=[128])
            tx = T.get_thread_binding()
            for r in T.serial(32):
                B[bx * 64 + r * 2 + tx // 64, tx % 64 + (64 if apart else 0)] = \
                    A[bx * 64 + r * 2 + tx // 64, tx % 64] * T.float16(2.0)
            if extern_fence:
                T.evaluate(T.call_extern("handle", "user_fence_proxy_async_global"))
            T.sync_threads()
            T.tma_copy(B[bx * 64:bx * 64 + 64, 0:64], S, barrier=full[0])
            T.barrier_arrive(full[0])
            T.barrier_wait(full[0], 0)
            for r in T.serial(32):
                C[bx * 64 + r * 2 + tx // 64, tx % 64] = S[r * 2 + tx // 64, tx % 64]
    return kern.with_attr("global_symbol", name)


def write_then_tma_load():
    return _write_then_load("write_then_tma_load", False)


def write_beside_tma_load():
    return _write_then_load("write_beside_tma_load", True)


KERNELS.update({f.__name__: f for f in (write_then_tma_load, write_beside_tma_load)})
PASS_CONFIGS.update({n: MANUAL for n in ("write_then_tma_load", "write_beside_tma_load")})
EXPECT.update({"write_then_tma_load": "barriers.proxy_fence", "write_beside_tma_load": None})
TWIN.update({"write_then_tma_load": "write_beside_tma_load"})
