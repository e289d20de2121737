"""Bank-conflict bugs: layouts that needed a swizzle, and their swizzled twins."""
import tilelang.language as T

from tilelang.layout import make_linear_layout  # noqa: F401

NT = 32


def column_read():
    @T.prim_func
    def column_read(A: T.Tensor((NT, NT), "float32"), B: T.Tensor((NT, NT), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT, NT), "float32")
            tx = T.get_thread_binding()
            for i in T.serial(NT):
                S[i, tx] = A[i, tx]
            T.sync_threads()
            for i in T.serial(NT):
                B[i, tx] = S[tx, i]            # a warp reads one column: 32 rows, one bank
    return column_read


def column_read_swizzled():
    @T.prim_func
    def column_read_swizzled(A: T.Tensor((NT, NT), "float32"), B: T.Tensor((NT, NT), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((NT, NT), "float32")
            tx = T.get_thread_binding()
            for i in T.serial(NT):
                S[i, tx ^ i] = A[i, tx]        # XOR swizzle: column i of row r sits at r ^ i
            T.sync_threads()
            for i in T.serial(NT):
                B[i, tx] = S[tx, i ^ tx]
    return column_read_swizzled


def _ldmatrix_gemm(linear):
    @T.prim_func
    def kern(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 32), "float16")
            Bs = T.alloc_shared((64, 32), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            if linear:
                T.annotate_layout({As: make_linear_layout(As), Bs: make_linear_layout(Bs)})
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, transpose_B=True, clear_accum=True)
            T.copy(Cf, C)
    return kern


def ldmatrix_linear():
    return _ldmatrix_gemm(True)       # ldmatrix rows 64 bytes apart: 8 rows hit 2 bank groups


def ldmatrix_swizzled():
    return _ldmatrix_gemm(False)


def _ring_read(column):
    """A two-slot ring whose slot comes from a chunk counter stepped over sequences of varying
    length (from cu): the slot's offset has no closed form without the loads, and the lanes'
    own offsets decide the degree. Each thread reads back what it wrote (no barrier needed)."""
    N1 = T.dynamic("N1")

    @T.prim_func
    def kern(A: T.Tensor((NT, NT), "float32"), cu: T.Tensor((N1,), "int32"), B: T.Tensor((NT, NT), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((2, NT, NT), "float32")
            tx = T.get_thread_binding()
            g = T.alloc_var("int32", init=0)
            for q in T.serial(4):
                n = T.min(q, N1 - 2)
                lo = T.max(T.min(cu[n], NT), 0)
                for c in T.serial(T.max(T.min(cu[n + 1], NT) - lo, 0)):
                    for i in T.serial(NT):
                        if column:
                            S[g % 2, tx, i] = A[i, tx]     # a thread's own row: lanes 32 words apart
                        else:
                            S[g % 2, i, tx] = A[i, tx]
                    for i in T.serial(NT):
                        if column:
                            B[i, tx] = S[g % 2, tx, i]
                        else:
                            B[i, tx] = S[g % 2, i, tx]
                    g = g + 1
    return kern


def ring_column_read():
    return _ring_read(True)


def ring_row_read():
    return _ring_read(False)


KERNELS = {f.__name__: f for f in (column_read, column_read_swizzled, ldmatrix_linear, ldmatrix_swizzled,
                                   ring_column_read, ring_row_read)}
PRECONDITIONS = {"ring_column_read": ["N1 >= 2", "N1 <= 2**20"], "ring_row_read": ["N1 >= 2", "N1 <= 2**20"]}
NO_WGMMA = {"tl.disable_wgmma": True}
PASS_CONFIGS = {"ldmatrix_linear": NO_WGMMA, "ldmatrix_swizzled": NO_WGMMA}
EXPECT = {"column_read": "banks.conflicts", "column_read_swizzled": None, "ldmatrix_linear": "banks.conflicts",
          "ldmatrix_swizzled": None, "ring_column_read": "banks.conflicts", "ring_row_read": None}
TWIN = {"column_read": "column_read_swizzled", "ldmatrix_linear": "ldmatrix_swizzled",
        "ring_column_read": "ring_row_read"}
