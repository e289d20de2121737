"""K1 variants (kda_kernels/k1_prepare.py knobs) on the GPU, through TileLang's own JIT.

    python bench/k1_round.py [variant ...]     # variant: chunks_per_cta,threads,min_blocks[,fast][,noftz][,holes][,mqk=k|qk][,diag][,ds][,u0k2][,ch32][,rnr][,tu][,ir][,ib][,nl=N][,ho][,el][,lp][,sg][,p=PROBE]

ch32 (K1Config.chunk = 32): 32-token chunks (one a program, 128 threads); its K2 takes chunk 32.
rnr (K1Config.rsqrt_nr): the row norms' 1/sqrt as rsqrt.approx and one Newton step.
tu, ir (K1Config.tail_unswitch, inv_rows; 32-token builds): the gate's tail mask in a branch; the
inverse's off-diagonal products from row vectors, two columns a thread. ib (K1Config.inv_blocks): the 16-row diagonal blocks' inverses from 8-row
blocks. nl=N (K1Config.norm_lanes): the
row norms over N lanes a row (4: one pass at 32 and at 16 tokens), not sixteen. ho (K1Config.head_once):
GVA's q/k head divided once a program. el (K1Config.early_loads): A_log and dt_bias loaded
first, beta behind the q, k, g copies. lp (K1Config.lean_prologue): the copies' rows from the slot
search's registers, GVA's division only where HV != H. sg (K1Config.slot_guess): the slot
search's first step at the sequence a batch of equal lengths would give. w=N (K1Config.ws_chunks,
fixed 32-token builds only; varlen builds of the spec take 1): N chunk slots a program, the next
chunk's copies issued behind this chunk's [L; Mqk] product.

holes (K1Config.skip_holes, varlen builds only): a program whose slot holds no chunk returns first.
mqk=k|qk (K1Config.mqk_split): Mqk from bf16 hi + lo operands. diag (K1Config.mqk_diag): Mqk's
diagonal from an fp32 dot of the raw rows. u0k2 (K1Config.u0_in_k2): K1 writes Ab in place of U0
and reads no v; the K2 it feeds then forms U0 = Ab v (K2Config.u0_in_k2).

p=PROBE (K1Config.probe, e.g. p=colstore+ab) leaves parts of the kernel out: timed, but it fails
the check by construction.

For each variant, first correctness: its workspace feeds the released K2 build and o is checked
against the float64 reference on fresh random inputs (fixed and varlen, with empty, one-token and
tail sequences), every output poisoned with NaN first; then the workspace is compared with the
released K1's on the timing shapes. Then K1 time (triton do_bench median) at H96 1x8192, H8
1x65536 and H32 2048x64 (cu_seqlens), and the bytes K1 must move at 4.27 TB/s.
One JSON row per variant and shape, a table last.
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kda_kernels import registry  # noqa: E402
from kda_kernels.configs import K1Config, K2Config  # noqa: E402
from kda_tile import _launch  # noqa: E402
from kda_kernels.reference import kda_recurrent, rel_err  # noqa: E402

TARGET = {"kind": "cuda", "arch": "sm_90a"}
C = 16
RELEASED = "1,64,12,holes,diag,ds,u0k2,rnr,el,lp,sg"  # the registry's K1 (holes, ds, sg: varlen builds only)
RELEASED_CH32 = "1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp,sg,nl=4,ib"  # the registry's accurate 32-token K1
PRE_DIET_CH32 = "1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp,sg"  # ... before session 47 (no nl=4, ib)
DEFAULT = [RELEASED, "1,64,10", "2,128,5", "1,64,12,fast"]
_K = {}


def k1_config(spec, varlen, fast=False):
    cpb, th, mb, *rest = spec.split(",")
    probe = [r[2:] for r in rest if r.startswith("p=")]
    return K1Config(varlen=varlen, fast_math=fast or "fast" in rest, chunks_per_cta=int(cpb), threads=int(th),
                    min_blocks=int(mb), ftz="noftz" not in rest, probe=probe[0] if probe else "",
                    skip_holes=varlen and "holes" in rest,
                    mqk_split=next((r[4:] for r in rest if r.startswith("mqk=")), ""), mqk_diag="diag" in rest,
                    dyn_search=varlen and "ds" in rest, u0_in_k2="u0k2" in rest, ab_halves="abh" in rest,
                    chunk=32 if "ch32" in rest else C, rsqrt_nr="rnr" in rest,
                    tail_unswitch="tu" in rest, inv_rows="ir" in rest, inv_blocks="ib" in rest,
                    norm_lanes=next((int(r[3:]) for r in rest if r.startswith("nl=")), 0),
                    head_once="ho" in rest, early_loads="el" in rest,
                    lean_prologue="lp" in rest, slot_guess=varlen and "sg" in rest,
                    ws_chunks=1 if varlen else next((int(r[2:]) for r in rest if r.startswith("w=")), 1))


def args_for(cfg, named):
    """The arguments of config cfg's kernel (K1 or full-mode K2), taken by parameter name."""
    build = registry.Build("k1" if isinstance(cfg, K1Config) else "k2", cfg)
    return [named[n] for n in _launch.param_names(build)]


