"""Startup cost of kda_tile: import plus the first call, and the first call of each further
configuration, each measured in a fresh Python process, with warm and with cold caches.

    python bench/startup.py [--out DIR] [--runs 5] [--cold-runs 1] [--no-cold]

On a machine with a CUDA GPU the first call is kda_prefill itself (synchronized). Without one
it is what the first kda_prefill does short of launching: kda_tile.api.check_inputs(...,
device="cpu") = the release gate of both builds, the generated entry's load (or its build,
cold) and the entry's argument checks. Timed per process:
  import      `import kda_tile; kda_tile.kda_prefill` (torch is imported before, not counted:
              a caller holding tensors has it already; its own import time is reported apart)
  first       the first call (configuration 1), split into the release gate, the entry's load
              and the rest (validation, workspace, launch)
  further     the first call of each other configuration (another K1/K2 pair)
  steady      a second call of configuration 1
Warm: the caches the first call reads (TileLang's and host_codegen's) hold everything, as after
`python -m kda_tile build` or one earlier process. Cold: TILELANG_CACHE_DIR and KDA_TILE_CACHE
point at fresh temporary folders, so the first call lowers, generates and compiles (and, on a
GPU, runs nvcc for the cubins).

Budget (warm): import + first call <= 300 ms, each further configuration <= 50 ms. Writes
<out>/<date>-<device>-startup.json and .md (out: --out, else $OUT, else bench/results/).
Needs only the repository and the packages pyproject lists.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_FIRST_MS = 300.0
BUDGET_FURTHER_MS = 50.0

# name -> (B, T, H, varlen, initial_state dtype, output_final_state, fast_math); each is a
# different (K1, K2) pair. The first one is "the first call".
CONFIGS = {
    "fixed, no state": (1, 64, 2, False, None, False, False),
    "fixed, fp32 state in/out": (1, 64, 2, False, "float32", True, False),
    "varlen 3 seqs, fp32 state in/out": (1, 64, 2, True, "float32", True, False),
    "fixed, bf16 state in/out, fast_math": (2, 64, 2, False, "bfloat16", True, True),
    "fixed, H=96 (64-column K2 blocks)": (1, 64, 96, False, None, True, False),
}


# -- child: one fresh process ------------------------------------------------------------------

def _inputs(torch, cfg, device):
    B, T, H, varlen, h0, ht, fast = cfg
    g = torch.Generator(device="cpu").manual_seed(0)
    bf = torch.bfloat16

    def r(*shape, dt=bf):
        return torch.randn(*shape, generator=g).to(dt).to(device)
    args = [r(B, T, H, 128), r(B, T, H, 128), r(B, T, H, 128), r(B, T, H, 128), r(B, T, H)]
    kw = dict(A_log=r(H, dt=torch.float32), dt_bias=r(H, 128, dt=torch.float32), output_final_state=ht,
              fast_math=fast)
    n = B
    if varlen:
        kw["cu_seqlens"] = torch.tensor([0, 20, 41, T], dtype=torch.int64, device=device)
        n = 3
    if h0 is not None:
        kw["initial_state"] = r(n, H, 128, 128, dt={"float32": torch.float32, "bfloat16": bf}[h0])
    return args, kw


def child(names):
    t0 = time.perf_counter()
    import torch
    t_torch = time.perf_counter() - t0
    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    inputs = [_inputs(torch, CONFIGS[n], device) for n in names]   # and CUDA's context, untimed
    if gpu:
        torch.cuda.synchronize()

    t0 = time.perf_counter()
    import kda_tile
    kda_tile.kda_prefill
    t_import = time.perf_counter() - t0
    from kda_tile import api, gate
    import host_codegen

    parts = {"gate": 0.0, "entry": 0.0}

    def timed(name, fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                parts[name] += time.perf_counter() - t
        return wrapper
    gate.check = timed("gate", gate.check)
    host_codegen.get_entry = timed("entry", host_codegen.get_entry)

    def call(args, kw):
        if gpu:
            out = kda_tile.kda_prefill(*args, **kw)
            torch.cuda.synchronize()
            return out
        return api.check_inputs(*args, **kw, device="cpu")

    calls = []
    for n, (args, kw) in zip(names, inputs):
        parts.update(gate=0.0, entry=0.0)
        t = time.perf_counter()
        call(args, kw)
        dt = time.perf_counter() - t
        calls.append({"config": n, "ms": dt * 1e3, "gate_ms": parts["gate"] * 1e3, "entry_ms": parts["entry"] * 1e3,
                      "rest_ms": (dt - parts["gate"] - parts["entry"]) * 1e3})
    t = time.perf_counter()
    call(*inputs[0])
    steady = time.perf_counter() - t
    return {"torch_import_ms": t_torch * 1e3, "import_ms": t_import * 1e3, "calls": calls,
            "steady_ms": steady * 1e3, "tilelang_imported": "tilelang" in sys.modules,
            "mode": "kda_prefill on " + torch.cuda.get_device_name() if gpu else
            "check_inputs(device='cpu'): gate + entry + validation, no launch"}


# -- parent ------------------------------------------------------------------------------------

def run_child(names, env, timeout):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(names)]
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"child failed (rc {p.returncode}):\n{p.stderr[-3000:]}")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
    r = json.loads(line)
    r["process_wall_s"] = wall
    return r


def summarize(runs):
    """Median and max over runs of each quantity."""
    def agg(xs):
        return {"median": statistics.median(xs), "max": max(xs), "min": min(xs)}
    out = {"import_ms": agg([r["import_ms"] for r in runs]),
           "first_ms": agg([r["calls"][0]["ms"] for r in runs]),
           "import_plus_first_ms": agg([r["import_ms"] + r["calls"][0]["ms"] for r in runs]),
           "torch_import_ms": agg([r["torch_import_ms"] for r in runs]),
           "steady_ms": agg([r["steady_ms"] for r in runs]),
           "first_parts_ms": {k: statistics.median([r["calls"][0][k] for r in runs])
                              for k in ("gate_ms", "entry_ms", "rest_ms")},
           "further_ms": {}}
    for i, c in enumerate(runs[0]["calls"][1:], start=1):
        out["further_ms"][c["config"]] = agg([r["calls"][i]["ms"] for r in runs])
    return out


def device_name():
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except Exception:
        pass
    return "cpu"


def _loadavg():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _slug(s):
    s = s.lower()
    for tag in ("h200", "h100", "h800", "gh200"):
        if tag in s:
            return tag
    return "".join(c if c.isalnum() else "-" for c in s).strip("-")[:24] or "cpu"


def markdown(doc) -> str:
    L = [f"# kda_tile startup ({doc['date']}, {doc['device']})", "",
         f"{doc['mode']}. Each row: fresh Python processes (`bench/startup.py`), median (max) of "
         f"{doc['warm']['runs']} warm runs; cold: {doc.get('cold', {}).get('runs', 0)} run(s) with fresh "
         f"TILELANG_CACHE_DIR and KDA_TILE_CACHE. torch's own import "
         f"({doc['warm']['summary']['torch_import_ms']['median']:.0f} ms) is not counted.", "",
         "| | warm | budget | cold |", "|---|---|---|---|"]
    w = doc["warm"]["summary"]
    c = doc.get("cold", {}).get("summary")

    def cell(a):
        return f"{a['median']:.1f} ({a['max']:.1f}) ms"

    def cold(key, sub=None):
        if not c:
            return "-"
        a = c[key] if sub is None else c[key].get(sub)
        return cell(a) if a else "-"
    L.append(f"| import kda_tile | {cell(w['import_ms'])} | | {cold('import_ms')} |")
    L.append(f"| first call ({doc['configs'][0]}) | {cell(w['first_ms'])} | | {cold('first_ms')} |")
    ok = w["import_plus_first_ms"]["max"] <= BUDGET_FIRST_MS
    L.append(f"| **import + first call** | **{cell(w['import_plus_first_ms'])}** | {BUDGET_FIRST_MS:.0f} ms "
             f"{'ok' if ok else 'OVER'} | {cold('import_plus_first_ms')} |")
    p = w["first_parts_ms"]
    L.append(f"| first call: gate / entry / rest (median) | {p['gate_ms']:.1f} / {p['entry_ms']:.1f} / "
             f"{p['rest_ms']:.1f} ms | | " + (f"{c['first_parts_ms']['gate_ms']:.0f} / {c['first_parts_ms']['entry_ms']:.0f}"
                                            f" / {c['first_parts_ms']['rest_ms']:.0f} ms" if c else "-") + " |")
    for name, a in w["further_ms"].items():
        ok = a["max"] <= BUDGET_FURTHER_MS
        L.append(f"| further: {name} | {cell(a)} | {BUDGET_FURTHER_MS:.0f} ms {'ok' if ok else 'OVER'} | "
                 f"{cold('further_ms', name)} |")
    L.append(f"| steady call (config 1 again) | {cell(w['steady_ms'])} | | {cold('steady_ms')} |")
    L += ["", f"Verdict: {doc['verdict']}.", "",
          f"Environment: Python {doc['env']['python']}, torch {doc['env']['torch']}, tilelang {doc['env']['tilelang']}, "
          f"{doc['env']['cpus']} CPUs ({doc['env']['machine']}), 1-minute load average at start and end "
          f"{doc['env'].get('loadavg_1min_start_end')}. TileLang imported by a warm first call: "
          f"{doc['warm']['tilelang_imported']}."]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "bench" / "results"))
    ap.add_argument("--runs", type=int, default=5, help="warm processes")
    ap.add_argument("--cold-runs", type=int, default=1, help="cold processes (each lowers and compiles)")
    ap.add_argument("--cold-configs", type=int, default=2, help="configurations a cold process calls")
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("--timeout", type=float, default=540.0, help="seconds per child process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return 0

    import importlib.metadata as md
    names = list(CONFIGS)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    dev = device_name()
    load0 = _loadavg()
    t0 = time.perf_counter()
    # Warm: one unrecorded process fills the caches for every configuration, then the runs.
    print(f"warming the caches ({len(names)} configurations) ...", flush=True)
    prime = run_child(names, env, args.timeout)
    print(f"  done in {prime['process_wall_s']:.1f} s", flush=True)
    warm = []
    for i in range(args.runs):
        r = run_child(names, env, args.timeout)
        warm.append(r)
        print(f"warm {i + 1}/{args.runs}: import {r['import_ms']:.1f} ms, first {r['calls'][0]['ms']:.1f} ms, further "
              + ", ".join(f"{c['ms']:.1f}" for c in r["calls"][1:]) + " ms", flush=True)
    doc = {"date": datetime.date.today().isoformat(), "device": dev, "mode": warm[0]["mode"], "configs": names,
           "config_shapes": {n: dict(zip(("B", "T", "H", "varlen", "initial_state", "output_final_state",
                                          "fast_math"), CONFIGS[n])) for n in names},
           "budget_ms": {"import_plus_first": BUDGET_FIRST_MS, "further": BUDGET_FURTHER_MS},
           "warm": {"runs": len(warm), "summary": summarize(warm), "raw": warm,
                    "tilelang_imported": any(r["tilelang_imported"] for r in warm)}}
    if not args.no_cold and args.cold_runs > 0:
        cold = []
        for i in range(args.cold_runs):
            tmp = tempfile.mkdtemp(prefix="kda_startup_cold_")
            cenv = dict(env, TILELANG_CACHE_DIR=os.path.join(tmp, "tilelang"), KDA_TILE_CACHE=os.path.join(tmp, "kda"))
            try:
                r = run_child(names[:max(1, args.cold_configs)], cenv, args.timeout)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            cold.append(r)
            print(f"cold {i + 1}/{args.cold_runs}: import {r['import_ms']:.1f} ms, first {r['calls'][0]['ms']:.0f} ms, "
                  "further " + ", ".join(f"{c['ms']:.0f}" for c in r["calls"][1:]) + " ms", flush=True)
        doc["cold"] = {"runs": len(cold), "summary": summarize(cold), "raw": cold}
    w = doc["warm"]["summary"]
    over = []
    if w["import_plus_first_ms"]["max"] > BUDGET_FIRST_MS:
        over.append(f"import + first call {w['import_plus_first_ms']['max']:.1f} ms > {BUDGET_FIRST_MS:.0f}")
    over += [f"{n} {a['max']:.1f} ms > {BUDGET_FURTHER_MS:.0f}" for n, a in w["further_ms"].items()
             if a["max"] > BUDGET_FURTHER_MS]
    doc["verdict"] = "within budget (worst of the warm runs)" if not over else "OVER budget: " + "; ".join(over)
    try:
        import torch
        tv = torch.__version__
    except Exception:
        tv = "?"
    doc["env"] = {"python": platform.python_version(), "torch": tv, "tilelang": md.version("tilelang"),
                  "cpus": os.cpu_count(), "machine": " ".join(x for x in (platform.machine(), platform.processor()) if x),
                  "loadavg_1min_start_end": [load0, _loadavg()]}
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{doc['date']}-{_slug(dev)}-startup"
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(doc))
    print(markdown(doc))
    print(f"wrote {stem}.json and .md")
    return 0 if not over else 1


if __name__ == "__main__":
    sys.exit(main())
