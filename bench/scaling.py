"""Scaling benchmark (issue 9): time against the number of sequences at a fixed total T, and
against T for one long sequence with few heads, kda_tile and its peers in one process on the
same inputs (bench_peers.run_shape: every call mode of each library, each checked against ours
first; fp32 initial and final state, or as BENCH_STATE says: "final", no initial state and the
final state out, as a serving prefill of fresh prompts calls it; "none", neither).

    python bench/scaling.py [--out DIR] [--only split|long] [--seqs 256,2048,8192] [--plot-only FILE.jsonl]

  split  H32, total T = 131072 as 1, 16, 256, 2048 and 8192 equal sequences
  long   H8, one sequence of T = 8K, 64K, 256K and 1M

Writes DIR/scaling-rows.jsonl (one row per shape, as it finishes), DIR/<date>-scaling.md (a table
of medians and ratios, with time per million tokens) and DIR/<date>-scaling.png (time against
sequence count and against T). DIR defaults to $OUT or bench/results.
"""
import argparse
import datetime
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

SPLIT = [(32, [131072 // n] * n) for n in (1, 16, 256, 2048, 8192)]
LONG = [(8, [t]) for t in (8192, 65536, 262144, 1048576)]
LIBS = ("kda_tile", "fla_triton", "cudnn_fe")


def shapes(only):
    return {"split": SPLIT, "long": LONG, None: SPLIT + LONG}[only]


def table(rows) -> str:
    lines = ["| shape | sequences | T | kda_tile ms | fla ms | cuDNN ms | kda_tile ms / M tokens | "
             "vs fla | vs cuDNN | K1 / K2 ms | state floor ms |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def f(x, fmt="{:.3f}"):
        return "-" if x is None else fmt.format(x)
    for r in rows:
        ours = r.get("kda_tile_ms")
        per_m = ours / (r["T"] / 1e6) if ours else None
        lines.append(
            f"| {r['shape']}{state_tag(r)} | {len(r['lens'])} | {r['T']} | {f(ours)} | {f(r.get('fla_triton_ms'))} | "
            f"{f(r.get('cudnn_fe_ms'))} | {f(per_m)} | {f(r.get('speedup_vs_fla_triton'), '{:.2f}x')} | "
            f"{f(r.get('speedup_vs_cudnn_fe'), '{:.2f}x')} | "
            f"{f(r.get('kda_tile_k1_ms'))} / {f(r.get('kda_tile_k2_ms'))} | {f(state_floor_ms(r))} |")
    lines += ["", f"State floor: reading the fp32 initial state and writing the fp32 final state once, as the "
              f"row's state mode asks (N x HV x 128 x 128 x 4 bytes each way) at {HBM_TBPS} TB/s, a bound "
              f"every library's call has."]
    return "\n".join(lines)


HBM_TBPS = 4.27


def state_tag(r) -> str:
    """The row's state mode where it is not the default (fp32 state in and out)."""
    return "" if r.get("state", "inout") == "inout" else f", state {r['state']}"


def state_floor_ms(r) -> float:
    """ms to read and write the rows' fp32 states once at HBM_TBPS (as many ways as the row's state
    mode moves them: inout 2, final 1, none 0)."""
    ways = {"inout": 2, "final": 1, "none": 0}[r.get("state", "inout")]
    return ways * len(r["lens"]) * r.get("HV", r["H"]) * 128 * 128 * 4 / (HBM_TBPS * 1e12) * 1e3


def plot(rows, path: Path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    split = [r for r in rows if r["H"] == 32]
    long = [r for r in rows if r["H"] == 8]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, group, xkey, xlabel in ((axes[0], split, lambda r: len(r["lens"]), "sequences (H32, total T = 131072)"),
                                    (axes[1], long, lambda r: r["T"], "T (H8, one sequence)")):
        for lib in LIBS:
            pts = [(xkey(r), r[f"{lib}_ms"]) for r in group if r.get(f"{lib}_ms")]
            if pts:
                ax.plot(*zip(*sorted(pts)), marker="o", label=lib)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("ms per call (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def report(rows, out: Path, meta: dict) -> str:
    date = meta.get("date") or datetime.date.today().isoformat()
    md = [f"# Scaling ({date}, {meta.get('device', '?')})", "",
          meta.get("timing", ""), "", table(rows), ""]
    if plot(rows, out / f"{date}-scaling.png"):
        md.append(f"![scaling]({date}-scaling.png)")
    text = "\n".join(md) + "\n"
    (out / f"{date}-scaling.md").write_text(text)
    (out / f"{date}-scaling.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or str(Path(__file__).parent / "results"))
    ap.add_argument("--only", choices=["split", "long"])
    ap.add_argument("--seqs", default=None, help="only the rows of these sequence counts (comma-separated)")
    ap.add_argument("--plot-only", help="rows already measured (a scaling-rows.jsonl): report them")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.plot_only:
        rows = [json.loads(x) for x in Path(args.plot_only).read_text().splitlines() if x.strip()]
        print(report(rows, out, {"timing": "(re-reported from " + args.plot_only + ")"}))
        return
    os.environ.setdefault("FLA_FLASH_KDA", "0")
    import torch
    from triton.testing import do_bench

    import bench_peers
    bench_peers.bench_libs()     # a misspelt library fails here, before any row runs
    rows = []
    todo = shapes(args.only)
    if args.seqs:
        todo = [(H, lens) for H, lens in todo if len(lens) in {int(x) for x in args.seqs.split(",")}]
    for i, (H, lens) in enumerate(todo):
        row = bench_peers.run_shape(i, H, lens, do_bench)
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(out / "scaling-rows.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
    meta = {"date": datetime.date.today().isoformat(), "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "timing": ("triton.testing.do_bench median (warmup 25 ms, rep 200 ms); state "
                       + {"inout": "fp32 h0 and ht", "final": "fp32 ht only", "none": "none in or out"}[bench_peers.STATE]
                       + "; libraries: " + (os.environ.get("BENCH_LIBS") or "all") + "; each library in "
                       "its fastest call mode whose output agrees with kda_tile's (bench_peers.run_shape)")}
    print(report(rows, out, meta))


if __name__ == "__main__":
    main()