def compiled(cfg):
    if cfg not in _K:
        import tilelang
        if isinstance(cfg, K1Config):
            from kda_kernels.k1_prepare import build_k1 as build
        elif type(cfg).__name__ == "ScanConfig":
            from kda_kernels.k2_scan import build_scan as build
        else:
            from kda_kernels.k2_recurrence import build_k2 as build
        _K[cfg] = tilelang.compile(build(cfg), target=TARGET, pass_configs=cfg.pass_configs())
    return _K[cfg]


def inputs(B, T, H, lens, seed, HV=None):
    """Random inputs; HV value heads (GVA: HV / H of them share a q, k head), H without it."""
    HV = HV or H
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bf = torch.bfloat16
    rn = lambda *s: torch.randn(*s, generator=gen, device="cuda")  # noqa: E731
    d = dict(q=rn(B, T, H, 128).to(bf), k=rn(B, T, H, 128).to(bf), v=rn(B, T, HV, 128).to(bf),
             g=rn(B, T, HV, 128).to(bf), beta=rn(B, T, HV).to(bf),
             A_log=torch.rand(HV, generator=gen, device="cuda") * 2.77, dt_bias=0.1 * rn(HV, 128))
    d["cu"] = None if lens is None else torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64,
                                                     device="cuda")
    return d


def run_k1(spec, d, fast=False):
    varlen = d["cu"] is not None
    B, T, H, _ = d["q"].shape
    cfg = k1_config(spec, varlen, fast)
    ch = cfg.chunk
    NC = _launch.workspace_slots(B, T, d["cu"].numel() - 1 if varlen else B, varlen, ch)
    ws = workspace(H, NC, "halves" if cfg.ab_halves else cfg.u0_in_k2, ch)
    args = args_for(cfg, dict(d, **ws, cu_seqlens=d["cu"], lower_bound=-5.0, scale=128 ** -0.5))
    kern = compiled(cfg)
    return (lambda: kern(*args)), ws


def workspace(H, NC, u0k2=False, ch=C):
    """K1's outputs (Wk, qd, kr, U0 or Ab, Mqk, gC) for chunks of ch tokens, NaN-poisoned."""
    f16 = torch.float16
    cols = dict(Wk=128, qd=128, kr=128, **({"Ab": ch} if u0k2 else {"U0": 128}), Mqk=ch)
    ws = {n: torch.full((H, NC * ch, w), float("nan"), device="cuda", dtype=f16) for n, w in cols.items()}
    if u0k2 == "halves":     # K1Config.ab_halves: a chunk's rows of hi, then of lo, in bf16
        ws["Ab"] = torch.full((H, 2 * NC * ch, ch), float("nan"), device="cuda", dtype=torch.bfloat16)
    ws["gC"] = torch.full((H, NC, 128), float("nan"), device="cuda")
    return ws


