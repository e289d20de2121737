"""The sequence split (issue 9) on the GPU, through TileLang's own JIT: the released K1, pass A
(K2Config mode "map"), the scan (kda_kernels/k2_scan.py) and pass C (mode "seg").

    python bench/split_round.py [G ...]          # segments a sequence to time (default 4 8 16 32)
    SPLIT_CHUNK=32 python bench/split_round.py   # the same at 32-token chunks (the 32-token K1)

Correctness first: fresh random inputs (varlen with empty, one-token and tail sequences; fp32 and
bf16 initial state), o and the final state NaN-poisoned, checked against the float64 recurrence,
at several segment lengths L including segments past a sequence's end. Then per shape and G
(L = chunks / G) the four stages' times (triton do_bench medians) against the unsplit K2 on the
same workspace, and the same call through kda_prefill (split on and off, KDA_TILE_SPLIT) when
the build is there. One JSON row per (shape, G), a table last.
"""
import dataclasses
import itertools
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import k1_round  # noqa: E402  (inputs, the released K1 through the JIT)
from kda_kernels.configs import SPLIT_CONSUMERS, SPLIT_LEAN_ID, K2Config, ScanConfig, split_pass  # noqa: E402
from kda_kernels.reference import kda_recurrent, rel_err  # noqa: E402

compiled = k1_round.compiled
# Tokens a chunk (SPLIT_CHUNK): 16, the released split, or 32 (K1 at 32 tokens feeding passes A
# and C at 32, as configured in the registry's unsplit 32-token builds). Both in the released
# u0k2 form: K1 writes Ab, the passes form U0 = Ab v.
CH = int(os.environ.get("SPLIT_CHUNK", "16"))
# the registry's varlen K1 at that chunk; SPLIT_VSS=1: K1 writes Ab's bf16 halves (ab_halves) and
# every K2 form reads v^T from its slot (K2Config.v_ss)
VSS = os.environ.get("SPLIT_VSS") == "1"
K1_SPEC = (k1_round.RELEASED_CH32 if CH == 32 else k1_round.RELEASED) + (",abh" if VSS else "")


# Consumer warpgroups a program of passes A and C (SPLIT_NW, comma-separated: each is checked and
# timed in this process; the released configs.SPLIT_CONSUMERS by default)
NWS = [int(x) for x in os.environ.get("SPLIT_NW", str(SPLIT_CONSUMERS)).split(",")]


# Pass A's identity rows lean or not (SPLIT_LEAN, comma-separated 0/1; the released
# configs.SPLIT_LEAN_ID by default)
LEANS = [bool(int(x)) for x in os.environ.get("SPLIT_LEAN", str(int(SPLIT_LEAN_ID))).split(",")]


def k2(nw=1, lean=None, **kw):
    if kw.get("mode") in ("map", "seg"):
        cfg = split_pass(kw["mode"], nw, CH, lean)
    else:
        cfg = K2Config(varlen=True, u0_in_k2=True, chunk=CH, **kw)
    return dataclasses.replace(cfg, v_ss=VSS)
# ScanConfig.block_rows to measure (SPLIT_SCAN_BR, comma-separated: each is checked and timed; the
# released value by default)
SCAN_BRS = [int(x) for x in os.environ.get("SPLIT_SCAN_BR", str(ScanConfig().block_rows)).split(",")]
# ScanConfig.prefetch to measure (SPLIT_SCAN_PF, comma-separated 0/1: each is checked and timed)
SCAN_PFS = [bool(int(x)) for x in os.environ.get("SPLIT_SCAN_PF", "0").split(",")]
# ScanConfig.parts to measure (SPLIT_SCAN_PARTS, comma-separated, "4ma" for parts 4 with m_async;
# the released value by default; parts > 1 with prefetch is not a form and is skipped)
SCAN_PARTS = [x for x in os.environ.get("SPLIT_SCAN_PARTS", str(ScanConfig().parts)).split(",")]


def scan_form(spec):
    """ScanConfig fields of a SPLIT_SCAN_PARTS entry."""
    return dict(parts=int(spec.rstrip("ma")), m_async=spec.endswith("ma"))
# every (consumers, scan prefetch, scan rows, lean pass A, scan parts) measured
VARIANTS = [v for v in itertools.product(NWS, SCAN_PFS, SCAN_BRS, LEANS, SCAN_PARTS) if not (v[1] and v[4] != "1")]


