"""Layout bugs: overlapping live shared buffers, a misaligned TMA destination, too much
shared memory, and a non-bijective shared layout."""
import tilelang.language as T
from tilelang import tvm  # noqa: F401

from verify import mutate
from verify.tir import tirx

NT = 128


def two_buffers():
    @T.prim_func
    def two_buffers(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32"), C: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S1 = T.alloc_shared((NT,), "float32")
            S2 = T.alloc_shared((NT,), "float32")
            tx = T.get_thread_binding()
            S1[tx] = A[tx]
            S2[tx] = B[tx]
            T.sync_threads()
            C[tx] = S1[NT - 1 - tx] + S2[(tx + 1) % NT]
    return two_buffers


def tma_copy():
    N = T.dynamic("N")

    @T.prim_func
    def tma_copy(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 64), "float16")):
        with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            P = T.alloc_shared((64,), "float32")
            T.copy(A[bx * 64, 0], S)
            for i in T.Parallel(64):
                P[i] = T.Cast("float32", S[i, 0])
            for i, j in T.Parallel(64, 64):
                S[i, j] = S[i, j] + T.Cast("float16", P[i])
            T.copy(S, B[bx * 64, 0])
    return tma_copy


def too_much_smem():
    @T.prim_func
    def too_much_smem(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((240 * 1024 // 4,), "float32")   # 240 KB > 227 KB per block
            tx = T.get_thread_binding()
            S[tx * 480] = A[tx]
            T.sync_threads()
            B[tx] = S[(NT - 1 - tx) * 480]
    return too_much_smem


def fits_smem():
    @T.prim_func
    def fits_smem(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            S = T.alloc_shared((200 * 1024 // 4,), "float32")
            tx = T.get_thread_binding()
            S[tx * 400] = A[tx]
            T.sync_threads()
            B[tx] = S[(NT - 1 - tx) * 400]
    return fits_smem


def _overlap(f):
    # place S2 on top of S1 while both hold live data
    offs = {}
    from tvm.tirx.stmt_functor import post_order_visit

    def visit(n):
        if isinstance(n, tirx.Bind):
            offs[str(n.var.name)] = n.value
    post_order_visit(f.body, visit)
    return mutate.rebind(f, "S2", lambda v: offs["S1"])


def _misaligned_tma(f):
    # move the TMA destination (and the buffer after it) 16 bytes off the 1024-byte swizzle
    # alignment; the region grows by 16 bytes so that nothing else changes
    def shift(v):
        return tirx.Call(v.dtype, v.op, [v.args[0], v.args[1] + 16])
    f = mutate.rebind(f, "S", shift)
    f = mutate.rebind(f, "P", shift)
    return f.with_attr("dyn_shared_memory_buf", int(f.attrs["dyn_shared_memory_buf"]) + 16)


KERNELS = {"two_buffers": two_buffers, "tma_copy": tma_copy, "too_much_smem": too_much_smem, "fits_smem": fits_smem}
MUTATIONS = {"overlapping_buffers": ("two_buffers", _overlap), "misaligned_tma": ("tma_copy", _misaligned_tma)}
PRECONDITIONS = {"tma_copy": ["N >= 1", "N <= 2**20"], "misaligned_tma": ["N >= 1", "N <= 2**20"]}
BANK_BUDGET = {"tma_copy": 8, "misaligned_tma": 8, "too_much_smem": 32, "fits_smem": 32}
EXPECT = {"two_buffers": None, "overlapping_buffers": "layout.overlap", "tma_copy": None, "misaligned_tma": "layout.alignment",
          "too_much_smem": "layout.smem_limit", "fits_smem": None}
TWIN = {"overlapping_buffers": "two_buffers", "misaligned_tma": "tma_copy", "too_much_smem": "fits_smem"}
