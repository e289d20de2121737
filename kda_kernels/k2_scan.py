"""The sequence split's scan: segment start states from pass A's maps, in fp32.

Pass A (kda_kernels/k2_recurrence.py, mode "map") wrote, for each segment g of each sequence
n and value head hv, the affine map of its chunks as maps[n, g, hv] = [B; M] (V + K rows of K):
S_end = S_start M + B for the state St = S^T [V, K]. With S_0 = h0 (or zero):

    starts[n, g] = S_g          S_{g+1} = S_g M_g + B_g          ht[n] = S_G

One program carries `block_rows` rows of S through the G segments; thread e owns column e and
reads column e of M_g (coalesced across the threads, each M_g element read once a program);
S_g's rows are broadcast reads of shared memory, and every product is an fp32 fma, so the
composition adds no rounding beyond fp32's (issue 9: the error at T = 1M). With `prefetch`,
M_g's column and B_g's rows were loaded into registers during segment g - 1.

With `parts` P > 1 the program has P x K threads: thread (p, e) sums the K / P terms
d in [p K / P, (p + 1) K / P) of every row into red[p, j, e], and after a barrier owns BR / P rows:

    S_{g+1}[j, e] = B_g[j, e] + red[0, j, e] + ... + red[P - 1, j, e]

so a row's chain is K / P dependent FMAs, not K (the scan is latency-bound: ~3.7 us a segment
with one program of four warps an SM, ~2.6 us with four parts; bench/NOTES.md, sessions 20-21
and 40). `m_async` (not released: slower) copies M_{g+1} and B_{g+1} by cp.async behind segment g.
"""
import tilelang.language as T

from .configs import ScanConfig


def build_scan(cfg: ScanConfig):
    K, V, BR = cfg.head_dim, cfg.value_dim, cfg.block_rows
    assert cfg.threads == K * cfg.parts and V % BR == 0
    assert cfg.parts == 1 or not cfg.prefetch, f"{cfg.name}: parts and prefetch are separate forms"
    assert cfg.parts > 1 or not cfg.m_async, f"{cfg.name}: m_async is the parts form's"
    f32 = "float32"

    B = T.dynamic("B")
    HV = T.dynamic("HV")
    G = T.dynamic("G")
    N1 = T.dynamic("N1")
    NS = N1 - 1 if cfg.varlen else B
    h0_dtype = cfg.initial_state or f32
    ht_dtype = cfg.final_state_dtype or f32
    body = (_rows_body if cfg.parts == 1 else _parts_body)(cfg, NS, HV, G, ht_dtype)

    maps_t = T.Tensor((NS, G, HV, V + K, K), f32)
    h0_t = T.Tensor((NS, HV, V, K), h0_dtype)
    starts_t = T.Tensor((NS, G, HV, V, K), f32)
    ht_t = T.Tensor((NS, HV, V, K), ht_dtype)
    cu_t = T.Tensor((N1,), "int64")

    @T.prim_func
    def k2_scan(maps: maps_t, cu_seqlens: cu_t, h0: h0_t, starts: starts_t, ht: ht_t):
        body(maps, h0, starts, ht)

    from . import _tir
    absent = [name for name, present in (("cu_seqlens", cfg.varlen), ("h0", cfg.initial_state is not None),
                                         ("ht", cfg.final_state)) if not present]
    return _tir.drop_params(k2_scan, absent)


