"""Device round for the fused kernel (kda_kernels/fused.py), through TileLang's own launcher.

    python bench/fused_round.py correctness   # fresh random inputs vs the float64 recurrence, poisoned outputs
    python bench/fused_round.py timing        # the bench shapes, probes (chain only, producer only)
    python bench/fused_round.py peers         # peers' call modes at H96 1x8192, each against float64
    python bench/fused_round.py pairs         # producer_form "pairs" vs "lanes" vs kda_prefill (issue 13)

Rows stream to $OUT/fused_<part>.jsonl; a short table is printed last.
"""
import concurrent.futures as cf
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("FLA_FLASH_KDA", "0")

OUT = Path(os.environ.get("OUT") or Path(__file__).parent / "results")
T_START = time.perf_counter()
BUDGET_S = float(os.environ.get("CORRECTNESS_BUDGET_S", "150"))
TARGET = {"kind": "cuda", "arch": "sm_90a"}
LB = -5.0

VARIANTS = {
    "fixed": dict(),
    "fixed_h0f32_ht": dict(initial_state="float32", final_state=True),
    "fixed_h0bf16_ht": dict(initial_state="bfloat16", final_state=True),
    "fixed_ht": dict(final_state=True),
    "fixed_h0f32": dict(initial_state="float32"),
    "varlen": dict(varlen=True),
    "varlen_h0f32_ht": dict(varlen=True, initial_state="float32", final_state=True),
    "varlen_h0bf16_ht": dict(varlen=True, initial_state="bfloat16", final_state=True),
    "fixed_fast": dict(fast_math=True),
    "varlen_h0f32_ht_fast": dict(varlen=True, initial_state="float32", final_state=True, fast_math=True),
    "probe_chain": dict(varlen=True, initial_state="float32", final_state=True, probe="chain"),
    "probe_producer": dict(varlen=True, initial_state="float32", final_state=True, probe="producer"),
    "p1_varlen_h0f32_ht": dict(varlen=True, initial_state="float32", final_state=True, producers=1),
    "p1_fixed_h0bf16_ht": dict(initial_state="bfloat16", final_state=True, producers=1),
    "p1_probe_producer": dict(varlen=True, initial_state="float32", final_state=True, probe="producer", producers=1),
}
# "pairs_" names take K1's per-element form (FusedConfig.producer_form), the others session 3's
for _n in ("fixed", "fixed_h0f32_ht", "fixed_h0bf16_ht", "varlen", "varlen_h0f32_ht", "varlen_h0bf16_ht",
           "varlen_h0f32_ht_fast", "probe_producer"):
    VARIANTS["pairs_" + _n] = dict(VARIANTS[_n], producer_form="pairs")
VARIANTS["pairs_probe_chain"] = dict(VARIANTS["probe_chain"], producer_form="pairs")   # the pairs register split
VARIANTS["pairs_p1_varlen_h0f32_ht"] = dict(VARIANTS["p1_varlen_h0f32_ht"], producer_form="pairs")
VARIANTS["pairs_p1_probe_producer"] = dict(VARIANTS["p1_probe_producer"], producer_form="pairs")
STAGES = ("norm", "column", "lm", "inverse", "wu")
for _np in (1, 2):
    for _st in STAGES:
        VARIANTS[f"p{_np}_producer_no_{_st}"] = dict(varlen=True, initial_state="float32", final_state=True,
                                                    probe=f"producer-no_{_st}", producers=_np)
        VARIANTS[f"pairs_p{_np}_producer_no_{_st}"] = dict(VARIANTS[f"p{_np}_producer_no_{_st}"],
                                                          producer_form="pairs")
# The FlashQLA-style cut (bench/NOTES.md, sessions 25 and 26): K1 would write only Ab and Mqk, and
# the producer would rebuild kd, qd, kr, gC and Wk beside the chain. Its producer is this one
# without the L / Mqk product and the inverse; "cut" runs the chain as well (on whatever Ab and
# Mqk hold: timing only, never checked).
VARIANTS["pairs_p2_producer_cut"] = dict(varlen=True, initial_state="float32", final_state=True,
                                         probe="producer-no_lm-no_inverse", producer_form="pairs")
