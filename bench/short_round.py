"""Sequences of at most one chunk as one kernel (K1Config.short_out), JIT, against kda_prefill.

    python bench/short_round.py [--chunks 1|2|4]

Issue 9's many-sequence rows pay the K1 -> K2 workspace (~1.7 KB a token and head, written and
read) and K2's launch per sequence; at 16 tokens a sequence a chunk's o needs nothing of the
chain: with no state in or out, o = Mqk (Ab v). short_out is the released accurate 16-token K1
(mqk_diag, rsqrt_nr, early_loads, lean_prologue) that reads v, forms that product and writes o
instead of the workspace: one program a (sequence, value head), no slot search, no holes.
short_ht also writes the fp32 final state S^T = U0^T kr (fresh prompts in a serving prefill).

First correctness, without and with the final state: o and the state (poisoned with NaN first)
against the float64 recurrence on fresh random inputs, fixed batches with T <= 16 and varlen
batches of 0-16 tokens (empty and one-token sequences among them). Then, on each timing shape
and in both modes, kda_prefill's outputs against ours (its default path: no state, or the fp32
final state out) and both times (triton do_bench medians, same process, same inputs), with the
bytes the short kernel must move at 4.27 TB/s, and the released K1 alone on the same inputs (the
short kernel is K1's work plus two small products, minus the workspace's stores). One JSON row a
shape and mode, a table last.

--chunks 2 or 4 runs the same for the pairwise form (K1Config.short_chunks; session 33, released
with 4 in session 34 and proved with the registry): sequences of up to 32 or 64 tokens, chunk by
chunk in one program, with the earlier chunks' kr (decayed) and U in shared memory instead of a
state. The JIT builds here are the registry's configs (n = 2: the same with two chunks). Each row
also times session 34's layout (`allrows`: 84 barriers a chunk against 19, and without the state
3 programs an SM against 4). Since session 36 a row times the variants SHORT_VARIANTS names
(default t64,ib; VARIANTS below), each with its o (and state) against the released form's; those
SHORT_CHECK names (default ib) also run every correctness case against float64.
"""
import dataclasses
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import k1_round  # noqa: E402
from kda_kernels import registry  # noqa: E402
from kda_kernels.reference import kda_recurrent, rel_err  # noqa: E402


def config(varlen, ht=False, n=1):
    """The released short form (n = 1) or pairwise form (n = 4), or the pairwise form over two
    chunks with the same registers (JIT)."""
    b = registry.find("k1_short", varlen=varlen, short_ht=ht, short_chunks=4 if n > 1 else 1).config
    return b if n != 2 else dataclasses.replace(b, short_chunks=2)


# The pairwise form's variants a row times beside the released form (SHORT_VARIANTS, comma-
# separated; SHORT_CHECK: those also run against float64 on every case), as K1Config changes:
# allrows, session 34's layout (84 barriers a chunk against 19; 3 programs an SM without the state
# against 4); t64, session 35's release (64 threads a program; session 36 releases 128); ib, the
# inverse from 8-row blocks (K1Config.inv_blocks, session 36); ne, the next chunk's copies in flight
# during this chunk (K1Config.next_early, session 37), and neib, both (released in session 37, so
# the released form since); cq, the column pass over four channels and four rows a thread
# (K1Config.col_quads, session 38; released without the state since, so pairs is session 37's form);
# lkr, the final state's last chunk kr in registers and the lean rows with the state
# (K1Config.last_kr_regs, session 39; rows without the state run the released form under its name),
# and nolkr, session 38's form with the state (lkr released since); nohtstore and noht, probes
# (K1Config.probe) of the state builds without the final state's stores, and without its products
# as well (their state is not written). (Session 39's hts, the state stored through shared memory
# in 16-byte pieces, measured +6% and was removed.)
VARIANTS = {"allrows": dict(short_lean_rows=False, threads=64), "t64": dict(threads=64),
            "ib": dict(inv_blocks=True), "ne": dict(next_early=True),
            "neib": dict(next_early=True, inv_blocks=True), "cq": dict(col_quads=True),
            "pairs": dict(col_quads=False), "lkr": dict(last_kr_regs=True), "nolkr": dict(last_kr_regs=False),
            "nohtstore": dict(probe="htstore"), "noht": dict(probe="htstore+htmm")}
STATE_ONLY = {"lkr", "nolkr", "nohtstore", "noht"}


def run_short(d, ht=False, n=1, variant=None):
    """(launch, o, final state or None): outputs poisoned with NaN, written by each launch; the
    released form, or one of VARIANTS."""
    cfg = config(d["cu"] is not None, ht, n)
    if variant and (ht or variant not in STATE_ONLY):
        cfg = dataclasses.replace(cfg, **VARIANTS[variant])
    o = torch.full_like(d["v"], float("nan"))
    B, T, HV, V = d["v"].shape
    N = B if d["cu"] is None else d["cu"].numel() - 1
    h = torch.full((N, HV, V, 128), float("nan"), device="cuda") if ht else None
    args = k1_round.args_for(cfg, dict(d, cu_seqlens=d["cu"], lower_bound=-5.0, scale=128 ** -0.5, o=o, ht=h))
    kern = k1_round.compiled(cfg)
    return (lambda: kern(*args)), o, h


