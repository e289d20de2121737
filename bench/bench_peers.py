"""Side-by-side forward benchmark on one GPU: kda_tile vs fla's Triton chunk_kda (FLA_FLASH_KDA=0)
vs the cuDNN frontend KDA, in one process, on the same inputs, at issue 13's shapes (SHAPES below),
with fp32 initial and final state. Every library runs in each of its legitimate call modes
(inference_mode or no_grad; cu_seqlens or a plain batch on equal lengths; cuDNN's cu_seqlens dtype
and batch_invariant); each mode's output is checked against ours first, and the fastest agreeing
mode is the library's time. The report names the mode and the peak device memory each call
allocates beyond its outputs.

    python bench/bench_peers.py [--out DIR] [--quick]

Writes DIR/<date>-<card>.json, .md and .png, <card> from the device's name (h200, h100; DIR
defaults to $OUT or bench/results). --from-rows takes the card from the rows (each names its
device), or from BENCH_DEVICE for rows written before they did.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("FLA_FLASH_KDA", "0")

import torch  # noqa: E402

SHAPES = [  # (H, sequence lengths[, HV value heads when GVA])
    (96, [8192]),
    (96, [1300, 547, 2048, 963, 271, 3063]),
    (96, [1024] * 8),
    (64, [8192]),
    (64, [1300, 547, 2048, 963, 271, 3063]),
    (64, [1024] * 8),
    (96, [1024] * 16),
    (32, [32768]),
    (8, [65536]),
    (16, [8192], 64),  # GVA: 16 q/k heads, 64 value heads
]
LOWER_BOUND = -5.0


# The state each call reads and writes (BENCH_STATE): "inout" (default: fp32 initial state in,
# final state out), "final" (no initial state, the final state out: a serving prefill of fresh
# prompts) or "none" (neither). The same for every library.
STATE = os.environ.get("BENCH_STATE", "inout")
assert STATE in ("inout", "final", "none"), f"BENCH_STATE: expected inout, final or none, got {STATE!r}"
WANT_HT = STATE != "none"


def label(H, lens, HV=None):
    heads = f"H{H}" if HV in (None, H) else f"H{H}/HV{HV}"
    if len(set(lens)) == 1:
        return f"{heads} {len(lens)}x{lens[0]}"
    return f"{heads} [{','.join(map(str, lens))}]"


def make_inputs(H, lens, seed, HV=None):
    g = torch.Generator(device="cuda").manual_seed(seed)
    T = sum(lens)
    HV = HV or H
    bf = torch.bfloat16
    d = dict(
        q=torch.randn(1, T, H, 128, device="cuda", generator=g).to(bf),
        k=torch.randn(1, T, H, 128, device="cuda", generator=g).to(bf),
        v=torch.randn(1, T, HV, 128, device="cuda", generator=g).to(bf),
        g=torch.randn(1, T, HV, 128, device="cuda", generator=g).to(bf),
        beta=torch.randn(1, T, HV, device="cuda", generator=g).to(bf),
        A_log=torch.empty(HV, device="cuda").uniform_(0.0, 2.7, generator=g),
        dt_bias=torch.randn(HV, 128, device="cuda", generator=g) * 0.5,
        h0=torch.randn(len(lens), HV, 128, 128, device="cuda", generator=g) if STATE == "inout" else None,
        cu=torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64, device="cuda"),
    )
    d["cu32"] = d["cu"].int()
    d["cu_cpu"] = d["cu"].cpu()
    return d


def _fixed(d, lens):
    """The same inputs as a [B, T, H, .] batch without cu_seqlens (only for equal lengths)."""
    B, T = len(lens), lens[0]
    f = dict(d)
    for key in ("q", "k", "v", "g"):
        f[key] = d[key].reshape(B, T, *d[key].shape[2:])
    f["beta"] = d["beta"].reshape(B, T, d["beta"].shape[-1])
    return f


def ours(d, cu=True, max_seqlen=None):
    """max_seqlen: the longest sequence, as a serving engine knows it on the host (the short form
    serves calls whose sequences all have at most 16 tokens)."""
    import kda_tile
    return kda_tile.kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                                lower_bound=LOWER_BOUND, initial_state=d["h0"], output_final_state=WANT_HT,
                                cu_seqlens=d["cu"] if cu else None, max_seqlen=max_seqlen)


def fla(d, cu=True, cu_cpu=False):
    """cu_cpu: pass fla the host copy of cu_seqlens too (cu_seqlens_cpu: its chunk indices
    without a device sync)."""
    from fla.ops.kda import chunk_kda
    return chunk_kda(q=d["q"], k=d["k"], v=d["v"], g=d["g"], beta=d["beta"], scale=128 ** -0.5,
                     initial_state=d["h0"], output_final_state=WANT_HT, use_gate_in_kernel=True,
                     use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True, safe_gate=True,
                     A_log=d["A_log"], dt_bias=d["dt_bias"], lower_bound=LOWER_BOUND, state_v_first=True,
                     cu_seqlens=d["cu"] if cu else None, cu_seqlens_cpu=d["cu_cpu"] if cu and cu_cpu else None)


def cudnn_fe(d, cu_dtype=torch.int32, **kw):
    """cuDNN's KDA on d (THD tensors, cu_seqlens in cu_dtype); kw overrides or adds keyword
    arguments of kimi_delta_attention (batch_invariant, plan_name, ...)."""
    import cudnn.linear_attention as cla
    args = dict(scale=128 ** -0.5, initial_state=d["h0"], output_final_state=WANT_HT, use_qk_l2norm_in_kernel=True,
                use_beta_sigmoid_in_kernel=True, safe_gate=True, gate_lower_bound=LOWER_BOUND, a_log=d["A_log"],
                dt_bias=d["dt_bias"])
    args.update(kw)
    o, ht = cla.kimi_delta_attention(d["q"][0], d["k"][0], d["v"][0], d["g"][0], d["beta"][0], d["cu"].to(cu_dtype),
                                     **args)[:2]
    return o.unsqueeze(0) if o.dim() == 3 else o, ht


LIBS = ("kda_tile", "fla_triton", "cudnn_fe")


def bench_libs():
    """BENCH_LIBS (e.g. "kda_tile,cudnn_fe"; the others are not run: say so in the notes), or None
    for all. A name that is no library is an error, not a peer silently left out (session 36's
    round 36p named fla "fla" and timed no fla at all)."""
    libs = os.environ.get("BENCH_LIBS")
    if libs:
        bad = [x for x in libs.split(",") if x not in LIBS]
        if bad:
            raise SystemExit(f"BENCH_LIBS: expected names among {', '.join(LIBS)}, got {', '.join(bad)}")
    return libs


def modes(d, lens):
    """Every legitimate call mode of each library for these inputs: {library: [(mode, fn)]}. Each runs
    under torch.inference_mode() and under torch.no_grad(); the fastest mode whose output agrees
    with kda_tile's is the library's time, and the report names it."""
    fixed = len(set(lens)) == 1
    fd = _fixed(d, lens) if fixed else None
    libs = bench_libs()
    out = {
        "kda_tile": [("cu_seqlens", lambda: ours(d)), ("cu_seqlens, max_seqlen", lambda: ours(d, max_seqlen=max(lens)))]
        + ([("batched", lambda: ours(fd, cu=False))] if fixed else []),
        "fla_triton": [("cu_seqlens", lambda: fla(d)), ("cu_seqlens, cu_seqlens_cpu", lambda: fla(d, cu_cpu=True))]
        + ([("batched", lambda: fla(fd, cu=False))] if fixed else []),
        "cudnn_fe": [("cu_seqlens int32", lambda: cudnn_fe(d)), ("cu_seqlens int64", lambda: cudnn_fe(d, torch.int64)),
                     ("cu_seqlens int32, batch_invariant", lambda: cudnn_fe(d, batch_invariant=True))],
    }
    return {k: v for k, v in out.items() if k == "kda_tile" or not libs or k in libs.split(",")}


def pick(results):
    """results: [{mode, ms, agrees, error?}] of one library. The fastest agreeing mode, or None."""
    ok = [r for r in results if r.get("agrees") and r.get("ms") is not None]
    return min(ok, key=lambda r: r["ms"]) if ok else None


def extra_bytes(fn, outputs_bytes):
    """Peak device memory a call allocates beyond its outputs (inputs exist before the call)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    res = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del res
    return max(0, peak - outputs_bytes)


