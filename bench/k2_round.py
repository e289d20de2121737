"""K2 variants (block_v, threads, num_stages of kda_kernels/k2_recurrence.py) on the GPU, through
TileLang's own JIT, fed by the released K1.

    python bench/k2_round.py [variant ...]     # variant: block_v,threads,num_stages

Correctness first: fresh random inputs (fixed and varlen, with empty, one-token and tail
sequences, fp32 initial state), o and the final state poisoned with NaN, both checked against the
float64 recurrence. Then K2 time (triton do_bench median, cu_seqlens, fp32 state in and out) at
H96 1x8192, H96 8x1024, H32 1x32768 and H8 1x65536, with the programs each launches.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import k1_round  # noqa: E402  (inputs, the released K1 through the JIT)
from kda_kernels.configs import K2Config  # noqa: E402
from kda_kernels.reference import kda_recurrent, rel_err  # noqa: E402

RELEASED = "64,128,2"
DEFAULT = [RELEASED, "32,128,2", "16,64,2", "32,64,2", "64,256,2", "128,256,2", "64,128,3"]


def k2_config(spec, varlen):
    bv, th, ns = map(int, spec.split(","))
    return K2Config(varlen=varlen, initial_state="float32", final_state=True, block_v=bv, threads=th, num_stages=ns)


def k2_call(spec, d, ws, h0):
    varlen = d["cu"] is not None
    N = d["cu"].numel() - 1 if varlen else d["q"].shape[0]
    o = torch.full_like(d["v"], float("nan"))
    ht = torch.full((N,) + h0.shape[1:], float("nan"), device="cuda")
    kern = k1_round.compiled(k2_config(spec, varlen))
    args = [d["v"]] + [ws[n] for n in ("kd", "qd", "kr", "Ab", "Mqk", "gC")] + ([d["cu"]] if varlen else [])
    args += [h0, o, ht]
    return (lambda: kern(*args)), o, ht


CASES = [("fixed B=2 T=100 H=3", 2, 100, 3, None), ("fixed B=1 T=1 H=1", 1, 1, 1, None),
         ("varlen [1,0,16,1,33] H=4", 1, 51, 4, [1, 0, 16, 1, 33]),
         ("varlen [1300,547,0,963,271] H=2", 1, 3081, 2, [1300, 547, 0, 963, 271])]


def correctness(spec):
    worst = 0.0
    for i, (label, B, T, H, lens) in enumerate(CASES):
        d = k1_round.inputs(B, T, H, lens, seed=200 + i)
        N = len(lens) if lens else B
        h0 = torch.randn(N, H, 128, 128, device="cuda")
        go1, ws = k1_round.run_k1(k1_round.RELEASED, d)
        go1()
        go2, o, ht = k2_call(spec, d, ws, h0)
        go2()
        torch.cuda.synchronize()
        ro, rht = kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                                lower_bound=-5.0, cu_seqlens=d["cu"], initial_state=h0, output_final_state=True)
        for e in (rel_err(o.double(), ro), rel_err(ht.double(), rht)):
            worst = max(worst, e) if e == e else float("nan")
    return worst


SHAPES = [("H96 1x8192", 8192, 96, [8192]), ("H96 8x1024", 8192, 96, [1024] * 8),
          ("H32 1x32768", 32768, 32, [32768]), ("H8 1x65536", 65536, 8, [65536])]


def main():
    from triton.testing import do_bench
    specs = sys.argv[1:] or DEFAULT
    if specs[0] != RELEASED:
        specs = [RELEASED] + specs
    k1_round.prewarm([k1_round.k1_config(k1_round.RELEASED, v) for v in (False, True)]
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
            d = k1_round.inputs(1, T, H, lens, seed=7)
            go1, ws = k1_round.run_k1(k1_round.RELEASED, d)
            go1()
            go2, o, ht = k2_call(spec, d, ws, torch.randn(len(lens), H, 128, 128, device="cuda"))
            go2()
            torch.cuda.synchronize()
            row[f"{label} ms"] = do_bench(go2, warmup=10, rep=100, return_mode="median")
            row[f"{label} programs"] = len(lens) * H * (128 // int(spec.split(",")[0]))
            del ws, d
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{'variant':12s} {'err':>8s} " + " ".join(f"{s[0]:>18s}" for s in SHAPES))
    for r in rows:
        print(f"{r['variant']:12s} {r['err']:8.1e} " + " ".join(
            f"{r[s[0] + ' ms']:8.3f} ({r[s[0] + ' programs']:5d})" for s in SHAPES))


if __name__ == "__main__":
    main()
