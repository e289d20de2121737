"""Segments of packed sequences (the sequence split's passes): block (n, gs) writes chunks
[gs L, gs L + L) of sequence n, cut at the sequence's end, with L a scalar the host derives, and
its own row of `first`. The segments of one sequence are disjoint; one chunk more a segment makes
neighbours overlap."""
import tilelang.language as T

W = 128
C = 16


def _segments(name, extra):
    N1, G, Tn, HV = T.dynamic("N1"), T.dynamic("G"), T.dynamic("T"), T.dynamic("HV")

    @T.prim_func
    def kern(X: T.Tensor((Tn, HV, W), "float32"), cu_seqlens: T.Tensor((N1,), "int64"),
             out: T.Tensor((Tn, HV, W), "float32"), first: T.Tensor((N1 - 1, G, HV, W), "float32"), L: T.int32):
        with T.Kernel(N1 - 1, HV, G, threads=W) as (n, hv, gs):
            tx = T.get_thread_binding()
            bos = T.Cast("int32", T.max(T.min(cu_seqlens[n], T.Cast("int64", Tn)), T.int64(0)))
            eos = T.Cast("int32", T.max(T.min(cu_seqlens[n + 1], T.Cast("int64", Tn)), T.int64(0)))
            nch = T.max(T.ceildiv(eos - bos, C), 0)
            c0 = T.min(gs * L, nch)
            first[n, gs, hv, tx] = T.Cast("float32", c0)
            for c in T.serial(T.min(L + extra, nch - c0)):
                for r in T.serial(C):
                    t = bos + (c0 + c) * C + r
                    if t < eos:
                        out[t, hv, tx] = X[t, hv, tx] * 2.0
    return kern.with_attr("global_symbol", name)


def segments_disjoint():
    return _segments("segments_disjoint", 0)


def segments_overlap():
    return _segments("segments_overlap", 1)


KERNELS = {f.__name__: f for f in (segments_disjoint, segments_overlap)}
PRECONDITIONS = {name: ["N1 >= 2", "N1 <= 2**20 + 1", "T >= 1", "T <= 2**24", "G >= 1", "G <= 1024",
                        "L >= 1", "L <= 2**20", "HV >= 1", "HV <= 256"] for name in KERNELS}
EXPECT = {"segments_disjoint": None, "segments_overlap": "barriers.global_race"}
TWIN = {"segments_overlap": "segments_disjoint"}
