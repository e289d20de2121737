"""K2 over several sequences a program (configs.use_spp) through kda_prefill (the released builds
and the generated host entry): the rule's choice against each released grouping forced
(kda_tile.api.FORCE_SPP), same process, same inputs.

    python bench/spp_api.py [--quick]

Per shape: the rule's spp, kda_prefill time (triton do_bench median, inference_mode; no state and
fp32 state in and out) with one sequence a program and with each of configs.SPPS, their ratios to
one, and each output's error against the float64 chunked reference (first 48 sequences). Writes spp_api.json under $OUT (or bench/results/),
a table last.
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from results_io import write_rows  # noqa: E402

import k1_round  # noqa: E402  (the benchmarks' random inputs)

SHAPES = [  # label, H, lens: issue 9's rows, the rule's edges, and shapes round 24c measured slower
    ("H32 256x512 cu", 32, [512] * 256),
    ("H32 2048x64 cu", 32, [64] * 2048),
    ("H32 8192x16 cu", 32, [16] * 8192),
    ("H32 ragged4096 cu", 32, None),       # 4096 sequences of 0-64 tokens, one in eight empty
    ("H8 4096x32 cu", 8, [32] * 4096),
    ("H32 132x512 cu", 32, [512] * 132),   # 33 x 32 x 2 = 2112 programs at spp4: the rule says 4
    ("H96 16x1024 cu", 96, [1024] * 16),   # 768 programs at spp4: the rule says 1
    ("H64 8x1024 cu", 64, [1024] * 8),
    ("H2 2112x64 cu", 2, [64] * 2112),      # 1056 x 2 programs at spp4, short sequences
    ("H1 4096x32 cu", 1, [32] * 4096),      # 2048 programs at spp4
]
# SPP_SHAPES="H2 2112x64 cu;H1 4096x32 cu" keeps those rows only
if os.environ.get("SPP_SHAPES"):
    SHAPES = [s for s in SHAPES if s[0] in os.environ["SPP_SHAPES"].split(";")]


def _ragged(n, most, seed):
    gen = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, most + 1, (n,), generator=gen)
    lens[torch.randint(0, 8, (n,), generator=gen) == 0] = 0
    return lens.tolist()


def main():
    import kda_tile
    from kda_kernels.configs import SPPS
    from kda_kernels.reference import kda_chunked, rel_err
    from kda_tile import api
    from triton.testing import do_bench
    quick = "--quick" in sys.argv
    rows = []
    for label, H, lens in SHAPES[:3] if quick else SHAPES:
        lens = lens or _ragged(4096, 64, 7)
        T = sum(lens)
        d = k1_round.inputs(1, T, H, lens, seed=T + H)
        q, k, v, g, beta, A_log, dt_bias, cu = (d[n] for n in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "cu"))
        N = len(lens)
        h0 = torch.randn(N, H, 128, 128, device="cuda")
        row = dict(shape=label, N=N, T=T, H=H, rule_spp=api.spp_for(q, v, cu))
        # the float64 reference on the first sequences only (the whole batch does not fit in float64)
        m = min(N, 48)
        tm = int(sum(lens[:m]))
        ref = kda_chunked(*(x[:, :tm] for x in (q, k, v, g, beta)), A_log=A_log, dt_bias=dt_bias,
                          initial_state=h0[:m], output_final_state=True, cu_seqlens=cu[:m + 1])
        with torch.inference_mode():
            for state in ("none", "inout"):
                kw = dict(A_log=A_log, dt_bias=dt_bias, cu_seqlens=cu)
                if state == "inout":
                    kw.update(initial_state=h0, output_final_state=True)
                for spp in (1,) + SPPS:
                    api.FORCE_SPP = spp
                    o, ht = kda_tile.kda_prefill(q, k, v, g, beta, **kw)
                    torch.cuda.synchronize()
                    if state == "inout":
                        row[f"err_o_spp{spp}"] = rel_err(o[:, :tm], ref[0])
                        row[f"err_ht_spp{spp}"] = rel_err(ht[:m], ref[1])
                    row[f"{state}_spp{spp}_ms"] = do_bench(lambda: kda_tile.kda_prefill(q, k, v, g, beta, **kw),
                                                           warmup=5, rep=40, return_mode="median")
                api.FORCE_SPP = None
                for spp in SPPS:
                    row[f"{state}_ratio{spp}"] = row[f"{state}_spp{spp}_ms"] / row[f"{state}_spp1_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
        del q, k, v, g, d, ref
        torch.cuda.empty_cache()
    write_rows("spp_api.json", rows)
    cols = [f"{st} {spp}" for st in ("none", "inout") for spp in (1,) + SPPS]
    print(f"{'shape':20s} {'rule':>4s} " + " ".join(f"{c:>8s}" for c in cols) + "  ratios (none, inout)   err o (each spp)")
    for r in rows:
        ms = [r[f"{st}_spp{spp}_ms"] for st in ("none", "inout") for spp in (1,) + SPPS]
        ratios = [r[f"{st}_ratio{spp}"] for st in ("none", "inout") for spp in SPPS]
        errs = [r[f"err_o_spp{spp}"] for spp in (1,) + SPPS]
        print(f"{r['shape']:20s} {r['rule_spp']:>4d} " + " ".join(f"{x:8.3f}" for x in ms) + "  "
              + " ".join(f"{x:.3f}" for x in ratios) + "  " + " ".join(f"{x:.2e}" for x in errs))

if __name__ == "__main__":
    main()
