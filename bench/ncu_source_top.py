"""The SASS instructions that hold a kernel's stall samples, from ncu's source page.

    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > src.csv
    python bench/ncu_source_top.py src.csv [N]

Reads the CSV whatever its exact columns: the row with "Source" (the SASS text) and the sampling
columns ("Warp Stall Sampling (All Samples)" or any column naming stalls). Prints the top N
instructions by samples with their share, the largest stall-reason columns of each, and the
share per opcode, so that the producer's and the consumers' waits can be told apart.
"""
import csv
import sys
from collections import Counter


def _num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return None


def main(path, n=25):
    rows = list(csv.reader(open(path, errors="replace")))
    heads = [i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r)]
    if not heads:
        print("no 'Source' column: not a source-page CSV"); return 1
    for k, head in enumerate(heads):   # one block per profiled kernel
        end = heads[k + 1] if k + 1 < len(heads) else len(rows)
        print(f"== block {k}")
        summarize(rows[head:end], n)
    return 0


def summarize(rows, n):
    head = 0
    h = [c.strip() for c in rows[head]]
    src = h.index("Source")
    addr = next((i for i, c in enumerate(h) if "Address" in c), None)
    total_col = next((i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All")), None)
    reason_cols = [i for i, c in enumerate(h) if "stall" in c.lower() and i != total_col
                   and "Not-issued" not in c and "Not Issued" not in c]
    body = [r for r in rows[head + 1:] if len(r) == len(h)]
    def samples(r):
        if total_col is not None:
            return _num(r[total_col]) or 0.0
        return sum(_num(r[i]) or 0.0 for i in reason_cols)
    tot = sum(samples(r) for r in body) or 1.0
    print(f"{len(body)} instructions, {tot:.0f} samples; columns: {len(reason_cols)} stall reasons")
    by_op = Counter()
    for r in body:
        words = [w for w in r[src].split() if not w.startswith("@")]
        by_op[words[0].split(".")[0] if words else "?"] += samples(r)
    print("by opcode: " + ", ".join(f"{op} {v / tot:.1%}" for op, v in by_op.most_common(12)))
    for r in sorted(body, key=samples, reverse=True)[:n]:
        reasons = sorted(((_num(r[i]) or 0.0, h[i]) for i in reason_cols), reverse=True)[:3]
        why = "; ".join(f"{name.replace('Warp Stall Sampling', '').strip(' ()')} {v:.0f}" for v, name in reasons if v)
        print(f"{samples(r) / tot:6.1%} {r[addr] if addr is not None else '':>8s} {r[src].strip()[:60]:60s} {why}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25))
