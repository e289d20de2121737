"""Global-memory bugs: a tail tile TileLang silently guards (the kernel computes zeros there),
an in-kernel view larger than its tensor, split-K partial results stored by several blocks
without atomics, overlapping output tiles, and shared accumulation without atomics."""
import tilelang.language as T

BM = 64
RAW = {"tl.disable_safe_memory_legalize": True}


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
                                   shared_atomic_sum)}
SIZE = ["N >= 1", "N <= 2**20"]
PRECONDITIONS = {"silent_tail": SIZE, "explicit_tail": SIZE, "padded_view": SIZE, "exact_view": SIZE,
                 "splitk_plain_store": ["M >= 64", "M % 64 == 0", "M <= 2**20"],
                 "splitk_atomic": ["M >= 64", "M % 64 == 0", "M <= 2**20"],
                 "overlapping_tiles": SIZE, "disjoint_tiles": SIZE}
PASS_CONFIGS = {"padded_view": RAW, "exact_view": RAW, "overlapping_tiles": RAW, "disjoint_tiles": RAW,
                "splitk_plain_store": RAW, "splitk_atomic": RAW, "shared_plain_sum": RAW, "shared_atomic_sum": RAW}
STRICT = ["silent_tail", "explicit_tail"]
EXPECT = {"silent_tail": "bounds.guarded", "explicit_tail": None, "padded_view": "bounds.global", "exact_view": None,
          "splitk_plain_store": "barriers.global_race", "splitk_atomic": None,
          "overlapping_tiles": "barriers.global_race", "disjoint_tiles": None,
          "shared_plain_sum": "barriers.race", "shared_atomic_sum": None}
TWIN = {"silent_tail": "explicit_tail", "padded_view": "exact_view", "splitk_plain_store": "splitk_atomic",
        "overlapping_tiles": "disjoint_tiles", "shared_plain_sum": "shared_atomic_sum"}