def stage_timers(d, chunk, spp):
    """Times K1 and K2 of kda_tile separately, through the same compiled kernels (for a call that
    runs longest first, K2 here is the one-sequence-a-program build: the caller times that K2 as
    the rest of the call)."""
    from kda_tile import _launch, api
    k1, k2 = api.select_builds(varlen=True, fast_math=False,
                               initial_state_dtype="float32" if d["h0"] is not None else None,
                               output_final_state=WANT_HT, chunk=chunk,
                               spp=1 if spp == api._configs.SPP_LONGEST_FIRST else spp)
    return _launch.stage_callables(k1, k2, d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"], d["dt_bias"],
                                   d["cu"], d["h0"], LOWER_BOUND, 128 ** -0.5)


def rel(a, b, block=1 << 26):
    """||a - b|| / ||b|| in float64, a block at a time: a float64 copy of a whole fp32 state at
    8192 sequences x 32 heads is 32 GiB (session 10's 8192 x 16 row ran out of memory there)."""
    a, b = a.reshape(-1), b.reshape(-1)
    num = den = 0.0
    for s in range(0, b.numel(), block):
        x, y = a[s:s + block].double(), b[s:s + block].double()
        num += float(((x - y) ** 2).sum())
        den += float((y ** 2).sum())
    return (num / den) ** 0.5