def _rows_body(cfg, NS, HV, G, ht_dtype):
    """One column a thread, all K terms of its rows' sums."""
    K, V, BR, NT = cfg.head_dim, cfg.value_dim, cfg.block_rows, cfg.threads
    f32 = "float32"

    @T.macro
    def _body(maps, h0, starts, ht):
        with T.Kernel(NS, HV, V // BR, threads=NT) as (n, hv, rb):
            r0 = rb * BR
            S_s = T.alloc_shared((BR, K), f32)
            acc = T.alloc_local((BR,), f32)
            e = T.get_thread_binding()
            for j in T.unroll(BR):
                if cfg.initial_state is not None:
                    S_s[j, e] = T.Cast(f32, h0[n, hv, r0 + j, e])
                else:
                    S_s[j, e] = T.float32(0)
            if cfg.prefetch:
                mc = T.alloc_local((K,), f32)
                bc = T.alloc_local((BR,), f32)
                for d in T.unroll(K):
                    mc[d] = maps[n, 0, hv, V + d, e]
                for j in T.unroll(BR):
                    bc[j] = maps[n, 0, hv, r0 + j, e]
            for g in T.serial(G):
                if cfg.prefetch:
                    # segment g + 1's loads (the last segment's again at the end) go out before
                    # segment g's products use this segment's
                    gn = T.min(g + 1, G - 1)
                for j in T.unroll(BR):
                    starts[n, g, hv, r0 + j, e] = S_s[j, e]
                    if cfg.prefetch:
                        acc[j] = bc[j]
                        bc[j] = maps[n, gn, hv, r0 + j, e]
                    else:
                        acc[j] = maps[n, g, hv, r0 + j, e]
                for d in T.unroll(K):
                    if cfg.prefetch:
                        m = mc[d]
                        mc[d] = maps[n, gn, hv, V + d, e]
                    else:
                        m = maps[n, g, hv, V + d, e]
                    for j in T.unroll(BR):
                        acc[j] = acc[j] + S_s[j, d] * m
                T.sync_threads()
                for j in T.unroll(BR):
                    S_s[j, e] = acc[j]
            if cfg.final_state:
                for j in T.unroll(BR):
                    ht[n, hv, r0 + j, e] = T.Cast(ht_dtype, S_s[j, e])
    return _body


def _parts_body(cfg, NS, HV, G, ht_dtype):
    """`parts` warpgroups, each K / parts terms of every row's sum; thread (p, e) then owns
    rows p RP .. p RP + RP - 1 of column e."""
    K, V, BR, P = cfg.head_dim, cfg.value_dim, cfg.block_rows, cfg.parts
    KP, RP = K // P, BR // P
    assert K % P == 0 and BR % P == 0
    f32 = "float32"

    @T.macro
    def m_copies(maps, M_s, B_s, n, g, hv, r0, p, e, slot):
        """Thread (p, e)'s KP terms of M_g and its RP rows of B_g into slot `slot`, one commit group."""
        for dd in T.unroll(KP):
            T.ptx_cp_async(T.access_ptr(M_s[slot, p * KP + dd, e], "w", 1),
                           T.access_ptr(maps[n, g, hv, V + p * KP + dd, e], "r", 1), 1)
        for i in T.unroll(RP):
            T.ptx_cp_async(T.access_ptr(B_s[slot, p * RP + i, e], "w", 1),
                           T.access_ptr(maps[n, g, hv, r0 + p * RP + i, e], "r", 1), 1)
        T.ptx_commit_group()

    @T.macro
    def _body(maps, h0, starts, ht):
        with T.Kernel(NS, HV, V // BR, threads=cfg.threads) as (n, hv, rb):
            r0 = rb * BR
            S_s = T.alloc_shared((BR, K), f32)
            red_s = T.alloc_shared((P, BR, K), f32)
            acc = T.alloc_local((BR,), f32)
            tx = T.get_thread_binding()
            p = tx // K
            e = tx % K
            if cfg.m_async:
                # slot g % 2 holds segment g's terms; each thread reads only what it copied
                M_s = T.alloc_shared((2, K, K), f32)
                B_s = T.alloc_shared((2, BR, K), f32)
                m_copies(maps, M_s, B_s, n, 0, hv, r0, p, e, 0)
            for i in T.unroll(RP):
                if cfg.initial_state is not None:
                    S_s[p * RP + i, e] = T.Cast(f32, h0[n, hv, r0 + p * RP + i, e])
                else:
                    S_s[p * RP + i, e] = T.float32(0)
            T.sync_threads()
            for g in T.serial(G):
                if cfg.m_async:
                    # segment g + 1's M and B (the last segment's again at the end) in flight behind g's
                    m_copies(maps, M_s, B_s, n, T.min(g + 1, G - 1), hv, r0, p, e, (g + 1) % 2)
                    T.ptx_wait_group(1)
                for j in T.unroll(BR):
                    acc[j] = T.float32(0)
                for dd in T.unroll(KP):
                    if cfg.m_async:
                        m = M_s[g % 2, p * KP + dd, e]
                    else:
                        m = maps[n, g, hv, V + p * KP + dd, e]
                    for j in T.unroll(BR):
                        acc[j] = acc[j] + S_s[j, p * KP + dd] * m
                for j in T.unroll(BR):
                    red_s[p, j, e] = acc[j]
                for i in T.unroll(RP):
                    starts[n, g, hv, r0 + p * RP + i, e] = S_s[p * RP + i, e]
                T.sync_threads()
                for i in T.unroll(RP):
                    if cfg.m_async:
                        acc[i] = B_s[g % 2, p * RP + i, e]
                    else:
                        acc[i] = maps[n, g, hv, r0 + p * RP + i, e]
                    for q in T.unroll(P):
                        acc[i] = acc[i] + red_s[q, p * RP + i, e]
                    S_s[p * RP + i, e] = acc[i]
                T.sync_threads()
            if cfg.m_async:
                # the last segment's repeated copies land before the program ends
                T.ptx_wait_group(0)
            if cfg.final_state:
                for i in T.unroll(RP):
                    ht[n, hv, r0 + p * RP + i, e] = T.Cast(ht_dtype, S_s[p * RP + i, e])
    return _body
