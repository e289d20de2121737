"""A persistent K2's ring (issue 9: one program walks several sequences of a head, the ring running
across them): the ring's slot and parity come from one running chunk counter per role, a register
incremented in a chunk loop whose trip count each sequence reads from cu_seqlens. Since verify
2.12.0 the phase and parity questions prove (each role's increment is found as the one in lockstep
with its waits and arrivals). The race questions, whose orders run through those counts in two
threads, took ~10x the default resource limit under 2.12.0 (~40 s with a module RLIMIT); since
2.13.0 they prove at the default limit (~18 s): the chunk loops' trip counts are one named
function of the sequence index for both roles (verify.extract._name_extents), and a query that
exhausts its limit is asked again presolved."""
import tilelang.language as T

SOURCE = {"ring_multi": "kda_tile: a persistent K2's ring across sequences (session 24, not built)",
          "ring_multi_early_free": "kda_tile: the same ring, its slot freed before it is read"}


def ring_multi_seq(early_free=False):
    """Consumers and a loader walk SPP sequences of varying chunk counts (from cu), the ring's slot
    and parity from one running chunk counter g."""
    N1 = T.dynamic("N1")
    NC = T.dynamic("NC")
    S, SPP = 2, 4

    @T.prim_func
    def ring_multi(X: T.Tensor((NC * 64, 64), "float16"), cu: T.Tensor((N1,), "int32"),
                   Y: T.Tensor((NC * 64, 64), "float16")):
        with T.Kernel(T.ceildiv(N1 - 1, SPP), threads=256) as bx:
            Xr = T.alloc_shared((S, 64, 64), "float16")
            full = T.alloc_barrier(arrive_count=[32] * S)
            empty = T.alloc_barrier(arrive_count=[128] * S)
            tx = T.get_thread_binding()
            g = T.alloc_var("int32", init=0)
            if tx < 128:
                for q in T.serial(SPP):
                    n = bx * SPP + q
                    if n < N1 - 1:
                        c0 = T.max(T.min(cu[n], NC), 0)
                        nch = T.max(T.min(cu[n + 1], NC) - c0, 0)
                        for c in T.serial(nch):
                            T.barrier_wait(full[g % S], (g // S) % 2)
                            if early_free:
                                T.barrier_arrive(empty[g % S])
                            for i, j in T.Parallel(64, 64):
                                Y[(c0 + c) * 64 + i, j] = Xr[g % S, i, j]
                            if not early_free:
                                T.barrier_arrive(empty[g % S])
                            g = g + 1
            elif tx < 160:
                for q in T.serial(SPP):
                    n = bx * SPP + q
                    if n < N1 - 1:
                        c0 = T.max(T.min(cu[n], NC), 0)
                        nch = T.max(T.min(cu[n + 1], NC) - c0, 0)
                        for c in T.serial(nch):
                            T.barrier_wait(empty[g % S], (g // S + 1) % 2)
                            T.tma_copy(X[(c0 + c) * 64:(c0 + c) * 64 + 64, :], Xr[g % S, :, :], barrier=full[g % S])
                            T.barrier_arrive(full[g % S])
                            g = g + 1
    return ring_multi

KERNELS = {"ring_multi": ring_multi_seq, "ring_multi_early_free": lambda: ring_multi_seq(early_free=True)}
PRECONDITIONS = {name: ["N1 >= 2", "N1 <= 2**20", "NC >= 1", "NC <= 2**20"] for name in KERNELS}
BANK_BUDGET = {name: 8 for name in KERNELS}
MONOTONE = {"cu": ("N1", "NC")}
EXPECT = {"ring_multi": None,
          "ring_multi_early_free": ("barriers.race", "Xr", "the consumers free a slot before reading it")}
