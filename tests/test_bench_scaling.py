"""bench/scaling.py without a GPU: the shapes issue 9 asks for, and the report from rows."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import scaling  # noqa: E402


def test_shapes_are_the_issues():
    split = scaling.shapes("split")
    assert [len(l) for _, l in split] == [1, 16, 256, 2048, 8192]
    assert all(H == 32 and sum(l) == 131072 and len(set(l)) == 1 for H, l in split)
    assert [(H, l) for H, l in scaling.shapes("long")] == [(8, [8192]), (8, [65536]), (8, [262144]), (8, [1048576])]


def test_report_from_rows(tmp_path):
    rows = [{"shape": "H32 2048x64", "H": 32, "lens": [64] * 2048, "T": 131072, "kda_tile_ms": 12.7,
             "fla_triton_ms": 25.4, "cudnn_fe_ms": None, "speedup_vs_fla_triton": 2.0,
             "kda_tile_k1_ms": 7.3, "kda_tile_k2_ms": 5.5},
            {"shape": "H8 1x65536", "H": 8, "lens": [65536], "T": 65536, "kda_tile_ms": 4.68}]
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = scaling.report(rows, tmp_path, {"date": "2000-01-01", "device": "none"})
    line = next(x for x in text.splitlines() if x.startswith("| H32 2048x64"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:7] == ["2048", "131072", "12.700", "25.400", "-", "96.893"]
    assert cells[7] == "2.00x" and cells[8] == "-" and cells[9] == "7.300 / 5.500"
    assert (tmp_path / "2000-01-01-scaling.md").read_text() == text


def test_state_floor_follows_the_rows_state_mode():
    r = {"shape": "H32 8192x16", "H": 32, "lens": [16] * 8192, "T": 131072}
    inout = scaling.state_floor_ms(r)
    assert abs(inout - 2 * 8192 * 32 * 128 * 128 * 4 / 4.27e12 * 1e3) < 1e-9
    assert scaling.state_floor_ms(dict(r, state="final")) == inout / 2
    assert scaling.state_floor_ms(dict(r, state="none")) == 0
    line = next(x for x in scaling.table([dict(r, state="none", kda_tile_ms=6.0)]).splitlines()
                if x.startswith("| H32"))
    assert line.startswith("| H32 8192x16, state none | 8192 |")
