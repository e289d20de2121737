"""Where a kernel's warps wait, from ncu's source page (SourceCounters: sampled stall reasons a
SASS instruction), exported on the device as CSV:

    ncu --section SourceCounters --section WarpStateStats ... -o rep python ...
    ncu --import rep.ncu-rep --page source --csv --print-source sass > rep_sass.csv
    python bench/ncu_stalls.py rep_sass.csv [--top 40] [--phases]

For each profiled kernel: its stall reasons as shares of all samples, the instructions holding
the most samples (a sample is charged to the instruction the warp waits to issue: the stall after
a barrier shows on the instruction behind the BAR), and with --phases the code between
consecutive block barriers: its share of executed instructions and of samples.
"""
import argparse
import csv


def kernels(path):
    """[(kernel name, header, rows)] of one source-page export."""
    out, hdr = [], None
    for r in csv.reader(open(path)):
        if r and r[0] == "Kernel Name":
            out.append([r[1], None, []])
        elif r and r[0] == "Address":
            hdr = r
        elif out and r:
            out[-1][1] = hdr
            out[-1][2].append(r)
    return out


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def report(name, hdr, rows, top, phases):
    ix = {n: i for i, n in enumerate(hdr)}
    reasons = [n for n in hdr if n.startswith("stall_") and "Not Issued" not in n]
    samples = [num(r[ix["Warp Stall Sampling (All Samples)"]]) for r in rows]
    executed = [num(r[ix["Instructions Executed"]]) for r in rows]
    tot_s, tot_e = sum(samples) or 1.0, sum(executed) or 1.0
    print(f"== {name}: {tot_s:.0f} samples, {tot_e:.3e} warp instructions executed")
    by = {n: sum(num(r[ix[n]]) for r in rows) for n in reasons}
    for n, v in sorted(by.items(), key=lambda x: -x[1])[:10]:
        print(f"  {n[6:]:22s} {v / tot_s * 100:5.1f}%")
    base = int(rows[0][0], 16)
    print("  instructions with the most samples (offset, share, executed, two largest reasons):")
    order = sorted(range(len(rows)), key=lambda i: -samples[i])[:top]
    for i in order:
        r = rows[i]
        two = sorted(((num(r[ix[n]]), n[6:]) for n in reasons), reverse=True)[:2]
        print(f"  {int(r[0], 16) - base:6x} {samples[i] / tot_s * 100:5.2f}% ex={executed[i]:.2e} "
              f"{r[1].strip()[:56]:56s} {two[0][1]}={two[0][0]:.0f} {two[1][1]}={two[1][0]:.0f}")
    if phases:
        print("  between block barriers (offsets; executed, samples; largest reasons):")
        start, s, e, agg = 0, 0.0, 0.0, dict.fromkeys(reasons, 0.0)
        for i, r in enumerate(rows):
            s, e = s + samples[i], e + executed[i]
            for n in reasons:
                agg[n] += num(r[ix[n]])
            last = i == len(rows) - 1
            if "BAR.SYNC" in r[1] or last:
                at = int(r[0], 16) - base
                big = sorted(agg.items(), key=lambda x: -x[1])[:3]
                print(f"  {start:6x}-{at:6x} exec {e / tot_e * 100:5.1f}% samples {s / tot_s * 100:5.1f}%  "
                      + " ".join(f"{n[6:]}={v / tot_s * 100:.1f}" for n, v in big))
                start, s, e, agg = at + 16, 0.0, 0.0, dict.fromkeys(reasons, 0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--phases", action="store_true")
    a = ap.parse_args()
    for name, hdr, rows in kernels(a.csv):
        report(name, hdr, rows, a.top, a.phases)


if __name__ == "__main__":
    main()