def prefill(d, ht=False):
    import kda_tile
    kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], lower_bound=-5.0, scale=128 ** -0.5, output_final_state=ht)
    if d["cu"] is not None:
        kw["cu_seqlens"] = d["cu"]
    return lambda: kda_tile.kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], **kw)


CASES_N = [("fixed B=3 T=64 H=2", 3, 64, 2, None), ("fixed B=2 T=37 H=3", 2, 37, 3, None),
           ("fixed B=2 T=17 H=1", 2, 17, 1, None), ("fixed B=4 T=5 H=8", 4, 5, 8, None),
           ("fixed B=3 T=50 H=2 HV=6 (GVA)", 3, 50, (2, 6), None),
           ("varlen [1,0,64,17,33,16,48,63] H=4", 1, None, 4, [1, 0, 64, 17, 33, 16, 48, 63]),
           ("varlen [0,40,16,1,0] H=1 HV=4 (GVA)", 1, None, (1, 4), [0, 40, 16, 1, 0]),
           ("varlen 300x[0..64] H=2", 1, None, 2, "ragged")]
SHAPES_N = [("H32 2048x64 cu", 1, None, 32, [64] * 2048), ("H32 2048x64", 2048, 64, 32, None),
            ("H32 ragged 2048x[0..64] cu", 1, None, 32, "ragged"), ("H32 4096x32 cu", 1, None, 32, [32] * 4096),
            ("H8 1024x64 cu", 1, None, 8, [64] * 1024), ("H96 256x64 cu", 1, None, 96, [64] * 256)]
CASES = [("fixed B=3 T=16 H=2", 3, 16, 2, None), ("fixed B=2 T=5 H=3", 2, 5, 3, None),
         ("fixed B=1 T=1 H=1", 1, 1, 1, None), ("fixed B=4 T=13 H=8", 4, 13, 8, None),
         ("fixed B=3 T=11 H=2 HV=6 (GVA)", 3, 11, (2, 6), None),
         ("varlen [1,0,16,7,16,3] H=4", 1, None, 4, [1, 0, 16, 7, 16, 3]),
         ("varlen [0,9,16,1,0] H=1 HV=4 (GVA)", 1, None, (1, 4), [0, 9, 16, 1, 0]),
         ("varlen 500x[0..16] H=2", 1, None, 2, "ragged")]
SHAPES = [("H32 8192x16 cu", 1, None, 32, [16] * 8192), ("H32 8192x16", 8192, 16, 32, None),
          ("H32 ragged 8192x[0..16] cu", 1, None, 32, "ragged"), ("H8 4096x16 cu", 1, None, 8, [16] * 4096),
          ("H96 1024x16 cu", 1, None, 96, [16] * 1024)]