def split_calls(d, ws, L, h0=None, final=True, nw=1, pf=False, br=SCAN_BRS[0], lean=None, parts="1"):
    """(pass A, scan, pass C) as closures for segments of L chunks, and the outputs o, ht
    (NaN-poisoned)."""
    N = d["cu"].numel() - 1
    T = d["q"].shape[1]
    G = ((T + CH - 1) // CH + L - 1) // L
    HV = d["v"].shape[2]
    cu = d["cu"]
    maps = torch.full((N, G, HV, 256, 128), float("nan"), device="cuda")
    starts = torch.full((N, G, HV, 128, 128), float("nan"), device="cuda")
    o = torch.full_like(d["v"], float("nan"))
    hdt = None if h0 is None else {torch.float32: "float32", torch.bfloat16: "bfloat16"}[h0.dtype]
    ht = torch.full((N, HV, 128, 128), float("nan"), device="cuda", dtype=h0.dtype if h0 is not None else torch.float32)
    ka = compiled(k2(nw, lean, mode="map"))
    ks = compiled(ScanConfig(varlen=True, initial_state=hdt, final_state=final, block_rows=br, prefetch=pf,
                             **scan_form(parts)))
    kc = compiled(k2(nw, mode="seg"))
    wa = [ws["Wk"], ws["kr"], ws["Ab"], d["v"], ws["gC"]]
    wc = [ws["Wk"], ws["qd"], ws["kr"], ws["Ab"], d["v"], ws["Mqk"], ws["gC"]]
    go_a = lambda: ka(*wa, cu, maps, L)  # noqa: E731
    go_s = lambda: ks(maps, cu, *([h0] if h0 is not None else []), starts, *([ht] if final else []))  # noqa: E731
    go_c = lambda: kc(*wc, cu, starts, o, L)  # noqa: E731
    go_a.maps = maps
    return go_a, go_s, go_c, o, ht


CASES = [("varlen [1000,1000] H=3", 1, 2000, 3, [1000, 1000], (1, 3, 8)),
         ("varlen [1] H=1", 1, 1, 1, [1], (1,)),
         ("varlen [1,0,16,1,33] H=2", 1, 51, 2, [1, 0, 16, 1, 33], (1, 2)),
         ("varlen [1300,547,0,963,271] H=2", 1, 3081, 2, [1300, 547, 0, 963, 271], (5, 32)),
         ("varlen 200x[0..40] H=2", 1, None, 2, "ragged", (1,)),
         ("varlen [65536] H=1", 1, 65536, 1, [65536], (64, 256))]


def correctness():
    rows = []
    for i, (label, B, T, H, lens, Gs) in enumerate(CASES):
        if lens == "ragged":
            lens = torch.randint(0, 41, (200,), generator=torch.Generator().manual_seed(i)).tolist()
            T = sum(lens)
        d = k1_round.inputs(B, T, H, lens, seed=500 + i)
        N = len(lens) if lens else B
        for sdt in (torch.float32, torch.bfloat16):
            h0 = torch.randn(N, H, 128, 128, device="cuda").to(sdt)
            ro, rht = kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                                    lower_bound=-5.0, cu_seqlens=d["cu"], initial_state=h0, output_final_state=True)
            for L, (nw, pf, br, lean, parts) in itertools.product(Gs, VARIANTS):
                go1, ws = k1_round.run_k1(K1_SPEC, d)
                go1()
                go_a, go_s, go_c, o, ht = split_calls(d, ws, L, h0, nw=nw, pf=pf, br=br, lean=lean, parts=parts)
                go_a()
                go_s()
                go_c()
                torch.cuda.synchronize()
                eo, eh = rel_err(o.double(), ro), rel_err(ht.double(), rht)
                rows.append(dict(case=label, L=L, nw=nw, scan_pf=pf, scan_br=br, lean=lean, scan_p=parts, state=str(sdt)[6:],
                                 err_o=eo, err_ht=eh))
                print(json.dumps(rows[-1]), flush=True)
    return rows


SHAPES = [("H8 1x65536", 65536, 8, [65536]), ("H32 1x32768", 32768, 32, [32768]),
          ("H16 1x65536", 65536, 16, [65536]), ("H96 1x8192", 8192, 96, [8192]),
          ("H8 1x262144", 262144, 8, [262144])]