def run_k2(d, ws):
    varlen = d["cu"] is not None
    o = torch.full_like(d["v"], float("nan"))
    cfg = K2Config(varlen=varlen, u0_in_k2="Ab" in ws, chunk=ws["Mqk"].shape[-1])
    compiled(cfg)(*args_for(cfg, dict(ws, v=d["v"], cu_seqlens=d["cu"], o=o)))
    return o


CASES = [("fixed B=2 T=100 H=3", 2, 100, 3, None), ("fixed B=1 T=1 H=1", 1, 1, 1, None),
         ("fixed B=1 T=1000 H=8", 1, 1000, 8, None),
         ("varlen [1,0,16,1,33] H=4", 1, 51, 4, [1, 0, 16, 1, 33]),
         ("varlen [1300,547,0,963,271] H=4", 1, 3081, 4, [1300, 547, 0, 963, 271]),
         ("varlen 300x[0..40] H=2", 1, None, 2, "ragged")]


def correctness(spec, fast=False):
    worst = 0.0
    for i, (label, B, T, H, lens) in enumerate(CASES):
        if lens == "ragged":
            g = torch.Generator().manual_seed(i)
            lens = torch.randint(0, 41, (300,), generator=g).tolist()
            T = sum(lens)
        d = inputs(B, T, H, lens, seed=100 + i)
        go, ws = run_k1(spec, d, fast)
        go()
        o = run_k2(d, ws)
        torch.cuda.synchronize()
        ref, _ = kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                               lower_bound=-5.0, cu_seqlens=d["cu"])
        e = rel_err(o.double(), ref)
        worst = max(worst, e) if e == e else float("nan")
    return worst


def same_workspace(a, b):
    """max over the outputs both have of max|a - b| / max|b| on the slots both wrote; NaN where only
    one wrote (Wk compared up to its sign where one of the two is u0_in_k2's)."""
    worst = 0.0
    if a["Mqk"].shape != b["Mqk"].shape:
        return None  # another chunk size: another layout
    for n in set(a) & set(b):
        x, y = a[n].float(), b[n].float()
        if n == "Wk" and ("U0" in a) != ("U0" in b):
            x = -x
        if not torch.equal(torch.isnan(x), torch.isnan(y)):
            return float("nan")
        m = ~torch.isnan(y)
        worst = max(worst, float((x[m] - y[m]).abs().max() / y[m].abs().max().clamp_min(1e-30)))
    return worst


SHAPES = [("H96 1x8192", 1, 8192, 96, None), ("H96 1x8192 cu", 1, 8192, 96, [8192]),
          ("H8 1x65536 cu", 1, 65536, 8, [65536]), ("H8 1x65536", 1, 65536, 8, None),
          ("H32 2048x64 cu", 1, 131072, 32, [64] * 2048),
          ("H32 8192x16 cu", 1, 131072, 32, [16] * 8192), ("H32 256x512 cu", 1, 131072, 32, [512] * 256),
          ("H96 8x1024", 8, 1024, 96, None),
          ("H96 ragged6 cu", 1, 8192, 96, [1300, 547, 2048, 963, 271, 3063])]


def _compile_config(cfg):
    t0 = time.perf_counter()
    try:
        compiled(cfg)
        return f"compiled {cfg} in {time.perf_counter() - t0:.0f}s"
    except Exception as e:
        return f"COMPILE FAILED {cfg}: {type(e).__name__}: {str(e)[-300:]}"