VARIANTS["pairs_p2_cut"] = dict(varlen=True, initial_state="float32", final_state=True,
                                probe="cut-no_lm-no_inverse", producer_form="pairs")
CUT_NAMES = ("pairs_varlen_h0f32_ht", "pairs_probe_chain", "pairs_probe_producer", "pairs_p2_producer_cut",
             "pairs_p2_cut")
for _name, _cfg in VARIANTS.items():
    _cfg.setdefault("producer_form", "pairs" if _name.startswith("pairs_") else "lanes")


def _compile(name):
    import tilelang
    from kda_kernels.fused import FusedConfig, build_fused
    t0 = time.perf_counter()
    tilelang.compile(build_fused(FusedConfig(**VARIANTS[name])), target=TARGET, out_idx=None)
    return name, time.perf_counter() - t0


_KERNELS = {}


def kernel(name):
    if name not in _KERNELS:
        import tilelang
        from kda_kernels.fused import FusedConfig, build_fused
        _KERNELS[name] = tilelang.compile(build_fused(FusedConfig(**VARIANTS[name])), target=TARGET, out_idx=None)
    return _KERNELS[name]


def prewarm(names):
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(min(len(names), os.cpu_count() or 4)) as ex:
        for fut in cf.as_completed([ex.submit(_compile, n) for n in names]):
            try:
                print("compiled %s in %.1fs" % fut.result(), flush=True)
            except Exception as e:
                print("COMPILE FAILED:", type(e).__name__, str(e)[-600:], flush=True)
    print(f"prewarm {time.perf_counter() - t0:.0f}s", flush=True)


def run_fused(name, d, poison=True):
    """Calls the fused kernel on inputs dict d (kda_prefill's layouts). Returns (o, ht)."""
    import torch
    cfg = VARIANTS[name]
    q = d["q"]
    B, T, H, K = q.shape
    N = d["cu"].numel() - 1 if cfg.get("varlen") else B
    o = torch.empty_like(d["v"])
    ht = None
    if cfg.get("final_state"):
        ht = torch.empty(N, H, 128, 128, device=q.device, dtype=getattr(torch, cfg.get("initial_state") or "float32"))
    if poison:
        o.fill_(float("nan"))
        if ht is not None:
            ht.fill_(float("nan"))
    args = [d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"], d["dt_bias"]]
    if cfg.get("varlen"):
        args.append(d["cu"])
    if cfg.get("initial_state"):
        args.append(d["h0"].to(getattr(torch, cfg["initial_state"])))
    args += [d.get("lb", LB), d.get("scale", 128 ** -0.5), o]
    if ht is not None:
        args.append(ht)
    check_args(name, args)
    kernel(name)(*args)
    return o, ht


_SIGS = {}


def check_args(name, args):
    """The call matches the kernel's parameters in count, dtype and rank (runs on the CPU too)."""
    import torch
    if name not in _SIGS:
        from kda_kernels.fused import FusedConfig, build_fused
        f = build_fused(FusedConfig(**VARIANTS[name]))
        _SIGS[name] = [(f.buffer_map[p].name, str(f.buffer_map[p].dtype), len(f.buffer_map[p].shape))
                       if p in f.buffer_map else (p.name, str(p.dtype), None) for p in f.params]
    sig = _SIGS[name]
    if len(sig) != len(args):
        raise TypeError(f"{name}: {len(args)} arguments for parameters {[s[0] for s in sig]}")
    for (pname, dtype, ndim), a in zip(sig, args):
        if ndim is None:
            if isinstance(a, torch.Tensor):
                raise TypeError(f"{name}: {pname} is a scalar, got a tensor")
            continue
        if not isinstance(a, torch.Tensor) or str(a.dtype).replace("torch.", "") != dtype or a.dim() != ndim:
            raise TypeError(f"{name}: {pname} wants {dtype} rank {ndim}, got "
                            f"{getattr(a, 'dtype', type(a))} rank {getattr(a, 'dim', lambda: None)()}")


def inputs(B, T, H, lens=None, seed=0, qk_scale=(1.0, 1.0), lb=LB, g_raw=None, dt=None):
    import torch
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bf = torch.bfloat16
    N = B if lens is None else len(lens)
    d = dict(
        q=(torch.randn(B, T, H, 128, device="cuda", generator=gen) * qk_scale[0]).to(bf),
        k=(torch.randn(B, T, H, 128, device="cuda", generator=gen) * qk_scale[1]).to(bf),
        v=torch.randn(B, T, H, 128, device="cuda", generator=gen).to(bf),
        g=torch.randn(B, T, H, 128, device="cuda", generator=gen).to(bf),
        beta=torch.randn(B, T, H, device="cuda", generator=gen).to(bf),
        A_log=torch.empty(H, device="cuda").uniform_(0.0, 2.7, generator=gen),
        dt_bias=torch.randn(H, 128, device="cuda", generator=gen) * 0.5,
        h0=torch.randn(N, H, 128, 128, device="cuda", generator=gen).to(bf).float(),
        lb=lb,
    )
    if g_raw is not None:
        d["g"] = torch.full_like(d["g"], g_raw)
    if dt is not None:
        d["dt_bias"] = torch.full_like(d["dt_bias"], dt)
    lens = lens if lens is not None else [T] * B
    d["cu"] = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64, device="cuda")
    return d


