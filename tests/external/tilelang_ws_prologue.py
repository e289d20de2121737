"""A true finding in TileLang 0.1.15's automatic warp specialization, met while writing the split
scan's prefetching form (kda_kernels/k2_scan.py, session 20): a T.Pipelined loop of global ->
shared copies gets a TMA producer warpgroup, so the program launches 256 threads, but a store to
shared memory before the loop keeps the thread index unmapped, and threads 128..255 store past
the end of the buffer. The scan's released forms do not pipeline; its prefetching form loads the
next segment into registers instead."""
import tilelang.language as T

SOURCE = {"ws_prologue_unmapped": "kda_tile: kda_kernels/k2_scan.py, a pipelined prefetch (not released)"}


def ws_prologue_unmapped():
    N, G = T.dynamic("N"), T.dynamic("G")
    K = 128

    @T.prim_func
    def ws_prologue_unmapped(X: T.Tensor((N, K), "float32"), M: T.Tensor((N, G, K, K), "float32"),
                             Y: T.Tensor((N, G, K), "float32")):
        with T.Kernel(N, threads=K) as n:
            S_s = T.alloc_shared((K,), "float32")
            M_s = T.alloc_shared((K, K), "float32")
            acc = T.alloc_local((1,), "float32")
            e = T.get_thread_binding()
            S_s[e] = X[n, e]
            for g in T.Pipelined(G, num_stages=2):
                T.copy(M[n, g, :, :], M_s)
                acc[0] = T.float32(0)
                for d in T.serial(K):
                    acc[0] = acc[0] + S_s[d] * M_s[d, e]
                Y[n, g, e] = acc[0]
    return ws_prologue_unmapped


KERNELS = {"ws_prologue_unmapped": ws_prologue_unmapped}
PRECONDITIONS = {"ws_prologue_unmapped": ["N >= 1", "N <= 2**16", "G >= 1", "G <= 1024"]}
BANK_BUDGET = {"ws_prologue_unmapped": 32}
EXPECT = {"ws_prologue_unmapped": ("bounds.shared", "S_s", "the prologue's store S_s[e] runs on all 256 threads of "
                                   "the warp-specialized program, e up to 255 against 128 entries")}