def lens_of(lens, seed, n=500, most=16):
    if lens != "ragged":
        return lens
    return torch.randint(0, most + 1, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def main():
    import argparse
    from triton.testing import do_bench
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=1, choices=[1, 2, 4],
                    help="1: the released short form; 2 or 4: the pairwise form (JIT)")
    ap.add_argument("--ncu", action="store_true",
                    help="only the pairwise form (released, then each of SHORT_VARIANTS) at H32 2048x64 cu, no "
                         "state (SHORT_NCU_HT=1: the final state), each once inside the CUDA profiler's range "
                         "(ncu --profile-from-start off)")
    a = ap.parse_args()
    n = a.chunks
    if a.ncu:
        # SHORT_NCU_HT=1: the builds with the final state
        d = k1_round.inputs(1, 2048 * 64, 32, [64] * 2048, seed=7)
        variants = [v for v in os.environ.get("SHORT_VARIANTS", "ib").split(",") if v]
        ht = os.environ.get("SHORT_NCU_HT", "0") == "1"
        k1_round.profiled(run_short(d, ht, 4)[0], *(run_short(d, ht, 4, v)[0] for v in variants))
        return
    cases, shapes = (CASES, SHAPES) if n == 1 else (CASES_N, SHAPES_N)
    # SHORT_SHAPES="label;label": only those timing shapes (a short device call)
    only = [x for x in os.environ.get("SHORT_SHAPES", "").split(";") if x]
    shapes = [s for s in shapes if not only or s[0] in only]
    most = 16 * n
    worst = [0.0, 0.0]
    variants = [v for v in os.environ.get("SHORT_VARIANTS", "t64,ib").split(",") if v] if n == 4 else []
    checked = [v for v in os.environ.get("SHORT_CHECK", "ib").split(",") if v] if n == 4 else []
    # SHORT_PREFILL=0: no kda_prefill beside the rows (its released builds refuse to run while the
    # manifest is stale; the variants and the released form here are JIT builds)
    with_prefill = os.environ.get("SHORT_PREFILL", "1") != "0"
    worst_v = {v: [0.0, 0.0] for v in checked}
    for ht in (False, True):
        for i, (label, B, T, H, lens) in enumerate(cases):
            lens = lens_of(lens, i, 300 if n > 1 else 500, most)
            lens = None if lens is None else [min(x, most) for x in lens]
            T = None if T is None else min(T, most)
            H, HV = H if isinstance(H, tuple) else (H, H)
            d = k1_round.inputs(B, sum(lens) if lens else T, H, lens, seed=100 + i, HV=HV)
            go, o, h = run_short(d, ht, n)
            go()
            torch.cuda.synchronize()
            ref, ref_h = kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"],
                                       dt_bias=d["dt_bias"], lower_bound=-5.0, cu_seqlens=d["cu"],
                                       output_final_state=ht)
            errs = [rel_err(o.double(), ref)] + ([rel_err(h.double(), ref_h)] if ht else [])
            for j, e in enumerate(errs):
                worst[j] = max(worst[j], e) if e == e else float("nan")
            print(json.dumps(dict(case=label, ht=ht, err_o=errs[0], err_ht=errs[1] if ht else None,
                                  nan=int(torch.isnan(o).sum()) + (int(torch.isnan(h).sum()) if ht else 0))),
                  flush=True)
            for v in checked:
                go, o, h = run_short(d, ht, n, v)
                go()
                torch.cuda.synchronize()
                errs = [rel_err(o.double(), ref)] + ([rel_err(h.double(), ref_h)] if ht else [])
                for j, e in enumerate(errs):
                    worst_v[v][j] = max(worst_v[v][j], e) if e == e else float("nan")
                print(json.dumps(dict(case=label, form=v, ht=ht, err_o=errs[0], err_ht=errs[1] if ht else None,
                                      nan=int(torch.isnan(o).sum()) + (int(torch.isnan(h).sum()) if ht else 0))),
                      flush=True)
    print(f"correctness: worst err_o {worst[0]:.2e}, worst err_ht {worst[1]:.2e}", flush=True)
    for v, w in worst_v.items():
        print(f"correctness {v}: worst err_o {w[0]:.2e}, worst err_ht {w[1]:.2e}", flush=True)
    rows = []
    for label, B, T, H, lens in shapes:
        lens = lens_of(lens, 7, 8192 if n == 1 else 2048, most)
        if max(lens or [T]) > most:
            continue
        d = k1_round.inputs(B, sum(lens) if lens else T, H, lens, seed=7)
        for ht in (False, True):
            go, o, h = run_short(d, ht, n)
            base = prefill(d, ht) if with_prefill else None
            with torch.inference_mode():
                go()
                o_pre, h_pre = base() if base else (None, None)
                torch.cuda.synchronize()
                row = dict(shape=label, ht=ht, agree=rel_err(o.double(), o_pre.double()) if base else None,
                           agree_ht=rel_err(h.double(), h_pre.double()) if ht and base else None,
                           nan=int(torch.isnan(o).sum()) + (int(torch.isnan(h).sum()) if ht else 0))
                row["short ms"] = do_bench(go, warmup=10, rep=100, return_mode="median")
                if base:
                    row["kda_prefill ms"] = do_bench(base, warmup=10, rep=100, return_mode="median")
                if not ht:
                    k1, _ = k1_round.run_k1(k1_round.RELEASED, d)
                    row["K1 alone ms"] = do_bench(k1, warmup=10, rep=100, return_mode="median")
                for v in variants:
                    go_v, o_v, h_v = run_short(d, ht, n, v)
                    go_v()
                    torch.cuda.synchronize()
                    row[f"{v} agree"] = max(rel_err(o_v.double(), o.double()),
                                            rel_err(h_v.double(), h.double()) if ht else 0.0)
                    row[f"{v} ms"] = do_bench(go_v, warmup=10, rep=100, return_mode="median")
                    del o_v, h_v
            moved = sum(d[n].numel() * d[n].element_size() for n in ("q", "k", "v", "g", "beta")) + o.numel() * 2
            moved += h.numel() * 4 if ht else 0
            row["floor ms"] = moved / 4.27e12 * 1e3
            rows.append(row)
            print(json.dumps(row), flush=True)
            del o, h, o_pre, h_pre
    print(f"{'shape':30s} {'state':>5s} {'short ms':>9s} {'kda_prefill':>11s} {'ratio':>6s} {'K1 alone':>8s} "
          f"{'floor':>6s} {'agree':>8s}" + "".join(f" {v:>7s} {v + ' agr':>9s}" for v in variants))
    for r in rows:
        k1 = f"{r['K1 alone ms']:8.3f}" if "K1 alone ms" in r else f"{'-':>8s}"
        vs = "".join(f" {r[v + ' ms']:7.3f} {r[v + ' agree']:9.1e}" for v in variants)
        if "kda_prefill ms" in r:
            pre = f"{r['kda_prefill ms']:11.3f} {r['short ms'] / r['kda_prefill ms']:6.3f}"
            agree = f"{r['agree']:8.1e}"
        else:
            pre, agree = f"{'-':>11s} {'-':>6s}", f"{'-':>8s}"
        print(f"{r['shape']:30s} {'ht' if r['ht'] else '-':>5s} {r['short ms']:9.3f} {pre} {k1} {r['floor ms']:6.3f} "
              f"{agree}{vs}")


if __name__ == "__main__":
    main()
