"""Bugs in what a proof is about: preconditions that cannot hold together (every check would be
proved vacuously) or that name a variable the kernel does not have (a free symbol), and tensor
parameters that are one buffer (every memory check holds, yet the kernel reads the wrong tensor)."""
import tilelang.language as T

BM = 64


def _copy(name, guarded=False):
    N = T.dynamic("N")

    @T.prim_func
    def kern(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            if guarded:
                if bx * BM + tx < N:
                    B[bx * BM + tx] = A[bx * BM + tx]
            else:
                B[bx * BM + tx] = A[bx * BM + tx]        # in bounds only when N is a multiple of 64
    return kern.with_attr("global_symbol", name)


def contradictory_pre():
    return _copy("contradictory_pre")


def misspelt_pre():
    return _copy("misspelt_pre", guarded=True)


def multiple_pre():
    return _copy("multiple_pre")


def _sum(name, shared):
    """C = A + B. With `shared`, A and B are annotated with one T.Tensor object, which TileLang
    binds to one buffer: the kernel computes B + B (a slip made in kda_kernels/k2_wy.py)."""
    N = T.dynamic("N")
    ab = T.Tensor((N,), "float32")

    @T.prim_func
    def kern(A: ab if shared else T.Tensor((N,), "float32"), B: ab, C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=BM) as bx:
            tx = T.get_thread_binding()
            if bx * BM + tx < N:
                C[bx * BM + tx] = A[bx * BM + tx] + B[bx * BM + tx]
    return kern.with_attr("global_symbol", name)


def shared_param_buffer():
    return _sum("shared_param_buffer", shared=True)


def distinct_param_buffers():
    return _sum("distinct_param_buffers", shared=False)


KERNELS = {f.__name__: f for f in (contradictory_pre, misspelt_pre, multiple_pre, shared_param_buffer,
                                   distinct_param_buffers)}
RAW = {"tl.disable_safe_memory_legalize": True}
PASS_CONFIGS = {name: RAW for name in KERNELS}
PRECONDITIONS = {
    # N % 64 == 0 written as two bounds that exclude each other: everything "proves"
    "contradictory_pre": ["N >= 64", "N % 64 == 0", "N < 0"],
    # a size bound on a name the kernel does not have: it bounds nothing
    "misspelt_pre": ["N >= 1", "n <= 2**20"],
    "multiple_pre": ["N >= 64", "N % 64 == 0", "N <= 2**20"],
    "shared_param_buffer": ["N >= 1", "N <= 2**20"],
    "distinct_param_buffers": ["N >= 1", "N <= 2**20"],
}
EXPECT = {"contradictory_pre": "model.preconditions", "misspelt_pre": "model.preconditions", "multiple_pre": None,
          "shared_param_buffer": "model.params", "distinct_param_buffers": None}
TWIN = {"contradictory_pre": "multiple_pre", "misspelt_pre": "multiple_pre",
        "shared_param_buffer": "distinct_param_buffers"}
