"""A short table of an ncu --csv --page details report: per kernel launch, its duration, DRAM
and compute throughput, occupancy (theoretical and achieved), registers, shared memory a block
and warp cycles per issued instruction.

    python bench/ncu_summary.py REPORT.csv [...]
"""
import csv
import sys

METRICS = [("Duration", "us"), ("DRAM Throughput", "DRAM %"), ("Compute (SM) Throughput", "SM %"),
           ("Theoretical Occupancy", "occ th %"), ("Achieved Occupancy", "occ %"), ("Registers Per Thread", "regs"),
           ("Dynamic Shared Memory Per Block", "dyn smem"), ("Warp Cycles Per Issued Instruction", "cyc/inst")]


def rows(path):
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    out = {}
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"], r["Grid Size"], r["Block Size"])
        out.setdefault(key, {})[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    return out


def main():
    print(f"{'kernel':22s} {'grid':>14s} {'block':>12s} " + " ".join(f"{h:>9s}" for _, h in METRICS))
    for path in sys.argv[1:]:
        for (_, name, grid, block), m in rows(path).items():
            vals = []
            for metric, _ in METRICS:
                v, unit = m.get(metric, ("-", ""))
                if metric == "Duration" and unit in ("ms", "msecond"):
                    v = f"{float(v.replace(',', '')) * 1e3:.1f}"
                elif metric == "Duration" and unit in ("ns", "nsecond"):
                    v = f"{float(v.replace(',', '')) / 1e3:.1f}"
                vals.append(v)
            print(f"{name[:22]:22s} {grid:>14s} {block:>12s} " + " ".join(f"{v:>9s}" for v in vals))


if __name__ == "__main__":
    main()
