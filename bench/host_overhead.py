"""Host (CPU) time per KDA forward call at a tiny, launch-bound shape (T=64, H=1).

Run on the H200:  python bench/host_overhead.py [--iters 4000]
Rows stream to <out>/host-overhead.jsonl as they are measured (a timeout keeps what was done);
the report goes to <out>/<date>-host-overhead.json and .md. <out> is $OUT when set, else
bench/results/.

Each call is timed alone with perf_counter_ns (no synchronization inside the timed region);
every SYNC_EVERY calls the GPU queue is drained outside the timed region, so a full launch
queue never blocks a timed call. Reported: median, p10, p90 in microseconds.

Measured in the same run:
- kda_tile.kda_prefill (the public API) for the plain call and the peers' call (varlen, fp32
  initial and final state);
- the generated C++ entry called directly, with its phases timed inside C++ (validation,
  stream and context, workspace, outputs, each kernel's descriptors and launch), and with the
  workspace cache off, the launches skipped, and o passed in, to attribute the time;
- floors: an empty TVM-FFI call with the same tensors, torch.empty on the GPU, one TileLang
  kernel through TileLang's own TVM-FFI launcher, a torch 128x128 matmul;
- fla's Triton chunk_kda (FLA_FLASH_KDA=0) and the cuDNN frontend's kimi_delta_attention;
- validation alone on the CPU, timed inside C++ (no FFI call) and through validate_only.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("FLA_FLASH_KDA", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from results_io import results_dir  # noqa: E402

SYNC_EVERY = 32
T, H, K, V = 64, 1, 128, 128
TARGET_CALL_US = 5.0
TARGET_VALIDATE_US = 1.0
PHASES = ["validate", "stream+context", "workspace", "outputs", "K1 descriptors+args", "K2 descriptors+args"]
LAUNCH_PHASES = {"kernels": ["K1 cuLaunchKernel", "K2 cuLaunchKernel"],
                 "graph": ["node updates (where changed) + cuGraphLaunch"]}
# entry flags (host_codegen.gen_cpp): 8 return o alone, 16 phase timestamps, 32 skip launches,
# 64 fresh workspace, 128 one graph launch
O_ALONE, PROFILE, NO_LAUNCH, FRESH_WS, GRAPH = 8, 16, 32, 64, 128
REWRITE = 1024   # rewrite the graph nodes' parameters at every call (before session 12: always)
MODES = {"kernels": 0, "graph": GRAPH}
# the call modes of the kda_prefill rows the targets take the fastest of
CALL_MODES = ("kernels launch", "graph launch", "graph launch, inference_mode")


def time_calls(fn, iters, warmup, sync=True, sync_every=SYNC_EVERY):
    for _ in range(warmup):
        fn()
    if sync:
        torch.cuda.synchronize()
    ts = []
    for i in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
        if sync and i % sync_every == sync_every - 1:
            torch.cuda.synchronize()
    if sync:
        torch.cuda.synchronize()
    ts.sort()
    n = len(ts)
    return {"median_us": statistics.median(ts) / 1e3, "p10_us": ts[n // 10] / 1e3, "p90_us": ts[9 * n // 10] / 1e3,
            "n": n}


def inputs(device, varlen, h0):
    g = torch.Generator(device=device).manual_seed(0)
    bf = torch.bfloat16

    def r(*s, dt=bf):
        return torch.randn(*s, generator=g, device=device).to(dt)
    return dict(q=r(1, T, H, K), k=r(1, T, H, K), v=r(1, T, H, V), g=r(1, T, H, K), beta=r(1, T, H),
                A_log=torch.rand(H, generator=g, device=device) * 2.7, dt_bias=0.1 * r(H, K, dt=torch.float32),
                cu_seqlens=torch.tensor([0, T], dtype=torch.int64, device=device) if varlen else None,
                initial_state=r(1, H, V, K, dt=torch.float32) if h0 else None)


CONFIGS = {
    # name: (varlen, initial state fp32, output final state)
    "plain": (False, False, False),
    "varlen_h0_ht": (True, True, True),  # the peers' call: cu_seqlens, fp32 initial and final state
}


class Recorder:
    def __init__(self, out: Path, iters, warmup):
        self.rows, self.iters, self.warmup = [], iters, warmup
        self.stream = open(out / "host-overhead.jsonl", "a")

    def add(self, row):
        self.rows.append(row)
        line = json.dumps({k: v for k, v in row.items() if k != "traceback"})
        self.stream.write(line + "\n")
        self.stream.flush()
        print(line, flush=True)

    def time(self, name, config, fn, **kw):
        row = {"name": name, "config": config}
        try:
            row.update(time_calls(fn, self.iters, self.warmup, **kw))
        except Exception as e:  # a peer that is missing or fails is reported, not fatal
            row["error"] = f"{type(e).__name__}: {e}"[:600]
            row["traceback"] = traceback.format_exc(limit=3)
        self.add(row)


def phase_profile(rec, entry, args, config, mode):
    """Median time of each phase inside the C++ entry, and of the whole FFI call around it."""
    raw = entry.raw
    per_phase, inside, total = [], [], []
    for i in range(rec.warmup + rec.iters):
        t0 = time.perf_counter_ns()
        raw(*args, None, None, O_ALONE | PROFILE | MODES[mode])
        t1 = time.perf_counter_ns()
        p = entry.last_profile()
        if i >= rec.warmup:
            per_phase.append([b - a for a, b in zip(p, p[1:])])
            inside.append(p[-1] - p[0])
            total.append(t1 - t0)
        if i % SYNC_EVERY == SYNC_EVERY - 1:
            torch.cuda.synchronize()
    med = [statistics.median(x[j] for x in per_phase) / 1e3 for j in range(len(per_phase[0]))]
    row = {"name": f"C++ entry, {mode} launch: phases inside C++ (median us each)", "config": config,
           "phases_us": dict(zip(PHASES + LAUNCH_PHASES[mode], [round(m, 3) for m in med])),
           "inside_cpp_us": statistics.median(inside) / 1e3, "median_us": statistics.median(total) / 1e3,
           "ffi_crossing_us": statistics.median(t - s for t, s in zip(total, inside)) / 1e3, "n": len(total)}
    rec.add(row)


def fla_call(d):
    from fla.ops.kda import chunk_kda
    return chunk_kda(q=d["q"], k=d["k"], v=d["v"], g=d["g"], beta=d["beta"], scale=K ** -0.5,
                     initial_state=d["initial_state"], output_final_state=True,
                     use_gate_in_kernel=True, use_qk_l2norm_in_kernel=True,
                     use_beta_sigmoid_in_kernel=True, safe_gate=True, A_log=d["A_log"],
                     dt_bias=d["dt_bias"], lower_bound=-5.0, state_v_first=True,
                     cu_seqlens=d["cu_seqlens"])


def cudnn_call(d, cu32):
    import cudnn.linear_attention as cla
    return cla.kimi_delta_attention(
        d["q"][0], d["k"][0], d["v"][0], d["g"][0], d["beta"][0], cu32, scale=K ** -0.5,
        initial_state=d["initial_state"], output_final_state=True, use_qk_l2norm_in_kernel=True,
        use_beta_sigmoid_in_kernel=True, safe_gate=True, gate_lower_bound=-5.0,
        a_log=d["A_log"], dt_bias=d["dt_bias"])


def set_launch_mode(mode):
    """Makes kda_prefill build its entry calls again with KDA_TILE_LAUNCH=mode."""
    import host_codegen
    from kda_tile import api
    os.environ["KDA_TILE_LAUNCH"] = mode
    api._ENTRIES.clear()
    api._RAW.clear()  # the out= path's entries, which carry their launch flags
    api._LOADED.clear()
    host_codegen.get_entry.cache_clear()


def measure_all(rec: Recorder):
    import host_codegen
    import tvm_ffi
    from kda_tile import api, kda_prefill

    for cname, (varlen, h0, ht) in CONFIGS.items():
        d = inputs("cuda", varlen, h0)
        args = (d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"], d["dt_bias"], d["cu_seqlens"],
                d["initial_state"], -5.0, K ** -0.5)

        def prefill(d=d, ht=ht):
            return kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                               lower_bound=-5.0, initial_state=d["initial_state"], output_final_state=ht,
                               cu_seqlens=d["cu_seqlens"])
        for mode in MODES:
            set_launch_mode(mode)
            rec.time(f"kda_tile.kda_prefill ({mode} launch)", cname, prefill)
        o_out = torch.empty_like(d["v"])
        fs_out = torch.empty(d["v"].shape[0] if d["cu_seqlens"] is None else d["cu_seqlens"].numel() - 1,
                             d["v"].shape[2], V, K, dtype=torch.float32, device="cuda") if ht else None

        def prefill_out(d=d, ht=ht, o_out=o_out, fs_out=fs_out):
            return kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                               lower_bound=-5.0, initial_state=d["initial_state"], output_final_state=ht,
                               cu_seqlens=d["cu_seqlens"], out=o_out, final_state_out=fs_out)
        for mode in MODES:
            set_launch_mode(mode)
            rec.time(f"kda_tile.kda_prefill(out=, final_state_out=) ({mode} launch)", cname, prefill_out)
        o_alt = [o_out, torch.empty_like(o_out)]
        flip = [0]

        def prefill_out_alternating(d=d, ht=ht, fs_out=fs_out):
            flip[0] ^= 1
            return kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                               lower_bound=-5.0, initial_state=d["initial_state"], output_final_state=ht,
                               cu_seqlens=d["cu_seqlens"], out=o_alt[flip[0]], final_state_out=fs_out)
        for mode in ("graph-rewrite", "graph"):
            set_launch_mode(mode)
            with torch.inference_mode():   # how serving engines call a forward
                rec.time(f"kda_tile.kda_prefill ({mode} launch, inference_mode)", cname, prefill)
                rec.time(f"kda_tile.kda_prefill(out=, final_state_out=) ({mode} launch, inference_mode)", cname,
                         prefill_out)
                # a new out every call: the graph's node parameters change every time
                rec.time(f"kda_tile.kda_prefill(out= two buffers alternating) ({mode} launch, inference_mode)",
                         cname, prefill_out_alternating)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for mode in MODES:
                set_launch_mode(mode)
                rec.time(f"kda_tile.kda_prefill ({mode} launch) on a non-default stream", cname, prefill)
        set_launch_mode(os.environ.get("KDA_TILE_LAUNCH_DEFAULT", "graph"))

        k1, k2 = api.select_builds(varlen=varlen, fast_math=False, initial_state_dtype="float32" if h0 else None,
                                   output_final_state=ht)
        e = host_codegen.get_entry(k1, k2, backend="cpp")
        raw = e.raw
        o = torch.empty(1, T, H, V, dtype=torch.bfloat16, device="cuda")
        fs = torch.empty(1, H, V, K, dtype=torch.float32, device="cuda") if ht else None
        for mode, bit in MODES.items():
            rec.time(f"C++ entry: raw, {mode} launch, o returned alone" + (", final_state passed" if ht else ""),
                     cname, lambda bit=bit: raw(*args, None, fs, O_ALONE | bit))
            phase_profile(rec, e, args, cname, mode)
        rec.time("C++ entry: raw, workspace cache off", cname, lambda: raw(*args, None, fs, O_ALONE | FRESH_WS))
        rec.time("C++ entry: raw, launches skipped", cname, lambda: raw(*args, None, fs, O_ALONE | NO_LAUNCH))
        rec.time("C++ entry: raw, o and final_state passed in", cname, lambda: raw(*args, o, fs, O_ALONE))
        rec.time("C++ entry: raw, tuple result indexed", cname, lambda: tuple(raw(*args)))
        rec.time("C++ entry: entry.fast", cname, lambda: e.fast(*args))
        if cname == "varlen_h0_ht":
            cu32 = d["cu_seqlens"].int()
            with torch.inference_mode():
                rec.time("fla chunk_kda (Triton, FLA_FLASH_KDA=0)", cname, lambda: fla_call(d))
                rec.time("cuDNN FE kimi_delta_attention", cname, lambda: cudnn_call(d, cu32))

    d = inputs("cuda", False, False)
    nop = tvm_ffi.get_global_func("testing.nop")
    echo = tvm_ffi.get_global_func("testing.echo")
    seven = (d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"], d["dt_bias"])
    rec.time("floor: TVM-FFI nop, no args", "-", lambda: nop(), sync=False)
    rec.time("floor: TVM-FFI nop, the 7 input tensors", "-", lambda: nop(*seven, None, None, -5.0, 0.5), sync=False)
    rec.time("floor: TVM-FFI echo of one tensor (in and back out)", "-", lambda: echo(d["q"]), sync=False)
    rec.time("floor: torch.empty([1,64,1,128] bf16, cuda)", "-",
             lambda: torch.empty(1, T, H, V, dtype=torch.bfloat16, device="cuda"), sync=False)
    a = torch.randn(128, 128, device="cuda")
    rec.time("floor: torch 128x128 matmul", "-", lambda: a @ a)
    try:
        from kda_tile import _launch
        k1, k2 = api.select_builds(varlen=False, fast_math=False, initial_state_dtype=None, output_final_state=False)
        _, k2_fn = _launch.stage_callables(k1, k2, d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"],
                                           d["dt_bias"], None, None, -5.0, K ** -0.5)
        rec.time("floor: one TileLang kernel (K2), TileLang's own TVM-FFI launcher", "plain", k2_fn)
    except Exception as ex:
        rec.add({"name": "floor: one TileLang kernel", "config": "plain", "error": f"{type(ex).__name__}: {ex}"[:300]})

    for cname, (varlen, h0, ht) in CONFIGS.items():
        k1, k2 = api.select_builds(varlen=varlen, fast_math=False, initial_state_dtype="float32" if h0 else None,
                                   output_final_state=ht)
        e = host_codegen.get_entry(k1, k2, backend="cpp")
        dc = inputs("cpu", varlen, h0)
        args = (dc["q"], dc["k"], dc["v"], dc["g"], dc["beta"], dc["A_log"], dc["dt_bias"], dc["cu_seqlens"],
                dc["initial_state"], -5.0, K ** -0.5)
        ns = [e.bench_validate(*args, expect_device="cpu", iters=200000) for _ in range(5)]
        rec.add({"name": "validation inside C++ (CPU tensors, no FFI call)", "config": cname,
                 "median_us": statistics.median(ns) / 1e3, "n": 5, "unit_note": "mean of 200000 per sample"})
        rec.time("validate_only through TVM-FFI (CPU tensors)", cname,
                 lambda e=e, a=args: e._validate(*a, None, None, 0, 1), sync=False)


def environment():
    cpu = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "python": platform.python_version(),
           "cpu": cpu, "date": datetime.date.today().isoformat(), "T": T, "H": H, "K": K, "V": V,
           "sync_every": SYNC_EVERY}
    for mod in ("tvm_ffi", "tilelang", "fla", "cudnn"):
        try:
            m = __import__(mod)
            env[mod] = getattr(m, "__version__", "?")
        except Exception as e:
            env[mod] = f"unavailable ({type(e).__name__})"
    return env


def to_markdown(report):
    env = report["environment"]
    lines = [f"# Host overhead per KDA forward call, T={env['T']}, H={env['H']} ({env['date']})", "",
             f"GPU {env['gpu']}, CPU {env['cpu']}, torch {env['torch']}, Python {env['python']}, "
             f"tvm_ffi {env['tvm_ffi']}.", "",
             "Median / p10 / p90 CPU time per call (us); each call timed alone, the queue drained every "
             f"{env['sync_every']} calls outside the timed region.", "",
             "| call | config | median | p10 | p90 |", "|---|---|---|---|---|"]
    for r in report["results"]:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['config']} | error: {r['error'][:120]} | | |")
            continue
        p10 = f"{r['p10_us']:.2f}" if "p10_us" in r else ""
        p90 = f"{r['p90_us']:.2f}" if "p90_us" in r else ""
        lines.append(f"| {r['name']} | {r['config']} | {r['median_us']:.2f} | {p10} | {p90} |")
    for r in report["results"]:
        if "phases_us" in r:
            lines += ["", f"{r['name'].split(':')[0]} ({r['config']}), phases, median us: " +
                      ", ".join(f"{k} {v:.2f}" for k, v in r["phases_us"].items()) +
                      f"; inside C++ {r['inside_cpp_us']:.2f}, FFI crossing (args in, o out) {r['ffi_crossing_us']:.2f}."]
    lines += ["", "Targets:"]
    for k, v in report["targets"].items():
        lines.append(f"- {k}: {v}")
    return "\n".join(lines) + "\n"


def measure_sync_sensitivity(rec: Recorder):
    """kda_prefill alone with the queue drained after every call and every 32 calls: whether the
    GPU's own time per call (more than the host's at T=64 for the state-carrying call) shows up
    as host time."""
    from kda_tile import kda_prefill
    for cname, (varlen, h0, ht) in CONFIGS.items():
        d = inputs("cuda", varlen, h0)

        def prefill(d=d, ht=ht):
            return kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                               lower_bound=-5.0, initial_state=d["initial_state"], output_final_state=ht,
                               cu_seqlens=d["cu_seqlens"])
        for every in (32, 1):
            rec.time(f"kda_tile.kda_prefill (graph launch), queue drained every {every}", cname, prefill,
                     sync_every=every)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--sync-sensitivity", action="store_true",
                    help="only kda_prefill, queue drained every call vs every 32 calls (jsonl only)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/host_overhead.py needs a CUDA GPU")
    out = results_dir()
    rec = Recorder(out, args.iters, args.warmup)
    if args.sync_sensitivity:
        measure_sync_sensitivity(rec)
        return
    measure_all(rec)
    results = rec.rows

    def med(name, config):
        return next((r["median_us"] for r in results if r["name"] == name and r["config"] == config
                     and "median_us" in r), None)
    targets = {}
    for c in CONFIGS:
        call = min((m for m in (med(f"kda_tile.kda_prefill ({mode})", c) for mode in CALL_MODES) if m),
                   default=None)
        with_out = min((m for m in (med(f"kda_tile.kda_prefill(out=, final_state_out=) ({mode})", c)
                                    for mode in CALL_MODES) if m), default=None)
        targets[f"kda_prefill(out=, final_state_out=) median <= {TARGET_CALL_US} us ({c}, fastest call mode)"] = (
            None if with_out is None else {"median_us": round(with_out, 3), "met": with_out <= TARGET_CALL_US})
        val = med("validation inside C++ (CPU tensors, no FFI call)", c)
        targets[f"kda_prefill median <= {TARGET_CALL_US} us ({c}, fastest call mode)"] = (
            None if call is None else {"median_us": round(call, 3), "met": call <= TARGET_CALL_US})
        targets[f"validation alone <= {TARGET_VALIDATE_US} us ({c})"] = (
            None if val is None else {"median_us": round(val, 4), "met": val <= TARGET_VALIDATE_US})
    report = {"environment": environment(), "results": results, "targets": targets}
    stem = f"{report['environment']['date']}-host-overhead"
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
    (out / f"{stem}.md").write_text(to_markdown(report))
    print(to_markdown(report))


if __name__ == "__main__":
    main()
