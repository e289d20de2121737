"""What longest first gives through kda_prefill (K2Config.longest_first, kda_kernels/k2_order.py):
varlen calls with it off and forced on, same process, same inputs, under inference_mode.

    python bench/lf_probe.py

Per shape and state mode (none; fp32 in and out): median ms (triton do_bench), whether o and the
final state equal the off call's bit for bit (they must: each program computes the same sequence,
only the launch order changes), checked before anything is timed. On uniform rows the difference
is the order kernel's launch and the grid's digit order. Writes
lf_probe.json under $OUT (or bench/results/), a table last.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from results_io import write_rows  # noqa: E402

import k1_round  # noqa: E402  (the benchmarks' random inputs)

RAGGED6 = [1300, 547, 2048, 963, 271, 3063]
SHAPES = [  # label, H, lens
    ("H96 ragged6", 96, RAGGED6), ("H64 ragged6", 64, RAGGED6),
    ("H32 ragged5", 32, [100, 5000, 300, 20000, 7368]),
    ("H64 8x1024", 64, [1024] * 8), ("H96 16x1024", 96, [1024] * 16),
    ("H32 132x512", 32, [512] * 132),
    ("H32 ragged200", 32, None),      # 200 lengths 16..2048 drawn at random
    ("H8 ragged600", 8, None),        # 600 lengths 1..1024 drawn at random
]


def _lens(label, lens):
    if lens is not None:
        return lens
    g = torch.Generator().manual_seed(len(label))
    n, lo, hi = (200, 16, 2048) if "200" in label else (600, 1, 1024)
    return torch.randint(lo, hi + 1, (n,), generator=g).tolist()


def main():
    import kda_tile
    from kda_tile import api
    from kda_kernels import configs
    from triton.testing import do_bench
    rows = []
    with torch.inference_mode():
        for label, H, lens in SHAPES:
            lens = _lens(label, lens)
            T = sum(lens)
            d = k1_round.inputs(1, T, H, lens, seed=T + H)
            args = [d[n] for n in ("q", "k", "v", "g", "beta")]
            for mode in ("none", "inout"):
                h0 = torch.randn(len(lens), H, 128, 128, device="cuda") if mode == "inout" else None
                kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], initial_state=h0, output_final_state=h0 is not None,
                          cu_seqlens=d["cu"])
                api.set_longest_first(False)
                base = kda_tile.kda_prefill(*args, **kw)
                base = (base[0].clone(), None if base[1] is None else base[1].clone())
                api.set_longest_first(True)
                lf = api.spp_for(args[0], args[2], d["cu"]) == configs.SPP_LONGEST_FIRST
                got = kda_tile.kda_prefill(*args, **kw)
                bitwise = bool(torch.equal(got[0], base[0]) and (got[1] is None or torch.equal(got[1], base[1])))
                del got
                r = dict(shape=label, state=mode, N=len(lens), T=T, H=H, longest_first_taken=lf, bitwise=bitwise)
                for on in (False, True):
                    api.set_longest_first(on)
                    r["lf_ms" if on else "off_ms"] = do_bench(lambda: kda_tile.kda_prefill(*args, **kw), warmup=5,
                                                              rep=50, return_mode="median")
                api.set_longest_first(None)
                r["ratio"] = r["lf_ms"] / r["off_ms"]
                rows.append(r)
                print(json.dumps(r), flush=True)
            del d, args
    write_rows("lf_probe.json", rows)
    print(f"{'shape':16s} {'state':>6s} {'N':>5s} {'lf?':>4s} {'off ms':>8s} {'lf ms':>8s} {'lf/off':>7s} {'bitwise':>8s}")
    for r in rows:
        print(f"{r['shape']:16s} {r['state']:>6s} {r['N']:5d} {str(r['longest_first_taken'])[0]:>4s} "
              f"{r['off_ms']:8.3f} {r['lf_ms']:8.3f} {r['ratio']:7.3f} {str(r['bitwise']):>8s}")


if __name__ == "__main__":
    main()
