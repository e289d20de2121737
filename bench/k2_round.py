"""K2 variants (consumers, ring stages, min_blocks of kda_kernels/k2_recurrence.py) on the GPU,
through TileLang's own JIT, fed by the released K1.

    python bench/k2_round.py [variant ...]     # variant: consumers,stages,min_blocks[,no_store]
    python bench/k2_round.py ncu variant ...   # one K1 and one K2 launch at H96 1x8192, for ncu

Correctness first: fresh random inputs (fixed and varlen, with empty, one-token and tail
sequences, fp32 initial state), o and the final state poisoned with NaN, both checked against the
float64 recurrence. Then K1 and K2 times (triton do_bench median, cu_seqlens, fp32 state in and
out) at the timing shapes. One JSON row per variant, a table last. "no_store" (a probe: K2 skips
its output stores) is timed but fails the check by construction.
"""
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import k1_round  # noqa: E402  (inputs, the released K1 through the JIT)
from kda_kernels.configs import K2Config  # noqa: E402
from kda_kernels.reference import kda_recurrent, rel_err  # noqa: E402

RELEASED = "1,3,2"
DEFAULT = [RELEASED, "1,3,2,no_store"]


def k2_config(spec, varlen):
    """spec: consumers,stages,min_blocks[,probe][,u0k2][,rNNN consumer registers][,guarded|row]
    [,unroll][,ch32][,vss: v^T as a shared operand, Ab in bf16 halves (from K1's fp16 Ab on the
    host, or with abh written by K1: K1Config.ab_halves)][,sppN: N
    sequences a program, varlen only][,lf: longest sequence first, varlen only][,nostate: no
    initial or final state] (K2Config.store, unroll_ring, chunk, v_ss,
    seqs_per_program, longest_first) (session
    15's step forms "mo", "ua", "gp" are in commit a8a4af4)"""
    nw, st, mb, *rest = spec.split(",")
    regs = [int(r[1:]) for r in rest if re.fullmatch(r"r\d+", r)]
    spp = [int(r[3:]) for r in rest if re.fullmatch(r"spp\d+", r)]
    forms = {"guarded": ("store", "guarded"), "row": ("store", "row"), "unroll": ("unroll_ring", True),
             "ch32": ("chunk", 32), "vss": ("v_ss", True)}
    probe = [r for r in rest if r not in ("u0k2", "nostate", "lf", "abh") and r not in forms
             and not re.fullmatch(r"r\d+|spp\d+", r)]
    state = "nostate" not in rest
    cfg = K2Config(varlen=varlen, initial_state="float32" if state else None, final_state=state,
                   consumers=int(nw), stages=int(st), min_blocks=int(mb), probe=probe[0] if probe else "",
                   u0_in_k2="u0k2" in rest, seqs_per_program=spp[0] if spp and varlen else 1,
                   longest_first=varlen and "lf" in rest,
                   **dict(forms[r] for r in rest if r in forms))
    if regs:
        # rNNN: NNN consumer registers, the loading warpgroup gets the rest of the launch's
        cfg = dataclasses.replace(cfg, consumer_regs=regs[0],
                                  producer_regs=cfg.launch_regs * (cfg.consumers + 1) - regs[0] * cfg.consumers)
    return cfg


def k1_spec(spec):
    """The K1 that feeds K2 variant `spec`: the released one, with u0k2 where K2 forms U0; for
    32-token chunks (ch32) k1_round.RELEASED_CH32."""
    parts = spec.split(",")
    if "ch32" in parts:
        # abh: K1 writes Ab's bf16 halves itself (K1Config.ab_halves), for v_ss
        return k1_round.RELEASED_CH32 + (",abh" if "abh" in parts else "")
    return k1_round.RELEASED + (",u0k2" if "u0k2" in parts else "")


def k2_call(spec, d, ws, h0):
    varlen = d["cu"] is not None
    N = d["cu"].numel() - 1 if varlen else d["q"].shape[0]
    o = torch.full_like(d["v"], float("nan"))
    cfg = k2_config(spec, varlen)
    ht = torch.full((N,) + h0.shape[1:], float("nan"), device="cuda") if cfg.final_state else None
    kern = k1_round.compiled(cfg)
    if cfg.v_ss and ws["Ab"].dtype == torch.float16:
        ws = dict(ws, Ab=ab_halves(ws["Ab"]))
    order = None
    if cfg.longest_first:   # k2_order's permutation: by length, longest first, ties by index
        order = torch.argsort(d["cu"][1:] - d["cu"][:-1], descending=True, stable=True).to(torch.int32)
    args = k1_round.args_for(cfg, dict(ws, v=d["v"], cu_seqlens=d["cu"], h0=h0, o=o, ht=ht, order=order))
    return (lambda: kern(*args)), o, ht


