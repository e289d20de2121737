"""bench/ncu_pipes.py on a hand-written excerpt of ncu's raw page (CSV, gzipped or not), no GPU."""
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import ncu_pipes  # noqa: E402

RAW = ('"ID","Kernel Name","sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",'
       '"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",'
       '"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active","dram__bytes.sum"\n'
       '"","","%","%","%","byte"\n'
       '"0","k1_prepare_kernel","31.5","40.2","0.5","1,000"\n'
       '"1","k1_other_kernel","28.0","37.1","0.7","2,000"\n')


def test_reads_each_kernels_pipes_from_a_gzipped_export(tmp_path, capsys):
    p = tmp_path / "raw.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write(RAW)
    ncu_pipes.main([str(p)])
    lines = capsys.readouterr().out.splitlines()
    # the units row is no kernel; ALU under 1% everywhere is left out; columns sorted by name
    assert lines[0].split()[1:] == ["cyc", "fma", "inst", "xu"] and len(lines) == 3
    assert lines[1].split()[0] == "k1_prepare_kernel" and lines[1].split()[1:] == ["40.2", "31.5"]
    assert lines[2].split()[1:] == ["37.1", "28.0"]


def test_all_shows_every_pipe(tmp_path, capsys):
    p = tmp_path / "raw.csv"
    p.write_text(RAW)
    ncu_pipes.main([str(p), "--all"])
    head = capsys.readouterr().out.splitlines()[0]
    assert "alu" in head and "dram" not in head
