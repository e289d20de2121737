"""bench/decode.py without a GPU: the shapes issue 12 asks for, and the report from rows."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import decode as bench_decode  # noqa: E402


def test_shapes_are_the_issues():
    assert bench_decode.NS == (1, 8, 64, 256, 1024) and bench_decode.H == bench_decode.HV == 32


def test_report_from_rows():
    rows = [dict(N=64, H=32, HV=32, P=128, state="float32", ours_us=77.3, ours_out_us=77.0, fla_us=92.0,
                 fla_vs_ours=92.0 / 77.3, copy_us=68.5, ours_GBps=868.0, pct_of_copy=88.6, ours_host_us=4.1,
                 ours_out_host_us=5.2, fla_host_us=30.0, ours_host_again_us=4.3, ours_out_host_again_us=5.0,
                 agree_o_vs_fla=1.2e-3),
            dict(N=1, H=32, HV=32, P=2, state="bfloat16", ours_us=8.0, ours_out_us=8.1, copy_us=6.0, ours_GBps=16.0,
                 pct_of_copy=75.0, ours_host_us=4.0, ours_out_host_us=5.0)]
    meta = dict(gpu="none", launch_floor_us=2.5, launch_floor="fill_", cudnn="none")
    text = bench_decode.report(rows, meta)
    cells = [c.strip() for c in next(x for x in text.splitlines() if x.startswith("| float32")).strip("|").split("|")]
    assert cells == ["float32", "64", "77.30", "77.00", "92.00", "1.19", "68.50", "868", "89", "4.10 / 5.20 / 30.00",
                     "4.30 / 5.00", "1.2e-03"]
    cells = [c.strip() for c in next(x for x in text.splitlines() if x.startswith("| bfloat16")).strip("|").split("|")]
    assert cells[4:6] == ["-", "-"] and cells[-2] == "- / -" and cells[-1] == "-"
    assert "Launch floor 2.50 us (fill_)" in text
