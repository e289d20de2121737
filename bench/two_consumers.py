"""What the two-consumer 32-token K2 (configs.use_two_consumers) gives through kda_prefill: each
shape run by the rule, by the two-consumer 32-token builds forced (so that shapes past the rule's
bound still measure them), by the one-consumer 32-token builds, and by 16-token chunks (the release
before session 31 at these shapes), same process, same inputs, under inference_mode.

    python bench/two_consumers.py
    TWO_ONLY="H104,H112" python bench/two_consumers.py     # only those shapes

Per shape and state mode (none; fp32 in and out): o and the final state of every form against the
float64 chunked reference first (poisoned outputs: KDA_TILE_POISON=1), then median ms (triton
do_bench) and the ratios to the 16-token call. Writes two_consumers.json under $OUT (or
bench/results/), a table last.
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from results_io import write_rows  # noqa: E402


SHAPES = [  # label, H (q/k heads), HV, lens (None: a fixed batch of one row)
    ("H96 1x8192", 96, 96, None), ("H96 1x8192 cu", 96, 96, [8192]), ("H96 1x4096 cu", 96, 96, [4096]),
    ("H96 1x1024 cu", 96, 96, [1024]), ("H96 1x512 cu", 96, 96, [512]), ("H72 1x8192 cu", 72, 72, [8192]),
    ("H128 1x8192 cu", 128, 128, [8192]), ("H48 2x4096 cu", 48, 48, [4096, 4096]),
    ("H16/HV96 1x8192 cu", 16, 96, [8192]),
    # where the rule's bound on programs goes (round 31c: H96 0.91, H128 1.03)
    ("H104 1x8192 cu", 104, 104, [8192]), ("H112 1x8192 cu", 112, 112, [8192]), ("H120 1x8192 cu", 120, 120, [8192]),
]
# TWO_ONLY: only the shapes whose label contains one of these texts (comma-separated)
ONLY = [x for x in os.environ.get("TWO_ONLY", "").split(",") if x]
FORMS = ("rule", "32x2", "32x1", "16")


def _force(api, form, rule):
    """The API's plan for `form`: the rule (api._two_rule as released, `rule`), 32-token chunks with
    two consumers or one, or 16-token chunks."""
    from kda_kernels import configs
    api._CHUNK.clear()
    api._TWO.clear()
    api.FORCE_CHUNK = {"rule": None, "32x2": 32, "32x1": 32, "16": 16}[form]
    forced = {"32x2": configs.TWO_CONSUMERS, "32x1": 1}.get(form)
    api._two_rule = rule if forced is None else (lambda N, T, HV: forced)


def main():
    import kda_tile
    from kda_tile import api
    from kda_kernels import configs
    from kda_kernels.reference import kda_chunked, random_inputs, rel_err
    from triton.testing import do_bench
    rule = api._two_rule
    rows = []
    with torch.inference_mode():
        for label, H, HV, lens in SHAPES:
            if ONLY and not any(x in label for x in ONLY):
                continue
            T = 8192 if lens is None else sum(lens)
            cu = None if lens is None else [0] + torch.tensor(lens).cumsum(0).tolist()
            d = random_inputs(1, T, H, device="cuda", seed=T + H + HV, cu_seqlens=cu, state_dtype=torch.float32,
                              HV=HV)
            cu = d["cu_seqlens"]
            args = [d[n] for n in ("q", "k", "v", "g", "beta")]
            N = 1 if lens is None else len(lens)
            for mode in ("none", "inout"):
                h0 = d["initial_state"] if mode == "inout" else None
                kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], initial_state=h0, output_final_state=h0 is not None,
                          cu_seqlens=cu)
                ref_o, ref_h = kda_chunked(*args, gate_kind="safe", lower_bound=-5.0,
                                           **kw | dict(output_final_state=True))
                r = dict(shape=label, state=mode, N=N, T=T, H=H, HV=HV, device=torch.cuda.get_device_name())
                os.environ["KDA_TILE_POISON"] = "1"
                for form in FORMS:
                    _force(api, form, rule)
                    r[f"{form}_plan"] = list(api._plan(args[0], args[2], cu))
                    o, ht = kda_tile.kda_prefill(*args, **kw)
                    r[f"{form}_err_o"] = rel_err(o, ref_o)
                    r[f"{form}_err_ht"] = rel_err(ht, ref_h) if ht is not None else None
                    del o, ht
                os.environ.pop("KDA_TILE_POISON")
                for form in FORMS:
                    _force(api, form, rule)
                    r[f"{form}_ms"] = do_bench(lambda: kda_tile.kda_prefill(*args, **kw), warmup=10, rep=100,
                                               return_mode="median")
                _force(api, "rule", rule)
                r["two_consumers_taken"] = r["rule_plan"] == [False, 32, configs.TWO_CONSUMERS]
                for form in FORMS[:3]:
                    r[f"{form}_vs_16"] = r[f"{form}_ms"] / r["16_ms"]
                rows.append(r)
                print(json.dumps(r), flush=True)
            del d, args
    write_rows("two_consumers.json", rows)
    print(f"{'shape':20s} {'state':>6s} {'2c?':>4s} " + " ".join(f"{f + ' ms':>8s}" for f in FORMS)
          + " " + " ".join(f"{f + '/16':>8s}" for f in FORMS[:3]) + f" {'max err':>8s}")
    for r in rows:
        err = max(v for k, v in r.items() if "_err_" in k and v is not None)
        print(f"{r['shape']:20s} {r['state']:>6s} {str(r['two_consumers_taken'])[0]:>4s} "
              + " ".join(f"{r[f + '_ms']:8.3f}" for f in FORMS) + " "
              + " ".join(f"{r[f + '_vs_16']:8.3f}" for f in FORMS[:3]) + f" {err:8.1e}")


if __name__ == "__main__":
    main()
