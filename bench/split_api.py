"""The sequence split through kda_prefill (the released builds and the generated host entry):
the API's choice against both paths forced (kda_tile.api.FORCE_SPLIT), same process, same inputs.

    python bench/split_api.py [--quick]

Per shape: the rule's (L, G) and choice, kda_prefill time (triton do_bench median, fp32 state in
and out, inference_mode) with the split and without, their ratio, and the split's error against
the float64 chunked reference (o and the final state; at T >= 1M only against the unsplit
kernel's output). Writes split_api.json under $OUT (or bench/results/), a table last.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from results_io import write_rows  # noqa: E402

import k1_round  # noqa: E402  (the benchmarks' random inputs)

SHAPES = [  # label, B, T, H, lens (None: fixed batch)
    ("H8 1x65536 cu", 1, 65536, 8, [65536]),
    ("H8 1x65536", 1, 65536, 8, None),
    ("H16 1x65536 cu", 1, 65536, 16, [65536]),
    ("H32 1x32768 cu", 1, 32768, 32, [32768]),
    ("H64 1x16384 cu", 1, 16384, 64, [16384]),
    ("H96 1x8192 cu", 1, 8192, 96, [8192]),
    ("H8 4x16384 cu", 1, 65536, 8, [16384] * 4),
    ("H4 1x131072 cu", 1, 131072, 4, [131072]),
    ("H8 1x8192 cu", 1, 8192, 8, [8192]),
    ("H8 1x262144 cu", 1, 262144, 8, [262144]),
    ("H8 1x1048576 cu", 1, 1 << 20, 8, [1 << 20]),
]


def main():
    import kda_tile
    from kda_kernels.configs import SPLIT_CHUNK, split_plan
    from kda_tile import api
    from kda_kernels.reference import kda_chunked, rel_err
    from kda_tile.api import use_split
    from triton.testing import do_bench
    quick = "--quick" in sys.argv
    rows = []
    for label, B, T, H, lens in SHAPES[:4] if quick else SHAPES:
        d = k1_round.inputs(B, T, H, lens, seed=T + H)
        q, k, v, g, beta, A_log, dt_bias, cu = (d[n] for n in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "cu"))
        N = B if cu is None else len(lens)
        h0 = torch.randn(N, H, 128, 128, device="cuda")
        kw = dict(A_log=A_log, dt_bias=dt_bias, initial_state=h0, output_final_state=True, cu_seqlens=cu)
        L, G = split_plan(N, T * B, H, SPLIT_CHUNK)
        row = dict(shape=label, L=L, G=G, auto_split=use_split(q, v, cu))
        outs = {}
        with torch.inference_mode():
            for mode in ("1", "0"):
                api.FORCE_SPLIT = mode == "1"
                o, ht = kda_tile.kda_prefill(q, k, v, g, beta, **kw)
                torch.cuda.synchronize()
                outs[mode] = (o.clone(), ht.clone())
                row["split_ms" if mode == "1" else "unsplit_ms"] = do_bench(
                    lambda: kda_tile.kda_prefill(q, k, v, g, beta, **kw), warmup=5, rep=40, return_mode="median")
            api.FORCE_SPLIT = None
            # the scan in one part where the rule gives it SCAN_PARTS (session 40): same call
            row["scan_parts"] = api.scan_parts_for(q, v, cu)
            if row["auto_split"] and row["scan_parts"] > 1:
                rule = api._configs.scan_parts
                api._configs.scan_parts = lambda N, T, HV: 1
                api._SCANP.clear()
                try:
                    o1, _ = kda_tile.kda_prefill(q, k, v, g, beta, **kw)
                    row["split_p1_ms"] = do_bench(lambda: kda_tile.kda_prefill(q, k, v, g, beta, **kw), warmup=5,
                                                  rep=40, return_mode="median")
                    row["p1_vs_parts_o"] = rel_err(o1.double(), outs["1"][0].double())
                finally:
                    api._configs.scan_parts = rule
                    api._SCANP.clear()
        row["ratio"] = row["split_ms"] / row["unsplit_ms"]
        row["split_vs_unsplit_o"] = rel_err(outs["1"][0].double(), outs["0"][0].double())
        if T * B <= 262144:
            ro, rht = kda_chunked(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, initial_state=h0,
                                  output_final_state=True, cu_seqlens=cu)
            row["err_o_split"] = rel_err(outs["1"][0], ro)
            row["err_ht_split"] = rel_err(outs["1"][1], rht)
            row["err_o_unsplit"] = rel_err(outs["0"][0], ro)
        rows.append(row)
        print(json.dumps(row), flush=True)
        del q, k, v, g, d, outs
        torch.cuda.empty_cache()
    write_rows("split_api.json", rows)
    print(f"{'shape':16s} {'L':>5s} {'G':>5s} {'auto':>5s} {'parts':>5s} {'split':>8s} {'1 part':>8s} {'unsplit':>8s} "
          f"{'ratio':>6s} {'err_o':>8s} {'err_ht':>8s}")
    for r in rows:
        print(f"{r['shape']:16s} {r['L']:5d} {r['G']:5d} {str(r['auto_split']):>5s} {r['scan_parts']:5d} "
              f"{r['split_ms']:8.3f} {r.get('split_p1_ms', float('nan')):8.3f} "
              f"{r['unsplit_ms']:8.3f} {r['ratio']:6.2f} {r.get('err_o_split', float('nan')):8.1e} "
              f"{r.get('err_ht_split', float('nan')):8.1e}")


if __name__ == "__main__":
    main()