def host_time_us(fn, n=200):
    """Median host time per call, the queue drained after every call (bench/host_overhead.py's timer)."""
    from host_overhead import time_calls
    return time_calls(fn, n, 10, sync_every=1)["median_us"]


def run_shape(i, H, lens, do_bench, HV=None):
    t_start = time.perf_counter()
    d = make_inputs(H, lens, seed=100 + i, HV=HV)
    row = {"shape": label(H, lens, HV), "H": H, "HV": HV or H, "lens": lens, "T": sum(lens), "modes": {},
           "device": torch.cuda.get_device_name()}
    with torch.inference_mode():
        o_ref, ht_ref = ours(d)
    out_bytes = o_ref.numel() * o_ref.element_size() + (ht_ref.numel() * ht_ref.element_size() if WANT_HT else 0)
    row["state"] = STATE
    for lib, lib_modes in modes(d, lens).items():
        results = []
        t_lib = time.perf_counter()
        for mode, fn in lib_modes:
            for ctx_name, ctx in (("inference_mode", torch.inference_mode), ("no_grad", torch.no_grad)):
                r = {"mode": f"{mode}, {ctx_name}", "call": mode, "context": ctx_name}
                try:
                    with ctx():
                        o, ht = fn()
                        torch.cuda.synchronize()
                        r["err_o_vs_ours"] = rel(o.reshape(o_ref.shape), o_ref)
                        r["err_ht_vs_ours"] = rel(ht.reshape(ht_ref.shape).float(), ht_ref.float()) if WANT_HT else 0.0
                        r["agrees"] = r["err_o_vs_ours"] < 2e-2 and r["err_ht_vs_ours"] < 2e-2
                        r["ms"] = do_bench(fn, warmup=25, rep=200, return_mode="median")
                except Exception as e:  # a mode that cannot run this shape gets no time, and says why
                    r["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                results.append(r)
        row["modes"][lib] = results
        row[f"{lib}_bench_s"] = round(time.perf_counter() - t_lib, 1)  # first calls (autotuning, plans) included
        best = pick(results)
        row[f"{lib}_ms"] = best["ms"] if best else None
        row[f"{lib}_mode"] = best["mode"] if best else None
        if best:
            row[f"{lib}_err_o_vs_ours"] = best["err_o_vs_ours"]
            fn = dict(lib_modes)[best["call"]]
            ctx = torch.inference_mode if best["context"] == "inference_mode" else torch.no_grad
            try:
                if lib == "kda_tile":
                    import kda_tile
                    kda_tile.empty_cache()  # the kept workspace counts: measure it being allocated
                with ctx():
                    row[f"{lib}_extra_MB"] = extra_bytes(fn, out_bytes) / 2**20
            except Exception as e:
                row[f"{lib}_extra_MB_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    try:
        from kda_tile import api
        split, chunk, spp = api._plan(d["q"], d["v"], d["cu"])
        row["kda_tile_split"], row["kda_tile_chunk"], row["kda_tile_spp"] = split, chunk, spp
        # a one-sequence call the slab pipeline takes: K1 and K2 below are each timed whole and
        # alone, and overlap in the call (their sum is more than its time)
        row["kda_tile_pipeline_tokens"] = api._pipe_rule(d["cu"].numel() - 1, d["q"].shape[1], d["v"].shape[2])
        with torch.inference_mode():
            k1_fn, k2_fn = stage_timers(d, chunk, spp)
            row["kda_tile_k1_ms"] = do_bench(k1_fn, warmup=25, rep=200, return_mode="median")
            if split or spp == api._configs.SPP_LONGEST_FIRST:
                # the call took the sequence split (pass A, scan, pass C in place of K2) or ran longest
                # first (the order, then K2 through it): the rest of its time
                row["kda_tile_k2_ms"] = row["kda_tile_ms"] - row["kda_tile_k1_ms"] if row.get("kda_tile_ms") else None
            else:
                row["kda_tile_k2_ms"] = do_bench(k2_fn, warmup=25, rep=200, return_mode="median")
    except Exception as e:
        row["stage_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    for peer in ("fla_triton", "cudnn_fe"):
        if row.get(f"{peer}_ms") and row.get("kda_tile_ms"):
            row[f"speedup_vs_{peer}"] = row[f"{peer}_ms"] / row["kda_tile_ms"]
    row["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    del d
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or str(Path(__file__).parent / "results"))
    ap.add_argument("--quick", action="store_true", help="first three shapes only")
    ap.add_argument("--only", default=None, help="only the shapes whose label contains one of these texts "
                                                 "(comma-separated)")
    ap.add_argument("--from-rows", nargs="+", default=None, metavar="JSONL",
                    help="no GPU work: write the report from peers-rows.jsonl files of earlier runs (later files "
                         "replace earlier rows of the same shape), in SHAPES' order")
    args = ap.parse_args()
    bench_libs()     # a misspelt library fails here, before any shape runs
    if args.from_rows:
        rows = {}
        for f in args.from_rows:
            for line in Path(f).read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    r["_source"] = Path(f).parent.name
                    rows[r["shape"]] = merge_rows(rows.get(r["shape"]), r)
        order = {label(*s): i for i, s in enumerate(SHAPES)}
        rows = sorted(rows.values(), key=lambda r: order.get(r["shape"], len(order)))
        devices = {r.get("device") or os.environ.get("BENCH_DEVICE") for r in rows}
        if len(devices) != 1 or None in devices:
            raise SystemExit(f"--from-rows: the rows name devices {sorted(map(str, devices))}: one device a report "
                             "(BENCH_DEVICE names it for rows that do not)")
        meta = {"date": os.environ.get("BENCH_DATE") or datetime.date.today().isoformat(), "device": devices.pop(),
                "timing": "triton.testing.do_bench median, warmup 25 ms, rep 200 ms; fp32 h0 and ht",
                "note": "Assembled from " + ", ".join(Path(f).parent.name + "/" + Path(f).name for f in args.from_rows)
                        + (". " + os.environ["BENCH_NOTE"] if os.environ.get("BENCH_NOTE") else "")}
        Path(args.out).mkdir(parents=True, exist_ok=True)
        print(write_report(rows, meta, Path(args.out)))
        return
    from triton.testing import do_bench

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    shapes = (SHAPES[:3] if args.quick else SHAPES)[int(os.environ.get("BENCH_SKIP", "0")):]
    if args.only:
        shapes = [s for s in shapes if any(t in label(*s) for t in args.only.split(","))]
    for i, (H, lens, *hv) in enumerate(shapes):
        row = run_shape(i, H, lens, do_bench, *hv)
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(out / "peers-rows.jsonl", "a") as f:  # kept if a later shape runs out of time
            f.write(json.dumps(row) + "\n")

    # Host CPU time per call at a tiny shape (T=64, H=1), each library in the mode that won above.
    host = {}
    d = make_inputs(1, [64], seed=1)
    calls = {"kda_tile": lambda: ours(d), "fla_triton": lambda: fla(d), "cudnn_fe": lambda: cudnn_fe(d)}
    with torch.inference_mode():
        for name, fn in (() if os.environ.get("BENCH_NO_HOST") else calls.items()):
            try:
                host[name] = host_time_us(fn)
            except Exception as e:
                host[name] = f"{type(e).__name__}: {str(e)[:200]}"

    date = datetime.date.today().isoformat()
    meta = {"date": date, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "timing": ("triton.testing.do_bench median, warmup 25 ms, rep 200 ms; fp32 h0 and ht; each library "
                       "in its fastest mode whose output agrees with kda_tile's (see rows[].modes)"),
            "host_us_T64_H1": host}
    print(write_report(rows, meta, out))


PEERS = ("fla_triton", "cudnn_fe")


def merge_rows(old, new):
    """A later run's row of a shape over an earlier one, library by library: a library the later
    run did not time at all (BENCH_LIBS left it out: no `<lib>_ms` key) keeps the earlier run's
    values, marked with `<lib>_source`; the peers' speed-ups are taken again against kda_tile's
    time of the merged row."""
    if old is None:
        return dict(new)
    out = {k: v for k, v in new.items()}
    for lib in PEERS:
        if f"{lib}_ms" in new or f"{lib}_ms" not in old:
            continue
        for k, v in old.items():
            if k.startswith(lib + "_"):
                out[k] = v
        out[f"{lib}_source"] = old.get(f"{lib}_source") or old.get("_source", "an earlier run")
        out.setdefault("modes", {})[lib] = old.get("modes", {}).get(lib)
    for lib in PEERS:
        if out.get(f"{lib}_ms") and out.get("kda_tile_ms"):
            out[f"speedup_vs_{lib}"] = out[f"{lib}_ms"] / out["kda_tile_ms"]
    return out


def summary(rows, first_faster=7, first_geomean=6):
    """Issue 13's criteria: kda_tile / best peer for each row, whether kda_tile is faster than the
    best peer on each of SHAPES' first `first_faster` shapes, and the geomean of that ratio over the
    first `first_geomean` (None while any of those shapes lacks a row or a time)."""
    def ratio(r):
        peers = [r.get(f"{p}_ms") for p in ("fla_triton", "cudnn_fe") if r.get(f"{p}_ms")]
        return r["kda_tile_ms"] / min(peers) if r.get("kda_tile_ms") and peers else None
    by_label = {r["shape"]: ratio(r) for r in rows}

    def head(n):
        xs = [by_label.get(label(*s)) for s in SHAPES[:n]]
        return None if None in xs else xs
    fast, geo = head(first_faster), head(first_geomean)
    firsts = {label(*sh) for sh in SHAPES[:first_faster]}
    return {
        "ratio_to_best_peer": by_label,
        # peers with no time at one of the first shapes: the ratio there is to the others only
        "peers_missing": {r["shape"]: [p for p in PEERS if not r.get(f"{p}_ms")] for r in rows
                          if r["shape"] in firsts and any(not r.get(f"{p}_ms") for p in PEERS)},
        f"faster_on_first_{first_faster}": None if fast is None else all(x < 1 for x in fast),
        f"geomean_first_{first_geomean}": None if geo is None else math.exp(sum(map(math.log, geo)) / len(geo)),
    }


def card(device: str) -> str:
    """The file-name tag of a device name: "NVIDIA H100 80GB HBM3" -> "h100"."""
    import re
    m = re.search(r"\b([HABL]\d{2,3})", device)
    return m.group(1).lower() if m else "".join(c for c in device.lower() if c.isalnum())[:16] or "gpu"


def write_report(rows, meta, out: Path) -> str:
    """Writes <date>-<card>.json, .md and .png under `out`; returns the markdown."""
    date = meta["date"]
    tag = f"{date}-{card(meta['device'])}"
    (out / f"{tag}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# KDA forward on {meta['device']} ({date})", "",
             "Median ms (triton do_bench), bf16, D=128, fp32 initial and final state. "
             "Ratio = peer / kda_tile (>1: kda_tile faster).", "",
             "| shape | kda_tile | K1 | K2 | fla Triton | ratio | cuDNN FE | ratio | max err vs ours | "
             "extra MB: kda_tile / fla / cuDNN |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def f(x):
        return "-" if x is None else f"{x:.3f}"
    for r in rows:
        errs = [r.get(f"{p}_err_o_vs_ours") for p in ("fla_triton", "cudnn_fe")]
        errs = [e for e in errs if e is not None]
        lines.append(f"| {r['shape']} | {f(r.get('kda_tile_ms'))} | {f(r.get('kda_tile_k1_ms'))} | "
                     f"{f(r.get('kda_tile_k2_ms'))}{' (split)' if r.get('kda_tile_split') else ''}"
                     f"{' (pipelined: K1 beside K2)' if r.get('kda_tile_pipeline_tokens') else ''} | "
                     f"{f(r.get('fla_triton_ms'))} | {f(r.get('speedup_vs_fla_triton'))} | "
                     f"{f(r.get('cudnn_fe_ms'))} | {f(r.get('speedup_vs_cudnn_fe'))} | "
                     f"{f'{max(errs):.2e}' if errs else '-'} | "
                     f"{' / '.join(f(r.get(f'{p}_extra_MB')) for p in ('kda_tile', 'fla_triton', 'cudnn_fe'))} |")
    sm = summary(rows)
    lines += ["", "kda_tile / best peer: " + ", ".join(
        f"{k} {'-' if x is None else f'{x:.2f}'}" for k, x in sm["ratio_to_best_peer"].items())]
    missing = "- (a shape is missing)"
    g6, f7 = sm["geomean_first_6"], sm["faster_on_first_7"]
    lines += [f"geomean of that ratio over the first six shapes: {missing if g6 is None else f'{g6:.3f}'}"
              f" (issue 13: <= 0.55); faster than the best peer on each of the first seven: "
              f"{missing if f7 is None else f7}"]
    if sm["peers_missing"]:
        lines += ["", "**Not every peer has a time**: " + "; ".join(
            f"{shape}: {', '.join(ps)}" for shape, ps in sm["peers_missing"].items())
            + ". There the ratio is to the peers that have one, which can flatter kda_tile."]
    sources = sorted({f"{p} from {r[f'{p}_source']}" for r in rows for p in PEERS if r.get(f"{p}_source")})
    if sources:
        lines += ["", "Peer times taken from an earlier run (the later run did not time them): "
                  + ", ".join(sources) + "."]
    if any(r.get("kda_tile_split") for r in rows):
        lines += ["", "K2 (split): the call took the sequence split (pass A, scan, pass C in place of K2); the "
                  "column is the call's time less K1's."]
    lines += ["", "Mode used (the fastest whose output agrees with kda_tile's):"]
    for r in rows:
        lines.append(f"- {r['shape']}: " + "; ".join(f"{p}: {r.get(f'{p}_mode') or '-'}"
                                                       for p in ("kda_tile", "fla_triton", "cudnn_fe")))
    host = meta.get("host_us_T64_H1")
    if host:
        lines += ["", "Host CPU time per call, T=64 H=1 (us, median): " +
                  ", ".join(f"{k}: {v if isinstance(v, str) else f'{v:.1f}'}" for k, v in host.items())]
    if meta.get("note"):
        lines += ["", meta["note"]]
    md = "\n".join(lines) + "\n"
    (out / f"{tag}.md").write_text(md)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(11, 4.5))
        w = 0.27
        for j, name in enumerate(("kda_tile", "fla_triton", "cudnn_fe")):
            ys = [r.get(f"{name}_ms") or 0 for r in rows]
            ax.bar([i + (j - 1) * w for i in range(len(rows))], ys, w, label=name)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r["shape"] for r in rows], rotation=25, ha="right", fontsize=7)
        ax.set_ylabel("ms (median)")
        ax.set_title(f"KDA forward, {meta['device']}, fp32 state in/out")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"{tag}.png", dpi=110)
    except Exception as e:
        print("plot failed:", e, file=sys.stderr)
    return md


if __name__ == "__main__":
    main()
