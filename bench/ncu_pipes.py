"""Pipe utilization of each profiled kernel from ncu's raw page.

    ncu --import REPORT --csv --page raw > raw.csv      (gzip it or not)
    python bench/ncu_pipes.py raw.csv[.gz] [--all]

Prints, a kernel a row, the pipes' share of their peak over the SM's active cycles (the
ComputeWorkloadAnalysis section collects them): which unit a work-bound kernel is held by. Only
pipes above 1% in some kernel are shown unless --all.
"""
import csv
import gzip
import re
import sys

PIPE = re.compile(r"^sm__(?:inst_executed_pipe_(\w+?)|pipe_(\w+?)_cycles_active)"
                  r"\.avg\.pct_of_peak_sustained_active$")


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    # the raw page's second row holds units; kernels follow
    body = [r for r in rows[1:] if r and r[0].strip().isdigit()]
    return head, body


def pipes(head, row):
    out = {}
    for name, val in zip(head, row):
        m = PIPE.match(name)
        if not m:
            continue
        try:
            out[("inst " + m.group(1)) if m.group(1) else ("cyc " + m.group(2))] = float(val.replace(",", ""))
        except ValueError:
            pass
    return out


def main(argv):
    show_all = "--all" in argv
    paths = [a for a in argv if not a.startswith("--")]
    if len(paths) != 1:
        sys.exit("usage: python bench/ncu_pipes.py RAW.csv[.gz] [--all]")
    head, body = read(paths[0])
    name_col = head.index("Kernel Name") if "Kernel Name" in head else None
    per = [(row[name_col][:40] if name_col is not None else str(i), pipes(head, row)) for i, row in enumerate(body)]
    keys = sorted({k for _, p in per for k, v in p.items() if show_all or v >= 1.0})
    if not keys:
        print("no pipe metrics in", paths[0])
        return
    print("kernel".ljust(40), " ".join(k.rjust(12) for k in keys))
    for name, p in per:
        print(name.ljust(40), " ".join(f"{p.get(k, float('nan')):12.1f}" for k in keys))


if __name__ == "__main__":
    main(sys.argv[1:])
