"""Which call of the cuDNN frontend's KDA is fastest at a shape, and is any of them legitimate
for bench_peers (issue 13 asks why another harness saw cuDNN at 1.61 ms at H96 1x8192 where
bench_peers sees 2.72). Same inputs as bench_peers (make_inputs), each variant checked against
kda_tile's output first, triton do_bench medians.

    python bench/cudnn_modes.py ["H96 1x8192" ...]

Variants: the bench_peers call; q and k passed already unit-norm (the in-kernel norm then has
nothing to do); no initial or final state; the final state written over the initial one
(overwrite_initial_state); every execution plan the graph offers, pinned by name.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("FLA_FLASH_KDA", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench_peers as BP  # noqa: E402


def offered_plans(d):
    import cudnn
    try:
        BP.cudnn_fe(d, plan_name="no-such-plan")
    except cudnn.cudnnGraphNotSupportedError as e:
        text = str(e)
        return [n.strip(" '\"") for n in text[text.index("offered: [") + 10:text.rindex("]")].split(",") if n.strip()]
    except Exception as e:  # noqa: BLE001
        return [f"? {type(e).__name__}: {str(e)[:200]}"]
    return []


def run(H, lens, HV=None):
    from triton.testing import do_bench
    d = BP.make_inputs(H, lens, seed=100, HV=HV)
    with torch.inference_mode():
        o_ref, ht_ref = BP.ours(d)
        unit = dict(d)
        for key in ("q", "k"):
            x = d[key].float()
            unit[key] = (x / x.norm(dim=-1, keepdim=True)).to(torch.bfloat16)
        variants = {"bench_peers call": lambda: BP.cudnn_fe(d),
                    "q, k unit-norm": lambda: BP.cudnn_fe(unit),
                    "no state in or out": lambda: BP.cudnn_fe(d, initial_state=None, output_final_state=False),
                    "overwrite_initial_state": lambda: BP.cudnn_fe(dict(d, h0=d["h0"].clone()),
                                                                   overwrite_initial_state=True)}
        plans = offered_plans(d)
        for p in plans:
            if not p.startswith("?"):
                variants[f"plan {p}"] = lambda p=p: BP.cudnn_fe(d, plan_name=p)
        rows = []
        for name, fn in variants.items():
            r = {"shape": BP.label(H, lens, HV), "variant": name}
            try:
                o, ht = fn()[:2]
                torch.cuda.synchronize()
                r["err_o_vs_ours"] = BP.rel(o.reshape(o_ref.shape), o_ref)
                if name not in ("no state in or out", "q, k unit-norm"):  # other state or inputs: o only
                    r["err_ht_vs_ours"] = BP.rel(ht.reshape(ht_ref.shape).float(), ht_ref.float())
                r["ms"] = do_bench(fn, warmup=25, rep=200, return_mode="median")
            except Exception as e:  # noqa: BLE001
                r["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            rows.append(r)
            print(json.dumps(r), flush=True)
        ours_ms = do_bench(lambda: BP.ours(d), warmup=25, rep=200, return_mode="median")
    print(json.dumps({"shape": BP.label(H, lens, HV), "plans_offered": plans, "kda_tile_ms": ours_ms}), flush=True)
    return rows


def main():
    wanted = sys.argv[1:] or ["H96 1x8192"]
    for H, lens, *hv in BP.SHAPES:
        if BP.label(H, lens, *hv) in wanted:
            run(H, lens, *hv)


if __name__ == "__main__":
    main()
