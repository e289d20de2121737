"""bench/ncu_stalls.py on a hand-written excerpt of ncu's source page (CSV), no GPU needed."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import ncu_stalls  # noqa: E402

HDR = ('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
       '"stall_barrier","stall_long_sb","stall_selected","stall_barrier (Not Issued)"')
ROWS = ['"0x7f0000000000","LDG.E R2, desc[UR4][R4.64]","10","100","0","0","10","0"',
        '"0x7f0000000010","BAR.SYNC.DEFER_BLOCKING 0x0","30","100","0","30","0","0"',
        '"0x7f0000000020","STS [R3], R2","50","100","50","0","0","7"',
        '"0x7f0000000030","EXIT","10","100","0","0","10","0"']


def _write(tmp_path, kernels=2):
    text = ""
    for i in range(kernels):
        text += f'"Kernel Name","k{i}",\n{HDR}\n' + "\n".join(ROWS) + "\n"
    p = tmp_path / "src.csv"
    p.write_text(text)
    return p


def test_reads_each_kernel_of_an_export(tmp_path):
    ks = ncu_stalls.kernels(str(_write(tmp_path)))
    assert [k[0] for k in ks] == ["k0", "k1"] and all(len(k[2]) == 4 for k in ks)


def test_shares_top_instructions_and_phases(tmp_path, capsys):
    name, hdr, rows = ncu_stalls.kernels(str(_write(tmp_path, 1)))[0]
    ncu_stalls.report(name, hdr, rows, top=2, phases=True)
    out = capsys.readouterr().out
    # reasons as shares of all 100 samples, the "(Not Issued)" columns left out
    assert "barrier                 50.0%" in out and "long_sb                 30.0%" in out
    assert "stall_barrier (Not" not in out and "barrier (Not" not in out
    # the instruction behind the barrier holds the most samples, at its offset from the kernel's start
    top = [x for x in out.splitlines() if "ex=" in x]
    assert "STS [R3], R2" in top[0] and top[0].split()[0] == "20" and len(top) == 2
    # two phases: up to the barrier, and after it
    ph = [x for x in out.splitlines() if " exec " in x]
    assert len(ph) == 2 and "exec  50.0% samples  40.0%" in ph[0] and "samples  60.0%" in ph[1]