def reference(d, varlen, h0_dtype):
    """float64 reference; d["h0"] holds bf16-representable values, so one reference serves both
    state dtypes. Long inputs use the chunked float64 form (equal to the recurrence to ~1e-10)."""
    from kda_kernels import reference as R
    s0 = None if h0_dtype is None else d["h0"]
    fn = R.kda_chunked if d["q"].shape[1] >= 1024 else R.kda_recurrent
    return fn(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                           lower_bound=d["lb"], initial_state=s0, output_final_state=True,
                           cu_seqlens=d["cu"] if varlen else None)


def smoke():
    correctness(smoke=True)


def correctness(smoke=False, only=None):
    import torch
    from kda_kernels.reference import rel_err
    cases = []  # (label, B, T, H, lens, kwargs)
    if smoke:
        cases = [("smoke fixed B=2 T=40 H=2", 2, 40, 2, None, {}), ("smoke varlen [17,0,30] H=2", 1, 47, 2, [17, 0, 30], {})]
    for B, T, H in [] if smoke else [(1, 1, 1), (1, 15, 2), (1, 16, 1), (1, 17, 4), (2, 100, 3), (1, 1000, 8), (3, 257, 5),
                    (1, 4096, 32), (1, 8192, 96)]:
        cases.append((f"fixed B={B} T={T} H={H}", B, T, H, None, {}))
    for lens, H in [] if smoke else [([1, 0, 16, 1, 33], 4), ([0, 5, 0], 2), ([15, 1, 17, 0], 3), ([17, 33, 65], 4),
                    ([1300, 547, 2048, 963, 271, 3063], 8), ([64] * 300, 2)]:
        cases.append((f"varlen {lens[:6]}{'...' if len(lens) > 6 else ''} n={len(lens)} H={H}", 1, sum(lens), H, lens, {}))
    if not smoke:
        cases.append(("fixed lb=-0.01 T=517 H=4", 1, 517, 4, None, dict(lb=-0.01)))
        cases.append(("fixed lb=-1 T=517 H=4", 1, 517, 4, None, dict(lb=-1.0)))
        cases.append(("q*1e-3 k*1e3 T=777", 1, 777, 4, None, dict(qk_scale=(1e-3, 1e3))))
        cases.append(("q*1e3 k*1e-3 T=777", 1, 777, 4, None, dict(qk_scale=(1e3, 1e-3))))
        for gv in (8.0, -8.0):
            for dv in (8.0, -8.0):
                cases.append((f"adversarial g={gv} dt={dv}", 1, 1000, 4, None, dict(g_raw=gv, dt=dv)))
    rows = []
    for i, (label, B, T, H, lens, kw) in enumerate(cases):
        d = inputs(B, T, H, lens=lens, seed=1000 + i, **kw)
        varlen = lens is not None
        refs = {}
        t_case = time.perf_counter()
        names = ([n for n in VARIANTS if "varlen" in n and "probe" not in n] if varlen else
                 [n for n in VARIANTS if "fixed" in n])
        if only is not None:
            names = [n for n in names if n in only]
        for name in names:
            cfg = VARIANTS[name]
            h0 = cfg.get("initial_state") is not None
            try:
                o, ht = run_fused(name, d)
                torch.cuda.synchronize()
                if h0 not in refs:
                    refs[h0] = reference(d, varlen, "float32" if h0 else None)
                o_ref, ht_ref = refs[h0]
                row = dict(case=label, variant=name, err_o=rel_err(o, o_ref),
                           err_ht=None if ht is None else rel_err(ht, ht_ref),
                           nan=bool(torch.isnan(o).any()) or (ht is not None and bool(torch.isnan(ht).any())))
            except Exception as e:
                row = dict(case=label, variant=name, error=f"{type(e).__name__}: {str(e)[:300]}")
            rows.append(row)
            with open(OUT / "fused_correctness.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
        print(f"{label}: {time.perf_counter() - t_case:.1f}s", flush=True)
        if len(rows) >= 6 and all(r.get("error") for r in rows):
            print("every run so far failed: stopping", rows[0]["error"], flush=True)
            break
        if time.perf_counter() - T_START > BUDGET_S:
            print("correctness budget spent: stopping", flush=True)
            break
    bad = [r for r in rows if r.get("error") or r.get("nan") or not (r["err_o"] <= 5e-3) or
           (r["err_ht"] is not None and not r["err_ht"] <= 5e-3)]
    worst_o = max(((r.get("err_o") or 0) for r in rows if not r.get("error")), default=float("nan"))
    worst_h = max(((r.get("err_ht") or 0) for r in rows if not r.get("error")), default=float("nan"))
    for r in bad[:40]:
        print("BAD", json.dumps(r))
    if smoke:
        for r in rows:
            print("SMOKE", json.dumps(r))
    print(f"correctness: {len(rows)} runs, {len(bad)} bad, worst err_o {worst_o:.3e}, worst err_ht {worst_h:.3e}")


def timing():
    import torch
    from triton.testing import do_bench
    from bench_peers import SHAPES, label
    rows = []
    for i, (H, lens, *_) in enumerate(SHAPES):
        d = inputs(1, sum(lens), H, lens=lens, seed=100 + i)
        row = dict(shape=label(H, lens))
        names = ["varlen_h0f32_ht", "varlen_h0f32_ht_fast", "probe_chain", "probe_producer", "p1_varlen_h0f32_ht",
                 "p1_probe_producer"]
        if len(set(lens)) == 1:
            names.append("fixed_h0f32_ht")
            df = dict(d)
            for key in ("q", "k", "v", "g"):
                df[key] = d[key].reshape(len(lens), lens[0], H, 128)
            df["beta"] = d["beta"].reshape(len(lens), lens[0], H)
        for name in names:
            dd = df if name.startswith("fixed") else d
            try:
                with torch.inference_mode():
                    row[name + "_ms"] = do_bench(lambda: run_fused(name, dd, poison=False), warmup=10, rep=100,
                                                 return_mode="median")
            except Exception as e:
                row[name + "_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        nch = max(-(-n // 16) for n in lens)
        if row.get("probe_chain_ms"):
            row["chain_us_per_chunk"] = row["probe_chain_ms"] * 1e3 / nch
        if row.get("probe_producer_ms"):
            row["producer_us_per_chunk"] = row["probe_producer_ms"] * 1e3 / nch
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(OUT / "fused_timing.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        del d
        torch.cuda.empty_cache()
    cols = ("varlen_h0f32_ht_ms", "fixed_h0f32_ht_ms", "varlen_h0f32_ht_fast_ms", "probe_chain_ms",
            "probe_producer_ms", "p1_varlen_h0f32_ht_ms", "p1_probe_producer_ms")
    print(f"{'shape':36s} " + " ".join(f"{c.replace('_ms', '')[-10:]:>10s}" for c in cols))
    for r in rows:
        print(f"{r['shape']:36s} " + " ".join(f"{r.get(k, float('nan')):10.3f}" for k in cols))


PAIRS_TIMED = ["varlen_h0f32_ht", "pairs_varlen_h0f32_ht", "pairs_varlen_h0f32_ht_fast", "probe_producer",
               "pairs_probe_producer", "probe_chain", "pairs_probe_chain", "pairs_p1_varlen_h0f32_ht",
               "pairs_p1_probe_producer"]
PAIRS_ATTRIB = [f"pairs_p2_producer_no_{st}" for st in STAGES]   # the first shape only


def pairs():
    """The producer's two per-element forms against each other and against the released two-kernel
    path (kda_prefill, fp32 state in and out, cu_seqlens), same process, same inputs: first
    correctness of every pairs variant (fresh random inputs, float64 reference, poisoned
    outputs), then medians at $FUSED_SHAPES (default: H96 1x8192, H64 1x8192, H96 8x1024)."""
    import torch
    from triton.testing import do_bench
    from bench_peers import SHAPES, label
    from kda_kernels.reference import rel_err
    import kda_tile
    if not os.environ.get("FUSED_NO_MATRIX"):   # the timed rows still check o against kda_prefill's
        correctness(only={n for n in VARIANTS if n.startswith("pairs_") and "probe" not in n} | {"varlen_h0f32_ht"})
    want = [x for x in os.environ.get("FUSED_SHAPES", "H96 1x8192;H64 1x8192;H96 8x1024").split(";") if x]
    rows = []
    for i, (H, lens, *_) in enumerate(SHAPES):
        if label(H, lens) not in want:
            continue
        d = inputs(1, sum(lens), H, lens=lens, seed=100 + i)
        row = dict(shape=label(H, lens))
        with torch.inference_mode():
            def prefill():
                return kda_tile.kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"],
                                            dt_bias=d["dt_bias"], lower_bound=LB, initial_state=d["h0"],
                                            output_final_state=True, cu_seqlens=d["cu"])
            o2, h2 = prefill()
            for name in PAIRS_TIMED + (PAIRS_ATTRIB if not rows else []):
                try:
                    if "probe" not in name and "_no_" not in name:
                        o, ht = run_fused(name, d)
                        row[name + "_vs_prefill"] = [rel_err(o, o2), rel_err(ht, h2)]
                    row[name + "_ms"] = do_bench(lambda: run_fused(name, d, poison=False), warmup=10, rep=100,
                                                 return_mode="median")
                except Exception as e:
                    row[name + "_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            row["prefill_ms"] = do_bench(prefill, warmup=10, rep=100, return_mode="median")
        nch = max(-(-n // 16) for n in lens)
        for name in ("probe_producer", "pairs_probe_producer", "probe_chain", "pairs_probe_chain", "pairs_p1_probe_producer",
                     *PAIRS_ATTRIB):
            if row.get(name + "_ms"):
                row[name + "_us_per_chunk"] = row[name + "_ms"] * 1e3 / nch
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(OUT / "fused_pairs_timing.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        del d
        torch.cuda.empty_cache()
    cols = ["prefill"] + PAIRS_TIMED
    for r in rows:
        print(f"{r['shape']}: " + ", ".join(f"{c} {r.get(c + '_ms', float('nan')):.3f}" for c in cols))
    if rows:
        print(f"{rows[0]['shape']} pairs producer-only without one stage (ms): "
              + ", ".join(f"{c[-9:]} {rows[0].get(c + '_ms', float('nan')):.3f}" for c in PAIRS_ATTRIB))


def peers():
    """Each peer's call modes at H96 1x8192 (and H8 1x8192 for float64 errors): which mode is fastest,
    and what each mode computes against the float64 recurrence."""
    import torch
    from triton.testing import do_bench
    from kda_kernels.reference import rel_err
    rows = []
    for H, T in [(8, 8192), (96, 8192)]:
        d = inputs(1, T, H, seed=7)
        ref = reference(d, True, "float32") if H == 8 else None
        un = dict(d)
        for key in ("q", "k"):
            x = d[key].float()
            un[key] = (x / x.norm(dim=-1, keepdim=True)).to(torch.bfloat16)
        modes = []
        for qk in ("raw", "unit"):
            dd = d if qk == "raw" else un
            for im in (True, False):
                for cu in ("int32", "int64"):
                    for bi in (False, True):
                        modes.append(("cudnn", dict(qk=qk, inference=im, cu=cu, batch_invariant=bi), dd))
                for cu in ("none", "int64"):
                    modes.append(("fla", dict(qk=qk, inference=im, cu=cu), dd))
        for peer, mode, dd in modes:
            row = dict(H=H, T=T, peer=peer, **mode)
            try:
                fn = _peer_fn(peer, mode, dd)
                ctx = torch.inference_mode() if mode["inference"] else torch.no_grad()
                with ctx:
                    o, ht = fn()
                    torch.cuda.synchronize()
                    if ref is not None and mode["qk"] == "raw":
                        row["err_o_f64"] = rel_err(o.reshape(ref[0].shape), ref[0])
                        row["err_ht_f64"] = rel_err(ht.reshape(ref[1].shape).float(), ref[1])
                    row["ms"] = do_bench(fn, warmup=10, rep=100, return_mode="median")
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(OUT / "fused_peers.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
        if ref is not None:
            for name in ("varlen_h0f32_ht", "varlen_h0f32_ht_fast"):
                o, ht = run_fused(name, d)
                torch.cuda.synchronize()
                row = dict(H=H, T=T, peer="fused:" + name, err_o_f64=rel_err(o, ref[0]), err_ht_f64=rel_err(ht, ref[1]))
                rows.append(row)
                print(json.dumps(row), flush=True)
    for r in rows:
        print(f"H{r['H']} {r['peer']:28s} {str({k: r.get(k) for k in ('qk', 'inference', 'cu', 'batch_invariant') if k in r}):70s} "
              f"ms={r.get('ms', float('nan')):.3f} eo={r.get('err_o_f64', float('nan')):.2e} "
              f"{r.get('error', '')[:60]}")


NCU_NAMES = tuple(x for x in os.environ.get("FUSED_NCU", "probe_producer,p1_probe_producer").split(",") if x)


def attrib():
    """Producer time with one stage left out, at two shapes: attributes the producer's time per chunk."""
    import torch
    from triton.testing import do_bench
    rows = []
    for H, lens in [(96, [8192]), (96, [1024] * 8)]:
        d = inputs(1, sum(lens), H, lens=lens, seed=3)
        nch = max(-(-n // 16) for n in lens)
        for np_ in (1, 2):
            base = "probe_producer" if np_ == 2 else "p1_probe_producer"
            row = dict(shape=f"H{H} {len(lens)}x{lens[0]}", producers=np_)
            for name in [base] + [f"p{np_}_producer_no_{st}" for st in STAGES]:
                ms = do_bench(lambda: run_fused(name, d, poison=False), warmup=10, rep=100, return_mode="median")
                row[name.split("producer")[-1] or "all"] = round(ms * 1e3 / nch, 3)  # us per chunk
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(OUT / "fused_attrib.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
    print("producer us/chunk with one stage left out")
    for row in rows:
        print(row)


def cut():
    """The FlashQLA-style cut's fused kernel, timed before it is built: us per 16-token chunk of the
    whole pairs kernel, its chain alone, its producer alone, and both with the producer cut to what
    the chain kernel would still do (no L / Mqk product, no inverse; Ab and Mqk's loads not
    counted). The cut pays only if its producer comes in under the chain's step."""
    import torch
    from triton.testing import do_bench
    rows = []
    for H, lens in [(96, [8192]), (64, [1024] * 8), (32, [512] * 64)]:
        d = inputs(1, sum(lens), H, lens=lens, seed=11)
        nch = max(-(-n // 16) for n in lens)
        row = dict(shape=f"H{H} {len(lens)}x{lens[0]}")
        for name in CUT_NAMES:
            with torch.inference_mode():
                ms = do_bench(lambda: run_fused(name, d, poison=False), warmup=10, rep=100, return_mode="median")
            row[name + "_ms"] = round(ms, 4)
            row[name + "_us_per_chunk"] = round(ms * 1e3 / nch, 3)
        rows.append(row)
        print(json.dumps(row), flush=True)
    (OUT / "fused_cut.json").write_text(json.dumps(rows, indent=1))
    print(f"{'shape':12s} " + " ".join(f"{n.replace('pairs_', ''):>16s}" for n in CUT_NAMES) + "   (ms)")
    for r in rows:
        print(f"{r['shape']:12s} " + " ".join(f"{r[n + '_ms']:16.3f}" for n in CUT_NAMES))


def ncu():
    """One profiled call of each new kernel at H96 1x8192 (run under ncu --profile-from-start off)."""
    import torch
    d = inputs(1, 8192, 96, lens=[8192], seed=5)
    for name in NCU_NAMES:
        run_fused(name, d, poison=False)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for name in NCU_NAMES:
        run_fused(name, d, poison=False)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def _peer_fn(peer, mode, d):
    import torch
    if peer == "cudnn":
        import cudnn.linear_attention as cla
        cu = d["cu"].to(torch.int32 if mode["cu"] == "int32" else torch.int64)
        return lambda: cla.kimi_delta_attention(
            d["q"][0], d["k"][0], d["v"][0], d["g"][0], d["beta"][0], cu, scale=128 ** -0.5,
            initial_state=d["h0"], output_final_state=True, use_qk_l2norm_in_kernel=True,
            use_beta_sigmoid_in_kernel=True, safe_gate=True, gate_lower_bound=LB, a_log=d["A_log"],
            dt_bias=d["dt_bias"], batch_invariant=mode["batch_invariant"])
    from fla.ops.kda import chunk_kda
    cu = None if mode["cu"] == "none" else d["cu"]
    return lambda: chunk_kda(q=d["q"], k=d["k"], v=d["v"], g=d["g"], beta=d["beta"], scale=128 ** -0.5,
                             initial_state=d["h0"], output_final_state=True, use_gate_in_kernel=True,
                             use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True, safe_gate=True,
                             A_log=d["A_log"], dt_bias=d["dt_bias"], lower_bound=LB, state_v_first=True,
                             cu_seqlens=cu)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    parts = sys.argv[1:] or ["correctness", "timing"]
    if "prewarm" in parts:
        prewarm(sorted(VARIANTS))
        parts.remove("prewarm")
    need = set()
    if "correctness" in parts or "smoke" in parts:
        need |= {n for n in VARIANTS if "probe" not in n}
    if "timing" in parts:
        need |= {"varlen_h0f32_ht", "varlen_h0f32_ht_fast", "probe_chain", "probe_producer", "fixed_h0f32_ht",
                 "p1_varlen_h0f32_ht", "p1_probe_producer"}
    if "pairs" in parts:
        need |= set(PAIRS_TIMED) | set(PAIRS_ATTRIB) | {n for n in VARIANTS if n.startswith("pairs_") and "_no_" not in n}
    if "peers" in parts:
        need |= {"varlen_h0f32_ht", "varlen_h0f32_ht_fast"}
    if "attrib" in parts:
        need |= {"probe_producer", "p1_probe_producer"} | {n for n in VARIANTS if "_no_" in n}
    if "ncu" in parts:
        need |= set(NCU_NAMES)
    if "cut" in parts:
        need |= set(CUT_NAMES)
    prewarm(sorted(need))
    for p in parts:
        t0 = time.perf_counter()
        globals()[p]()
        print(f"[{p} took {time.perf_counter() - t0:.0f}s]", flush=True)


if __name__ == "__main__":
    main()
