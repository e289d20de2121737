"""K2's launch order for a ragged batch: the sequences by length, longest first.

With len_i = cu_seqlens[i + 1] - cu_seqlens[i] for the N sequences,

    rank_i = #{j : len_j > len_i, or len_j == len_i and j < i}        (a permutation of [0, N))
    order[r] = the i with rank_i == r

so K2's longest-first build (K2Config.longest_first), whose program at grid y = r runs sequence
order[r], launches the longest sequences' programs first and a batch's tail is its short ones.

One program. Up to `max_ranked` sequences it ranks in shared memory: each thread counts the ranks
of its sequences, then finds the sequence of each of its ranks, so every write goes to the
thread's own entry. Each i has one rank, so no two ranks find the same i: the entries are
distinct whatever the lengths are (the DISTINCT that K2's proof assumes). Above max_ranked the
order is the identity (kda_prefill's rule runs longest first only up to it; forced on, above it).
"""
import tilelang.language as T

from .configs import OrderConfig


def build_order(cfg: OrderConfig):
    NT, R = cfg.threads, cfg.max_ranked
    assert R % NT == 0
    PT = R // NT
    i32, i64 = "int32", "int64"
    N1 = T.dynamic("N1")

    @T.prim_func
    def k2_order(cu_seqlens: T.Tensor((N1,), i64), order: T.Tensor((N1 - 1,), i32)):
        with T.Kernel(1, threads=NT):
            tx = T.get_thread_binding()
            ln = T.alloc_shared((R,), i64)
            rk = T.alloc_shared((R,), i32)
            c = T.alloc_local((1,), i32)
            if N1 - 1 <= R:
                for p in T.unroll(PT):
                    i = p * NT + tx     # the thread's p-th sequence
                    if i < N1 - 1:
                        ln[i] = cu_seqlens[i + 1] - cu_seqlens[i]
                T.sync_threads()
                for p in T.unroll(PT):
                    i = p * NT + tx
                    if i < N1 - 1:
                        c[0] = 0
                        for j in T.serial(N1 - 1):
                            c[0] = c[0] + T.if_then_else(ln[j] > ln[i] or (ln[j] == ln[i] and j < i), 1, 0)
                        rk[i] = c[0]
                T.sync_threads()
                for p in T.unroll(PT):
                    r = p * NT + tx     # the thread's p-th rank
                    if r < N1 - 1:
                        c[0] = -1
                        for j in T.serial(N1 - 1):
                            if rk[j] == r:
                                c[0] = j
                        order[r] = c[0]
            else:
                for m in T.serial(T.ceildiv(N1 - 1, NT)):
                    if m * NT + tx < N1 - 1:
                        order[m * NT + tx] = m * NT + tx

    return k2_order
