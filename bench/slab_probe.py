"""What time slabs cost (issue 13's memory point, kda_tile.slabs): one-sequence calls through
kda_prefill under workspace limits (kda_tile.api.set_workspace_limit), against the whole call,
same process, same inputs.

    python bench/slab_probe.py [--quick]

Per shape and limit: median ms (triton do_bench, inference_mode, fp32 initial and final state),
the slab length and count, the peak device memory beyond inputs and outputs (the entry's cached
workspaces dropped first, so what the call holds is counted), and the result against the whole
call's (o and the final state). Writes slab_probe.json under $OUT (or bench/results/), a table
last.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from results_io import write_rows  # noqa: E402

import k1_round  # noqa: E402  (the benchmarks' random inputs)
from bench_peers import extra_bytes  # noqa: E402

SHAPES = [  # label, T, H, cu, limits in MB (0: none, the whole call)
    ("H96 1x8192 cu", 8192, 96, True, [0, 256, 128, 64]),
    ("H96 1x8192", 8192, 96, False, [0, 64]),
    ("H64 1x8192 cu", 8192, 64, True, [0, 64]),
    ("H32 1x32768 cu", 32768, 32, True, [0, 256, 64]),
    ("H8 1x65536 cu", 65536, 8, True, [0, 256, 64]),
    ("H8 1x1048576 cu", 1 << 20, 8, True, [0, 1024, 256, 64]),
]


def main():
    import kda_tile
    from kda_tile import api
    from kda_kernels.reference import rel_err
    from triton.testing import do_bench
    quick = "--quick" in sys.argv
    rows = []
    for label, T, H, use_cu, limits in (SHAPES[:2] if quick else SHAPES):
        d = k1_round.inputs(1, T, H, [T] if use_cu else None, seed=T + H)
        h0 = torch.randn(1, H, 128, 128, device="cuda")
        args = [d[n] for n in ("q", "k", "v", "g", "beta")]
        kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], initial_state=h0, output_final_state=True,
                  cu_seqlens=d["cu"])
        whole = None
        with torch.inference_mode():
            for mb in limits:
                api.set_workspace_limit(mb << 20 if mb else None)
                tokens = api._slab_rule(1, T, H) if mb else 0
                api.empty_cache()
                torch.cuda.empty_cache()
                kept = []   # the call's outputs, held past extra_bytes for the comparison below
                extra = extra_bytes(lambda: kept.append(kda_tile.kda_prefill(*args, **kw)),
                                    d["v"].numel() * 2 + h0.numel() * 4)
                o, ht = kept.pop()
                row = dict(shape=label, limit_MB=mb, slab_tokens=tokens, slabs=-(-T // tokens) if tokens else 1,
                           extra_MB=round(extra / 2 ** 20, 1))
                if whole is None:
                    whole = (o.clone(), ht.clone())
                else:
                    row["o_vs_whole"] = rel_err(o, whole[0].double())
                    row["ht_vs_whole"] = rel_err(ht, whole[1].double())
                del o, ht
                row["ms"] = do_bench(lambda: kda_tile.kda_prefill(*args, **kw), warmup=5, rep=40,
                                     return_mode="median")
                rows.append(row)
                print(json.dumps(row), flush=True)
        api.set_workspace_limit(None)
        del d, whole
        api.empty_cache()
        torch.cuda.empty_cache()
    write_rows("slab_probe.json", rows)
    base = {r["shape"]: r["ms"] for r in rows if r["limit_MB"] == 0}
    print(f"{'shape':18s} {'limit':>6s} {'slab':>6s} {'n':>4s} {'ms':>8s} {'x whole':>8s} {'extra MB':>9s} "
          f"{'o vs whole':>10s}")
    for r in rows:
        print(f"{r['shape']:18s} {r['limit_MB']:6d} {r['slab_tokens']:6d} {r['slabs']:4d} {r['ms']:8.3f} "
              f"{r['ms'] / base[r['shape']]:8.3f} {r['extra_MB']:9.1f} {r.get('o_vs_whole', 0.0):10.1e}")


if __name__ == "__main__":
    main()