def ab_halves(ab):
    """K1's fp16 Ab [HV, NC C, C] as v_ss reads it: a chunk's C rows of hi, then C of lo, in bf16
    (hi + lo holds the fp16 value exactly)."""
    HV, R, C = ab.shape
    hi = ab.to(torch.bfloat16)
    lo = (ab.float() - hi.float()).to(torch.bfloat16)
    return torch.stack([hi.view(HV, R // C, C, C), lo.view(HV, R // C, C, C)], dim=2).reshape(HV, 2 * R, C).contiguous()


CASES = [("fixed B=2 T=100 H=3", 2, 100, 3, None), ("fixed B=1 T=1 H=1", 1, 1, 1, None),
         ("varlen [1,0,16,1,33] H=4", 1, 51, 4, [1, 0, 16, 1, 33]),
         ("varlen [1300,547,0,963,271] H=2", 1, 3081, 2, [1300, 547, 0, 963, 271]),
         ("varlen 300x[0..40] H=2", 1, None, 2, "ragged"), ("fixed B=3 T=777 H=2", 3, 777, 2, None)]


def correctness(spec):
    worst = 0.0
    for i, (label, B, T, H, lens) in enumerate(CASES):
        if lens == "ragged":
            lens = torch.randint(0, 41, (300,), generator=torch.Generator().manual_seed(i)).tolist()
            T = sum(lens)
        d = k1_round.inputs(B, T, H, lens, seed=300 + i)
        N = len(lens) if lens else B
        h0 = torch.randn(N, H, 128, 128, device="cuda")
        go1, ws = k1_round.run_k1(k1_spec(spec), d)
        go1()
        go2, o, ht = k2_call(spec, d, ws, h0)
        go2()
        torch.cuda.synchronize()
        state = ht is not None
        ro, rht = kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                                lower_bound=-5.0, cu_seqlens=d["cu"], initial_state=h0 if state else None,
                                output_final_state=True)
        for e in (rel_err(o.double(), ro),) + ((rel_err(ht.double(), rht),) if state else ()):
            worst = max(worst, e) if e == e else float("nan")
    return worst


SHAPES = [("H96 1x8192", 8192, 96, [8192]), ("H64 8x1024", 8192, 64, [1024] * 8),
          ("H96 16x1024", 16384, 96, [1024] * 16), ("H32 1x32768", 32768, 32, [32768]),
          ("H8 1x65536", 65536, 8, [65536]), ("H32 2048x64", 131072, 32, [64] * 2048),
          ("H32 8192x16", 131072, 32, [16] * 8192), ("H32 256x512", 131072, 32, [512] * 256),
          ("H96 ragged6", 8192, 96, [1300, 547, 2048, 963, 271, 3063]),
          ("H64 ragged6", 8192, 64, [1300, 547, 2048, 963, 271, 3063]),
          ("H32 ragged5", 32768, 32, [100, 5000, 300, 20000, 7368]), ("H64 1x8192", 8192, 64, [8192]),
          ("H48 1x8192", 8192, 48, [8192]), ("H40 1x16384", 16384, 40, [16384])]
# K2_SHAPES="H32 2048x64;H32 8192x16" keeps those rows only; K2_FIXED=1 times the equal-length
# rows as fixed batches (B sequences, no cu_seqlens) and leaves the ragged ones out
if os.environ.get("K2_SHAPES"):
    SHAPES = [s for s in SHAPES if s[0] in os.environ["K2_SHAPES"].split(";")]


def ncu(spec):
    """One K1 and one K2 launch at H96 1x8192, or at K2_NCU_SHAPE ("H32 1x32768": one sequence)
    (cu_seqlens; a fixed batch with K2_FIXED=1) for ncu."""
    fixed = os.environ.get("K2_FIXED") == "1"
    H, T = map(int, re.fullmatch(r"H(\d+) 1x(\d+)", os.environ.get("K2_NCU_SHAPE", "H96 1x8192")).groups())
    d = k1_round.inputs(1, T, H, None if fixed else [T], seed=7)
    go1, ws = k1_round.run_k1(k1_spec(spec), d)
    go2, _, _ = k2_call(spec, d, ws, torch.randn(1, H, 128, 128, device="cuda"))
    k1_round.profiled(go1, go2)


def main():
    from triton.testing import do_bench
    if sys.argv[1:2] == ["ncu"]:
        for spec in sys.argv[2:]:
            ncu(spec)
        return
    specs = sys.argv[1:] or DEFAULT
    k1_round.prewarm(list({k1_round.k1_config(k1_spec(s), v) for s in specs for v in (False, True)})
                     + [k2_config(s, v) for s in specs for v in (False, True)])
    rows = []
    for spec in specs:
        t0 = time.perf_counter()
        try:
            err = correctness(spec)
        except Exception as e:
            print(json.dumps(dict(variant=spec, error=f"{type(e).__name__}: {str(e)[-300:]}")), flush=True)
            continue
        row = dict(variant=spec, err=err, ok=err <= 5e-3, check_s=round(time.perf_counter() - t0, 1))
        for label, T, H, lens in SHAPES:
            if os.environ.get("K2_FIXED") == "1":
                if len(set(lens)) > 1:
                    continue
                d = k1_round.inputs(len(lens), lens[0], H, None, seed=7)
            else:
                d = k1_round.inputs(1, T, H, lens, seed=7)
            go1, ws = k1_round.run_k1(k1_spec(spec), d)
            go1()
            go2, o, ht = k2_call(spec, d, ws, torch.randn(len(lens), H, 128, 128, device="cuda"))
            go2()
            torch.cuda.synchronize()
            row[f"{label} ms"] = do_bench(go2, warmup=10, rep=100, return_mode="median")
            row[f"{label} K1 ms"] = do_bench(go1, warmup=10, rep=100, return_mode="median")
            del ws, d
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{'variant':16s} {'err':>8s} " + " ".join(f"{s[0]:>12s}" for s in SHAPES))
    for r in rows:
        print(f"{r['variant']:16s} {r['err']:8.1e} " + " ".join(f"{r.get(s[0] + ' ms', float('nan')):12.3f}"
                                                               for s in SHAPES))
        print(f"{'  its K1':16s} {'':8s} " + " ".join(f"{r.get(s[0] + ' K1 ms', float('nan')):12.3f}" for s in SHAPES))


if __name__ == "__main__":
    main()
