"""Instructions executed and stall samples by CUDA source line, from ncu's source page.

    ncu --import REPORT.ncu-rep --page source --csv --print-source cuda > lines.csv
    python bench/ncu_lines.py lines.csv[.gz] [N] [--ranges A-B:label,C-D:label,...]

The kernel must carry line info (TileLang's nvcc flags add -lineinfo). Prints the N lines with
the most executed warp instructions, each with its share of the kernel's instructions and stall
samples, and, with --ranges, the totals of line ranges of the generated source (a kernel's
stages), so that instruction cuts can be aimed where the dynamic count is, not the static one.
"""
import csv
import gzip
import io
import sys


def _num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return 0.0


def read(path):
    raw = gzip.open(path, "rt", errors="replace") if path.endswith(".gz") else open(path, errors="replace")
    rows = list(csv.reader(io.StringIO(raw.read())))
    head = next(i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r))
    h = [c.strip() for c in rows[head]]
    col = lambda pred: next((i for i, c in enumerate(h) if pred(c)), None)  # noqa: E731
    src = h.index("Source")
    line = col(lambda c: c in ("#", "Line", "Line Number"))
    inst = col(lambda c: c.startswith("Instructions Executed") or c == "Warp Instructions Executed")
    samp = col(lambda c: c.startswith("Warp Stall Sampling (All"))
    if inst is None:
        raise SystemExit(f"no executed-instructions column among {h}")
    out = []
    for k, r in enumerate(rows[head + 1:], 1):
        if len(r) <= max(src, inst):
            continue
        n = int(_num(r[line])) if line is not None and _num(r[line]) else k
        out.append((n, _num(r[inst]), _num(r[samp]) if samp is not None else 0.0, r[src].strip()))
    return out


def main(argv):
    path = argv[0]
    n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 30
    ranges = []
    if "--ranges" in argv:
        for part in argv[argv.index("--ranges") + 1].split(","):
            span, label = part.split(":", 1)
            a, b = span.split("-")
            ranges.append((int(a), int(b), label))
    rows = read(path)
    ti = sum(r[1] for r in rows) or 1.0
    ts = sum(r[2] for r in rows) or 1.0
    print(f"{ti:.0f} warp instructions executed, {ts:.0f} stall samples, {len(rows)} lines")
    for ln, i, s, text in sorted(rows, key=lambda r: -r[1])[:n]:
        print(f"L{ln:<5d} {100 * i / ti:5.1f}% inst {100 * s / ts:5.1f}% samples  {text[:90]}")
    if ranges:
        print("by range:")
        for a, b, label in ranges:
            i = sum(r[1] for r in rows if a <= r[0] <= b)
            s = sum(r[2] for r in rows if a <= r[0] <= b)
            print(f"  {label:24s} L{a}-{b}: {100 * i / ti:5.1f}% inst {100 * s / ts:5.1f}% samples")


if __name__ == "__main__":
    main(sys.argv[1:])
