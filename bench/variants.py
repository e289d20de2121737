"""Tile-size variants of K1 and K2 on one GPU: correctness against the float64 reference at a
small ragged shape, then K1 and K2 timed alone at H96 1x8192 and H8 1x65536 (varlen path).

    python bench/variants.py [--out DIR]
"""
import argparse
import concurrent.futures as cf
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

K1_VARIANTS = [dict(chunks_per_cta=2), dict(chunks_per_cta=2, threads=64), dict(chunks_per_cta=1, threads=64)]
K2_VARIANTS = [dict(block_v=64, num_stages=2), dict(block_v=32, num_stages=2)]


def builds():
    from kda_kernels.k1_prepare import K1Config
    from kda_kernels.k2_recurrence import K2Config
    from kda_kernels.registry import Build
    k1s = [Build("k1", K1Config(varlen=True, **v)) for v in K1_VARIANTS]
    k2s = [Build("k2", K2Config(varlen=True, initial_state="float32", final_state=True, **v)) for v in K2_VARIANTS]
    return k1s, k2s


def _compile(i):
    from kda_tile import _launch
    k1s, k2s = builds()
    _launch.compiled((k1s + k2s)[i])
    return i


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench/results")
    args = ap.parse_args()
    from triton.testing import do_bench
    from kda_tile import _launch
    from kda_kernels import reference
    k1s, k2s = builds()
    with cf.ProcessPoolExecutor(8) as ex:
        list(ex.map(_compile, range(len(k1s) + len(k2s))))
    rows = []
    lens = [1, 17, 300, 16]
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64, device="cuda")
    inp = reference.random_inputs(1, sum(lens), 4, device="cuda", seed=3, cu_seqlens=cu, state_dtype=torch.float32)
    o_ref, ht_ref = reference.kda_recurrent(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                            dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                            output_final_state=True, cu_seqlens=cu)
    os.environ["KDA_TILE_POISON"] = "1"
    for k1 in k1s:
        for k2 in k2s:
            o, ht = _launch.launch(k1, k2, inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], inp["A_log"],
                                   inp["dt_bias"], cu, inp["initial_state"], -5.0, 128 ** -0.5)
            rows.append(dict(k1=str(k1.config), k2=str(k2.config), err_o=reference.rel_err(o, o_ref),
                             err_ht=reference.rel_err(ht, ht_ref)))
    os.environ["KDA_TILE_POISON"] = "0"
    for H, T in [(96, 8192), (8, 65536), (64, 8192)]:
        d = reference.random_inputs(1, T, H, device="cuda", seed=5, state_dtype=torch.float32,
                                    cu_seqlens=torch.tensor([0, T], device="cuda"))
        for k1 in k1s:
            f1, _ = _launch.stage_callables(k1, k2s[0], d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"],
                                            d["dt_bias"], d["cu_seqlens"], d["initial_state"], -5.0, 128 ** -0.5)
            rows.append(dict(shape=f"H{H} 1x{T}", k1=str(k1.config), k1_ms=do_bench(f1, warmup=25, rep=100, return_mode="median")))
        for k2 in k2s:
            _, f2 = _launch.stage_callables(k1s[0], k2, d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"],
                                            d["dt_bias"], d["cu_seqlens"], d["initial_state"], -5.0, 128 ** -0.5)
            rows.append(dict(shape=f"H{H} 1x{T}", k2=str(k2.config), k2_ms=do_bench(f2, warmup=25, rep=100, return_mode="median")))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "variants.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        cfg = r.get("k1", "") if "k1_ms" in r or "err_o" in r else ""
        print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()
               if k not in ("k1", "k2")}, "|", _short(r.get("k1")), "|", _short(r.get("k2")))


def _short(c):
    if not c:
        return ""
    import re
    return " ".join(re.findall(r"(chunks_per_cta=\d+|threads=\d+|block_v=\d+|num_stages=\d+)", c))


if __name__ == "__main__":
    main()
