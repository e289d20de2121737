"""Outputs written more than once by one block, which every other check proves: bounds hold, the
block's threads are ordered by barriers, and blocks write disjoint rows.

- slot_bound_early: a block walks NS chunk slots and stores each chunk's row to the slot the
  register held before the loop (session 41's first ws_chunks K1: a Python name bound to the slot
  register's read before the loop is a let-binding of its first value). Every chunk of a block
  lands in its first slot. Twin: slot_bound_in_loop.
- poison_then_store: a block fills its row with a constant, synchronises, then stores the values
  over it. Correct output, two writes a byte. Twin: store_once.
- guards_overlap: a block stores the whole chunks of its row with one statement and the tail with
  another, under two guards that both hold on the last whole chunk. Twin: tail_branch, the same
  two stores in the two branches of one `if` (which the check reads as one store a chunk).
- branch_each_step: a block walks NS steps and stores its row in one of the two branches of an
  `if` on a value read each step: one branch a step, but the row is stored NS times. Twin:
  flag_branch, the same `if` once, its condition a value another thread stored in shared memory
  (a thread runs one branch whatever the value: one store a byte).
"""
import tilelang.language as T

W = 64
NS = 4


def _slots(name, early):
    NC = T.dynamic("NC")

    @T.prim_func
    def kern(X: T.Tensor((NC, W), "float32"), out: T.Tensor((NC, W), "float32")):
        with T.Kernel(T.ceildiv(NC, NS), threads=W) as bx:
            tx = T.get_thread_binding()
            sl = T.alloc_var("int32", init=bx * NS)
            first = sl
            for j in T.serial(NS):
                sl = bx * NS + j
                slot = first if early else sl
                if bx * NS + j < NC:
                    out[slot, tx] = X[bx * NS + j, tx] * 2.0
                T.sync_threads()
    return kern.with_attr("global_symbol", name)


def slot_bound_early():
    return _slots("slot_bound_early", True)


def slot_bound_in_loop():
    return _slots("slot_bound_in_loop", False)


def _rows(name, poison):
    N = T.dynamic("N")

    @T.prim_func
    def kern(X: T.Tensor((N, W), "float32"), out: T.Tensor((N, W), "float32")):
        with T.Kernel(N, threads=W) as bx:
            tx = T.get_thread_binding()
            if poison:
                out[bx, tx] = T.float32(-1.0)
                T.sync_threads()
            out[bx, tx] = X[bx, tx] + 1.0
    return kern.with_attr("global_symbol", name)


def poison_then_store():
    return _rows("poison_then_store", True)


def store_once():
    return _rows("store_once", False)


def _tail(name, overlap):
    L, N = T.dynamic("L"), T.dynamic("N")

    @T.prim_func
    def kern(X: T.Tensor((N, L), "float32"), out: T.Tensor((N, L), "float32")):
        with T.Kernel(N, threads=W) as bx:
            tx = T.get_thread_binding()
            for c in T.serial(T.ceildiv(L, W)):
                if overlap:
                    if c * W + W <= L:
                        out[bx, c * W + tx] = X[bx, c * W + tx] * 2.0
                    if c * W + W >= L and c * W + tx < L:
                        out[bx, c * W + tx] = X[bx, c * W + tx] * 2.0
                else:
                    if c * W + W <= L:
                        out[bx, c * W + tx] = X[bx, c * W + tx] * 2.0
                    elif c * W + tx < L:
                        out[bx, c * W + tx] = X[bx, c * W + tx] * 2.0
    return kern.with_attr("global_symbol", name)


def _flag(name, each_step):
    N = T.dynamic("N")

    @T.prim_func
    def kern(X: T.Tensor((N, W), "float32"), out: T.Tensor((N, W), "float32")):
        with T.Kernel(N, threads=W) as bx:
            tx = T.get_thread_binding()
            flag = T.alloc_shared((1,), "float32")
            if each_step:
                for j in T.serial(NS):
                    if X[bx, j] > 0:
                        out[bx, tx] = X[bx, tx] * 2.0
                    else:
                        out[bx, tx] = X[bx, tx] + 1.0
            else:
                for j in T.serial(2):
                    if tx == j:
                        flag[0] = X[bx, j]
                    T.sync_threads()
                if flag[0] > 0:
                    out[bx, tx] = X[bx, tx] * 2.0
                else:
                    out[bx, tx] = X[bx, tx] + 1.0
    return kern.with_attr("global_symbol", name)


def branch_each_step():
    return _flag("branch_each_step", True)


def flag_branch():
    return _flag("flag_branch", False)


def guards_overlap():
    return _tail("guards_overlap", True)


def tail_branch():
    return _tail("tail_branch", False)


KERNELS = {f.__name__: f for f in (slot_bound_early, slot_bound_in_loop, poison_then_store, store_once,
                                   guards_overlap, tail_branch, branch_each_step, flag_branch)}
PRECONDITIONS = {"slot_bound_early": ["NC >= 1", "NC <= 2**24"], "slot_bound_in_loop": ["NC >= 1", "NC <= 2**24"],
                 "poison_then_store": ["N >= 1", "N <= 2**24"], "store_once": ["N >= 1", "N <= 2**24"],
                 "guards_overlap": ["N >= 1", "N <= 2**16", "L >= 1", "L <= 2**16"],
                 "tail_branch": ["N >= 1", "N <= 2**16", "L >= 1", "L <= 2**16"],
                 "branch_each_step": ["N >= 1", "N <= 2**24"], "flag_branch": ["N >= 1", "N <= 2**24"]}
WRITTEN_ONCE = {name: ["out"] for name in KERNELS}
PASS_CONFIGS = {name: {"tl.disable_safe_memory_legalize": True} for name in KERNELS}
EXPECT = {"slot_bound_early": "barriers.written_once", "slot_bound_in_loop": None,
          "poison_then_store": "barriers.written_once", "store_once": None,
          "guards_overlap": "barriers.written_once", "tail_branch": None,
          "branch_each_step": "barriers.written_once", "flag_branch": None}
TWIN = {"slot_bound_early": "slot_bound_in_loop", "poison_then_store": "store_once", "guards_overlap": "tail_branch",
        "branch_each_step": "flag_branch"}
