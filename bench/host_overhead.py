"""Host (CPU) time per KDA forward call at a tiny, launch-bound shape (T=64, H=1).

Run on the H200:  python bench/host_overhead.py [--iters 5000]
Writes <date>-host-overhead.json and .md under $OUT when set, else under bench/results/.

Each call is timed alone with perf_counter_ns (no synchronization inside the timed region);
every SYNC_EVERY calls the GPU queue is drained outside the timed region, so a full launch
queue never blocks a timed call. Reported: median, p10, p90 in microseconds.

Measured in the same run:
- kda_tile.kda_prefill (the public API, generated C++ entry underneath),
- the generated C++ entry called directly (wrapper and raw TVM-FFI function),
- the generated Python entry (stage A) and TileLang's own JIT path, for reference,
- fla's Triton chunk_kda (FLA_FLASH_KDA=0) and the cuDNN frontend's kimi_delta_attention,
- a torch 128x128 matmul,
- validation alone on the CPU: inside C++ (no FFI call) and through the validate_only call.
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

SYNC_EVERY = 32
T, H, K, V = 64, 1, 128, 128
TARGET_CALL_US = 5.0
TARGET_VALIDATE_US = 1.0


def time_calls(fn, iters, warmup, sync=True):
    for _ in range(warmup):
        fn()
    if sync:
        torch.cuda.synchronize()
    ts = []
    for i in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
        if sync and i % SYNC_EVERY == SYNC_EVERY - 1:
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
    d = dict(q=r(1, T, H, K), k=r(1, T, H, K), v=r(1, T, H, V), g=r(1, T, H, K), beta=r(1, T, H),
             A_log=torch.rand(H, generator=g, device=device) * 2.7, dt_bias=0.1 * r(H, K, dt=torch.float32),
             cu_seqlens=torch.tensor([0, T], dtype=torch.int64, device=device) if varlen else None,
             initial_state=r(1, H, V, K, dt=torch.float32) if h0 else None)
    return d


CONFIGS = {
    # name: (varlen, initial state fp32, output final state)
    "plain": (False, False, False),
    "varlen_h0_ht": (True, True, True),  # the peers' call: cu_seqlens, fp32 initial and final state
}


def measure_all(iters, warmup):
    import host_codegen
    import kda_tile
    from kda_tile import api

    results = []

    def record(name, config, fn, **kw):
        row = {"name": name, "config": config}
        try:
            row.update(time_calls(fn, iters, warmup, **kw))
        except Exception as e:  # a peer that is missing or fails is reported, not fatal
            row["error"] = f"{type(e).__name__}: {e}"
            row["traceback"] = traceback.format_exc(limit=3)
        results.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)

    for cname, (varlen, h0, ht) in CONFIGS.items():
        d = inputs("cuda", varlen, h0)
        args = (d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"], d["dt_bias"], d["cu_seqlens"],
                d["initial_state"], -5.0, K ** -0.5)

        def prefill(d=d, ht=ht):
            return kda_tile.kda_prefill(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"],
                                        dt_bias=d["dt_bias"], lower_bound=-5.0, initial_state=d["initial_state"],
                                        output_final_state=ht, cu_seqlens=d["cu_seqlens"])
        record("kda_tile.kda_prefill", cname, prefill)

        k1, k2 = api.select_builds(varlen=varlen, fast_math=False, initial_state_dtype="float32" if h0 else None,
                                   output_final_state=ht)
        e = host_codegen.get_entry(k1, k2, backend="cpp")
        record("generated C++ entry (wrapper)", cname, lambda e=e, a=args: e(*a))
        fast = e.fast
        record("generated C++ entry (entry.fast, what kda_prefill should call)", cname, lambda f=fast, a=args: f(*a))
        raw = e.raw
        record("generated C++ entry (raw TVM-FFI function, tuple result)", cname, lambda f=raw, a=args: f(*a))
        ep = host_codegen.get_entry(k1, k2, backend="py")
        record("generated Python entry (stage A)", cname, lambda e=ep, a=args: e(*a))
        try:
            from kda_tile import _launch
            record("TileLang JIT kernels, default TVM-FFI path", cname,
                   lambda a=args: _launch.launch(k1, k2, *a))
        except ImportError:
            pass

        if cname == "varlen_h0_ht":
            def fla_call(d=d):
                from fla.ops.kda import chunk_kda
                return chunk_kda(q=d["q"], k=d["k"], v=d["v"], g=d["g"], beta=d["beta"], scale=K ** -0.5,
                                 initial_state=d["initial_state"], output_final_state=True,
                                 use_gate_in_kernel=True, use_qk_l2norm_in_kernel=True,
                                 use_beta_sigmoid_in_kernel=True, safe_gate=True, A_log=d["A_log"],
                                 dt_bias=d["dt_bias"], lower_bound=-5.0, state_v_first=True,
                                 cu_seqlens=d["cu_seqlens"])
            with torch.inference_mode():
                record("fla chunk_kda (Triton, FLA_FLASH_KDA=0)", cname, fla_call)

            cu32 = d["cu_seqlens"].int()

            def cudnn_call(d=d, cu32=cu32):
                import cudnn
                return cudnn.linear_attention.kimi_delta_attention(
                    d["q"][0], d["k"][0], d["v"][0], d["g"][0], d["beta"][0], cu32, scale=K ** -0.5,
                    initial_state=d["initial_state"], output_final_state=True, use_qk_l2norm_in_kernel=True,
                    use_beta_sigmoid_in_kernel=True, safe_gate=True, gate_lower_bound=-5.0,
                    a_log=d["A_log"], dt_bias=d["dt_bias"])
            with torch.inference_mode():
                record("cuDNN FE kimi_delta_attention", cname, cudnn_call)

    a = torch.randn(128, 128, device="cuda")
    record("torch 128x128 matmul", "-", lambda: a @ a)

    # Validation alone, on the CPU.
    for cname, (varlen, h0, ht) in CONFIGS.items():
        k1, k2 = api.select_builds(varlen=varlen, fast_math=False, initial_state_dtype="float32" if h0 else None,
                                   output_final_state=ht)
        e = host_codegen.get_entry(k1, k2, backend="cpp")
        d = inputs("cpu", varlen, h0)
        args = (d["q"], d["k"], d["v"], d["g"], d["beta"], d["A_log"], d["dt_bias"], d["cu_seqlens"],
                d["initial_state"], -5.0, K ** -0.5)
        ns = [e.bench_validate(*args, expect_device="cpu", iters=200000) for _ in range(5)]
        results.append({"name": "validation inside C++ (CPU tensors, no FFI call)", "config": cname,
                        "median_us": statistics.median(ns) / 1e3, "n": 5, "unit_note": "mean of 200000 per sample"})
        print(json.dumps(results[-1]), flush=True)
        record("validate_only call through TVM-FFI (CPU tensors)", cname,
               lambda e=e, a=args: e.validate_only(*a, expect_device="cpu"), sync=False)
        vo = e._validate
        record("raw validate_only TVM-FFI function (CPU tensors)", cname,
               lambda f=vo, a=args: f(*a, None, None, 0, 1), sync=False)
    return results


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
             f"GPU {env['gpu']}, CPU {env['cpu']}, torch {env['torch']}, Python {env['python']}.", "",
             "Median / p10 / p90 CPU time per call (us); each call timed alone, the queue drained every "
             f"{env['sync_every']} calls outside the timed region.", "",
             "| call | config | median | p10 | p90 |", "|---|---|---|---|---|"]
    for r in report["results"]:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['config']} | error: {r['error'][:120]} | | |")
        else:
            p10 = f"{r['p10_us']:.2f}" if "p10_us" in r else ""
            p90 = f"{r['p90_us']:.2f}" if "p90_us" in r else ""
            lines.append(f"| {r['name']} | {r['config']} | {r['median_us']:.2f} | {p10} | {p90} |")
    lines += ["", "Targets:"]
    for k, v in report["targets"].items():
        lines.append(f"- {k}: {v}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=5000)
    ap.add_argument("--warmup", type=int, default=300)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/host_overhead.py needs a CUDA GPU")
    results = measure_all(args.iters, args.warmup)

    def med(name, config):
        for r in results:
            if r["name"] == name and r["config"] == config and "median_us" in r:
                return r["median_us"]
        return None
    call = {c: med("kda_tile.kda_prefill", c) for c in CONFIGS}
    val = {c: med("validation inside C++ (CPU tensors, no FFI call)", c) for c in CONFIGS}
    targets = {}
    for c in CONFIGS:
        targets[f"kda_prefill median <= {TARGET_CALL_US} us ({c})"] = (
            None if call[c] is None else {"median_us": round(call[c], 3), "met": call[c] <= TARGET_CALL_US})
        targets[f"validation alone <= {TARGET_VALIDATE_US} us ({c})"] = (
            None if val[c] is None else {"median_us": round(val[c], 4), "met": val[c] <= TARGET_VALIDATE_US})
    report = {"environment": environment(), "results": results, "targets": targets}

    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).resolve().parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{report['environment']['date']}-host-overhead"
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
    (out / f"{stem}.md").write_text(to_markdown(report))
    print(to_markdown(report))


if __name__ == "__main__":
    main()