if os.environ.get("SPLIT_SHAPES"):
    SHAPES = [s for s in SHAPES if any(t in s[0] for t in os.environ["SPLIT_SHAPES"].split(","))]


def main():
    from triton.testing import do_bench
    Gs = [int(x) for x in sys.argv[1:]] or [4, 8, 16, 32]
    k1_round.prewarm([k1_round.k1_config(K1_SPEC, True)] + [k2(nw, lean, mode=m) for m in ("map", "seg") for nw in NWS for lean in LEANS]
                     + [ScanConfig(varlen=True, initial_state=h, final_state=True, block_rows=br, prefetch=pf, **scan_form(p))
                        for h in ("float32", "bfloat16") for _, pf, br, _, p in VARIANTS]
                     + [k2(initial_state="float32", final_state=True)])
    rows = correctness() if os.environ.get("SPLIT_CHECK", "1") == "1" else []
    worst = max((max(r["err_o"], r["err_ht"]) for r in rows), default=float("nan"))
    print(f"correctness: {len(rows)} runs, worst {worst:.2e}", flush=True)
    table = []
    for label, T, H, lens in SHAPES:
        d = k1_round.inputs(1, T, H, lens, seed=7)
        go1, ws = k1_round.run_k1(K1_SPEC, d)
        go1()
        h0 = torch.randn(1, H, 128, 128, device="cuda")
        kfull = compiled(k2(initial_state="float32", final_state=True))
        o_f = torch.empty_like(d["v"])
        ht_f = torch.empty_like(h0)
        wf = [ws["Wk"], ws["qd"], ws["kr"], ws["Ab"], d["v"], ws["Mqk"], ws["gC"]]
        go_full = lambda: kfull(*wf, d["cu"], h0, o_f, ht_f)  # noqa: E731
        row = dict(shape=label, K1=do_bench(go1, warmup=5, rep=50, return_mode="median"),
                   K2=do_bench(go_full, warmup=5, rep=50, return_mode="median"))
        for G, (nw, pf, br, lean, parts) in itertools.product(Gs, VARIANTS):
            L = max(1, (T // CH + G - 1) // G)
            go_a, go_s, go_c, o, ht = split_calls(d, ws, L, h0, nw=nw, pf=pf, br=br, lean=lean, parts=parts)
            go_a(), go_s(), go_c()
            torch.cuda.synchronize()
            go_full()
            torch.cuda.synchronize()
            same = float((o.float() - o_f.float()).abs().max() / o_f.float().abs().max())

            def chain():
                go_a()
                go_s()
                go_c()
            r = dict(row, G=G, L=L, nw=nw, scan_pf=pf, scan_br=br, lean=lean, scan_p=parts, A=do_bench(go_a, warmup=5, rep=50, return_mode="median"),
                     scan=do_bench(go_s, warmup=5, rep=50, return_mode="median"),
                     C=do_bench(go_c, warmup=5, rep=50, return_mode="median"),
                     split=do_bench(chain, warmup=5, rep=50, return_mode="median"), vs_full=same)
            table.append(r)
            print(json.dumps(r), flush=True)
        del ws, d
    print(f"{'shape':14s} {'nw':>2s} {'pf':>2s} {'br':>2s} {'sp':>4s} {'ln':>2s} {'G':>4s} {'K1':>7s} {'K2':>7s} {'A':>7s} {'scan':>7s} {'C':>7s} "
          f"{'A+s+C':>7s} {'total':>7s} {'diff':>8s}")
    for r in table:
        print(f"{r['shape']:14s} {r['nw']:2d} {int(r['scan_pf']):2d} {r['scan_br']:2d} {r['scan_p']:>4s} {int(r['lean']):2d} {r['G']:4d} {r['K1']:7.3f} {r['K2']:7.3f} "
              f"{r['A']:7.3f} {r['scan']:7.3f} "
              f"{r['C']:7.3f} {r['split']:7.3f} {r['K1'] + r['split']:7.3f} {r['vs_full']:8.1e}")
    print(f"correctness ({CH}-token chunks): {len(rows)} runs, worst {worst:.2e}")


if __name__ == "__main__":
    main()