def prewarm(configs):
    """Compile every config (K1Config, K2Config or ScanConfig) in worker processes first (TileLang's disk
    cache serves the main one)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    import os
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(min(len(configs), os.cpu_count() or 4), mp_context=mp.get_context("spawn")) as ex:
        for msg in ex.map(_compile_config, configs):
            print(msg, flush=True)
    print(f"prewarm {time.perf_counter() - t0:.0f}s", flush=True)


def profiled(*calls):
    """Each call once, then once more inside the CUDA profiler's range (what ncu
    --profile-from-start off records)."""
    for go in calls:
        go()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for go in calls:
        go()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def ncu(spec):
    """One K1 launch at H96 1x8192 for ncu: through cu_seqlens, or as a fixed batch where
    K1_NCU_FIXED=1."""
    fixed = os.environ.get("K1_NCU_FIXED") == "1"
    go, _ = run_k1(spec, inputs(1, 8192, 96, None if fixed else [8192], seed=7))
    profiled(go)


def main():
    from triton.testing import do_bench
    if sys.argv[1:2] == ["ncu"]:
        for spec in sys.argv[2:]:
            ncu(spec)
        return
    specs = sys.argv[1:] or DEFAULT
    # K1_SHAPES="label;label": only those of SHAPES (a short device call)
    only = [x for x in os.environ.get("K1_SHAPES", "").split(";") if x]
    shapes = [s for s in SHAPES if not only or s[0] in only]
    if specs[0] != RELEASED:
        specs = [RELEASED] + specs
    prewarm([k1_config(s, v) for s in specs for v in (False, True)]
            + [K2Config(varlen=v, u0_in_k2=u, chunk=ch) for v in (False, True)
               for u, ch in {("u0k2" in s, 32 if "ch32" in s else C) for s in specs}])
    rows = []
    base = {}
    for spec in specs:
        t0 = time.perf_counter()
        try:
            err = correctness(spec)
        except Exception as e:  # a variant that does not compile or launch
            print(json.dumps(dict(variant=spec, error=f"{type(e).__name__}: {str(e)[-300:]}")), flush=True)
            continue
        row = dict(variant=spec, err_o=err, ok=err <= 5e-3, check_s=round(time.perf_counter() - t0, 1))
        for label, B, T, H, lens in shapes:
            d = inputs(B, T, H, lens, seed=7)
            go, ws = run_k1(spec, d)
            go()
            torch.cuda.synchronize()
            # each workspace against the first spec's of its chunk size (bit-identical: 0)
            key = (label, ws["Mqk"].shape[-1])
            if key not in base:
                base[key] = {n: t.clone() for n, t in ws.items()}
            row[f"diff {label}"] = same_workspace(ws, base[key])
            row[f"{label} ms"] = do_bench(go, warmup=10, rep=100, return_mode="median")
            moved = sum(d[n].numel() * d[n].element_size() for n in ("q", "k", "v", "g", "beta")
                        if n != "v" or "U0" in ws)
            # the workspace's written slots only: hole slots (at most one a sequence) write nothing
            ch = k1_config(spec, lens is not None).chunk
            nc = _launch.workspace_slots(B, T, len(lens) if lens else B, lens is not None, ch)
            real = sum(-(-n // ch) for n in lens) if lens else B * -(-T // ch)
            moved += sum(t.numel() * t.element_size() for t in ws.values()) * real // nc
            row[f"{label} floor ms"] = moved / 4.27e12 * 1e3
            del ws, d
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{'variant':28s} {'err_o':>8s} " + " ".join(f"{s[0]:>16s}" for s in shapes))
    for r in rows:
        print(f"{r['variant']:28s} {r['err_o']:8.1e} " + " ".join(
            f"{r[s[0] + ' ms']:7.3f} ({(r['diff ' + s[0]] or 0):5.0e})" for s in shapes))
    print("floors (ms at 4.27 TB/s): " + " ".join(f"{s[0]} {rows[0][s[0] + ' floor ms']:.3f}" for s in shapes)
          if rows else "no rows")


if __name__ == "__main__":
    main()
