"""K1's bytes without K1's work: what the GPU gives a copy with K1's access pattern.

    python bench/copy_floor.py [H:T ...]        # default: 96:8192 8:65536 (one sequence each)

The question (bench/NOTES.md, sessions 31-34): the 16-token K1 moves ~1.63 KB a token and head
and streams at 83% of DRAM on the H100 (2.8 TB/s), but on the H200 it took 0.390 ms at H96
1x8192, ~3.3 TB/s of the card's ~4.3 for a plain copy. Either K1's pattern (256-byte rows of
q, k, g strided by H rows, writes of 16-row blocks into the workspace) caps the H200 there, and
only fewer bytes help, or K1 leaves bandwidth on the table (latency: too few bytes in flight a
program), and the lever is K1's pipelining.

`k1copy` is a TileLang kernel with K1's grid, threads, min_blocks and bytes but no arithmetic:
a program a (16-token chunk, head) copies its q, k, g rows (16 x 128 bf16 each, cp.async into
shared memory) into three [H, T, 128] fp16-sized outputs (bf16 here), the first 16 columns of q
and k into two [H, T, 16] outputs (Ab's and Mqk's bytes), and g's first row as fp32 into
[H, NC, 128] (gC's). `k1copy32` does the same with 32-token chunks, 128 threads, min_blocks 5
(the 32-token K1's shape). `k1copy32 p4` moves the same bytes four chunks a program, two
slots, chunk c + 2's copies issued once chunk c is stored (4 programs an SM): what a K1 that
keeps the next chunk's loads in flight could stream at (session 41). `torch_copy` is one
contiguous copy of the same bytes (half read, half written). `k1` is the released 16-token K1 (bench/k1_round.py's RELEASED) on the same inputs.
Each kernel's outputs are checked against the inputs first. Medians of triton's do_bench; GB/s
counts every byte read and written once. One JSON row a shape, a table last.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

TARGET = {"kind": "cuda", "arch": "sm_90a"}
K = 128


def build_copy(C, threads, min_blocks):
    """The copy kernel with K1's grid (T / C chunks x H heads) and bytes."""
    import tilelang.language as T

    Tn = T.dynamic("T")
    H = T.dynamic("H")
    NC = T.dynamic("NC")
    bf = "bfloat16"
    LPR = K // 8                 # lanes a row (16-byte copies)
    RPP = threads // LPR         # rows a pass
    NPASS = C // RPP

    @T.prim_func
    def k1copy(q: T.Tensor((1, Tn, H, K), bf), k: T.Tensor((1, Tn, H, K), bf), g: T.Tensor((1, Tn, H, K), bf),
               wk: T.Tensor((H, Tn, K), bf), qd: T.Tensor((H, Tn, K), bf), kr: T.Tensor((H, Tn, K), bf),
               ab: T.Tensor((H, Tn, C), bf), mqk: T.Tensor((H, Tn, C), bf), gc: T.Tensor((H, NC, K), "float32")):
        with T.Kernel(NC, H, threads=threads) as (bc, h):
            T.annotate_min_blocks_per_sm(min_blocks)
            q_s = T.alloc_shared((C, K), bf)
            k_s = T.alloc_shared((C, K), bf)
            g_s = T.alloc_shared((C, K), bf)
            t0 = bc * C
            tx = T.get_thread_binding()
            # as K1: every 16-byte copy of q, k, g in flight at once (cp.async), one wait
            for it in T.unroll(NPASS):
                r = it * RPP + tx // LPR
                d8 = tx % LPR
                t = T.max(T.min(t0 + r, Tn - 1), 0)
                T.ptx_cp_async(T.access_ptr(q_s[r, d8 * 8], "w", 8), T.access_ptr(q[0, t, h, d8 * 8], "r", 8), 8)
                T.ptx_cp_async(T.access_ptr(k_s[r, d8 * 8], "w", 8), T.access_ptr(k[0, t, h, d8 * 8], "r", 8), 8)
                T.ptx_cp_async(T.access_ptr(g_s[r, d8 * 8], "w", 8), T.access_ptr(g[0, t, h, d8 * 8], "r", 8), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            for r, e in T.Parallel(C, K):
                qd[h, t0 + r, e] = q_s[r, e]
                kr[h, t0 + r, e] = k_s[r, e]
                wk[h, t0 + r, e] = g_s[r, e]
            for r, e in T.Parallel(C, C):
                ab[h, t0 + r, e] = q_s[r, e]
                mqk[h, t0 + r, e] = k_s[r, e]
            for e in T.Parallel(K):
                gc[h, bc, e] = T.Cast("float32", g_s[0, e])

    return k1copy


def build_copy_pipelined(C, threads, min_blocks, cpb):
    """k1copy's bytes with `cpb` chunks a program, two slots: chunk c + 2's copies are issued once
    chunk c's stores have read its slot, so a program keeps a chunk's loads in flight while it
    stores (the pattern a pipelined K1 would have)."""
    import tilelang.language as T

    Tn = T.dynamic("T")
    H = T.dynamic("H")
    NC = T.dynamic("NC")
    bf = "bfloat16"
    LPR = K // 8
    RPP = threads // LPR
    NPASS = C // RPP

    @T.macro
    def issue(q, k, g, q_s, k_s, g_s, bp, h, tx, c, slot):
        for it in T.unroll(NPASS):
            r = it * RPP + tx // LPR
            d8 = tx % LPR
            t = T.max(T.min((bp * cpb + c) * C + r, Tn - 1), 0)
            T.ptx_cp_async(T.access_ptr(q_s[slot, r, d8 * 8], "w", 8), T.access_ptr(q[0, t, h, d8 * 8], "r", 8), 8)
            T.ptx_cp_async(T.access_ptr(k_s[slot, r, d8 * 8], "w", 8), T.access_ptr(k[0, t, h, d8 * 8], "r", 8), 8)
            T.ptx_cp_async(T.access_ptr(g_s[slot, r, d8 * 8], "w", 8), T.access_ptr(g[0, t, h, d8 * 8], "r", 8), 8)

    @T.prim_func
    def k1copyp(q: T.Tensor((1, Tn, H, K), bf), k: T.Tensor((1, Tn, H, K), bf), g: T.Tensor((1, Tn, H, K), bf),
                wk: T.Tensor((H, Tn, K), bf), qd: T.Tensor((H, Tn, K), bf), kr: T.Tensor((H, Tn, K), bf),
                ab: T.Tensor((H, Tn, C), bf), mqk: T.Tensor((H, Tn, C), bf), gc: T.Tensor((H, NC, K), "float32")):
        with T.Kernel(T.ceildiv(NC, cpb), H, threads=threads) as (bp, h):
            T.annotate_min_blocks_per_sm(min_blocks)
            q_s = T.alloc_shared((2, C, K), bf)
            k_s = T.alloc_shared((2, C, K), bf)
            g_s = T.alloc_shared((2, C, K), bf)
            tx = T.get_thread_binding()
            issue(q, k, g, q_s, k_s, g_s, bp, h, tx, 0, 0)
            T.ptx_commit_group()
            issue(q, k, g, q_s, k_s, g_s, bp, h, tx, 1, 1)
            T.ptx_commit_group()
            for c in T.serial(cpb):
                slot = c % 2
                t0 = (bp * cpb + c) * C
                T.ptx_wait_group(1)
                T.sync_threads()
                if bp * cpb + c < NC:
                    for r, e in T.Parallel(C, K):
                        qd[h, t0 + r, e] = q_s[slot, r, e]
                        kr[h, t0 + r, e] = k_s[slot, r, e]
                        wk[h, t0 + r, e] = g_s[slot, r, e]
                    for r, e in T.Parallel(C, C):
                        ab[h, t0 + r, e] = q_s[slot, r, e]
                        mqk[h, t0 + r, e] = k_s[slot, r, e]
                    for e in T.Parallel(K):
                        gc[h, bp * cpb + c, e] = T.Cast("float32", g_s[slot, 0, e])
                T.sync_threads()
                if c + 2 < cpb:
                    issue(q, k, g, q_s, k_s, g_s, bp, h, tx, c + 2, slot)
                T.ptx_commit_group()

    return k1copyp


_K = {}


def compiled(C, threads, min_blocks, cpb=1):
    key = (C, threads, min_blocks, cpb)
    if key not in _K:
        import tilelang
        fn = build_copy(C, threads, min_blocks) if cpb == 1 else build_copy_pipelined(C, threads, min_blocks, cpb)
        _K[key] = tilelang.compile(fn, target=TARGET, pass_configs={"tl.disable_tma_lower": True})
    return _K[key]


def bytes_moved(H, T, C):
    """K1's bytes (this copy's): q, k, g read; three K-wide rows, two C-wide rows, gC written."""
    read = 3 * T * H * K * 2
    write = 3 * T * H * K * 2 + 2 * T * H * C * 2 + (T // C) * H * K * 4
    return read + write


def run_copy(H, T, C, threads, min_blocks, d, cpb=1):
    kern = compiled(C, threads, min_blocks, cpb)
    NC = T // C
    dev = "cuda"
    outs = dict(wk=torch.full((H, T, K), float("nan"), device=dev, dtype=torch.bfloat16),
                qd=torch.full((H, T, K), float("nan"), device=dev, dtype=torch.bfloat16),
                kr=torch.full((H, T, K), float("nan"), device=dev, dtype=torch.bfloat16),
                ab=torch.full((H, T, C), float("nan"), device=dev, dtype=torch.bfloat16),
                mqk=torch.full((H, T, C), float("nan"), device=dev, dtype=torch.bfloat16),
                gc=torch.full((H, NC, K), float("nan"), device=dev))
    args = [d["q"], d["k"], d["g"], outs["wk"], outs["qd"], outs["kr"], outs["ab"], outs["mqk"], outs["gc"]]
    kern(*args)
    torch.cuda.synchronize()
    q, k, g = (d[n][0].transpose(0, 1) for n in ("q", "k", "g"))    # [H, T, K]
    ok = (torch.equal(outs["qd"], q) and torch.equal(outs["kr"], k) and torch.equal(outs["wk"], g)
          and torch.equal(outs["ab"], q[..., :C]) and torch.equal(outs["mqk"], k[..., :C])
          and torch.equal(outs["gc"], g[:, ::C, :].float()))
    return (lambda: kern(*args)), ok


def main():
    from triton.testing import do_bench

    import k1_round
    shapes = [tuple(int(x) for x in s.split(":")) for s in sys.argv[1:]] or [(96, 8192), (8, 65536)]
    rows = []
    for H, T in shapes:
        d = k1_round.inputs(1, T, H, [T], seed=H * T)
        row = dict(shape=f"H{H} 1x{T}", device=torch.cuda.get_device_name())
        for label, (C, th, mb, cpb) in (("k1copy", (16, 64, 12, 1)), ("k1copy32", (32, 128, 5, 1)),
                                        ("k1copy32 p4", (32, 128, 4, 4))):
            go, ok = run_copy(H, T, C, th, mb, d, cpb)
            assert ok, (label, H, T)
            ms = do_bench(go, warmup=10, rep=100, return_mode="median")
            row[f"{label} ms"] = round(ms, 4)
            row[f"{label} TB/s"] = round(bytes_moved(H, T, C) / ms / 1e9, 2)
        n = bytes_moved(H, T, 16) // 2
        src = torch.empty(n, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ms = do_bench(lambda: dst.copy_(src), warmup=10, rep=100, return_mode="median")
        row["torch_copy ms"], row["torch_copy TB/s"] = round(ms, 4), round(2 * n / ms / 1e9, 2)
        for label, spec in (("k1", k1_round.RELEASED), ("k1 32", k1_round.RELEASED_CH32)):
            go, _ = k1_round.run_k1(spec, d)
            row[f"{label} ms"] = round(do_bench(go, warmup=10, rep=100, return_mode="median"), 4)
        print(json.dumps(row), flush=True)
        rows.append(row)
    cols = [c for c in rows[0] if c.endswith("ms") or c.endswith("TB/s")]
    print("| shape | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for r in rows:
        print(f"| {r['shape']} | " + " | ".join(str(r.get(c, "")) for c in cols) + " |")


if __name__ == "__main__":
    main()
