"""The peer benchmark's mode selection and batching, on the CPU (the timing itself runs on the H200)."""
import sys
from pathlib import Path

import pytest

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import bench_peers as BP  # noqa: E402


def test_pick_takes_the_fastest_agreeing_mode():
    results = [
        {"mode": "a", "ms": 1.0, "agrees": False},           # fastest, but computes something else
        {"mode": "b", "ms": 2.0, "agrees": True},
        {"mode": "c", "ms": 1.5, "agrees": True},
        {"mode": "d", "error": "RuntimeError: unsupported"},  # could not run
    ]
    assert BP.pick(results)["mode"] == "c"
    assert BP.pick([{"mode": "a", "ms": 1.0, "agrees": False}]) is None
    assert BP.pick([]) is None


def test_fixed_rows_are_the_same_tokens_as_the_packed_batch():
    lens = [5, 5, 5]
    T, H = sum(lens), 2
    d = {k: torch.randn(1, T, H, 4) for k in ("q", "k", "v", "g")}
    d["beta"] = torch.randn(1, T, H)
    f = BP._fixed(d, lens)
    assert f["q"].shape == (3, 5, H, 4) and f["beta"].shape == (3, 5, H)
    for key in ("q", "k", "v", "g", "beta"):
        assert torch.equal(f[key].reshape(d[key].shape), d[key])


def test_every_library_offers_modes_for_equal_and_ragged_lengths():
    d = {"q": torch.zeros(1, 6, 1, 4)}
    for key in ("k", "v", "g"):
        d[key] = d["q"]
    d["beta"] = torch.zeros(1, 6, 1)
    ragged = BP.modes(d, [2, 4])
    equal = BP.modes(d, [3, 3])
    assert set(ragged) == set(equal) == {"kda_tile", "fla_triton", "cudnn_fe"}
    assert len(equal["fla_triton"]) == len(ragged["fla_triton"]) + 1  # the plain batch only on equal lengths
    assert len(equal["kda_tile"]) == len(ragged["kda_tile"]) + 1


def test_summary_takes_issue_13s_shapes_by_label():
    rows = [{"shape": BP.label(*s), "kda_tile_ms": 1.0, "fla_triton_ms": 2.0, "cudnn_fe_ms": 4.0}
            for s in BP.SHAPES]
    sm = BP.summary(rows)
    assert sm["faster_on_first_7"] is True and abs(sm["geomean_first_6"] - 0.5) < 1e-12
    rows[2]["cudnn_fe_ms"] = 0.9                      # a peer wins one of the first seven
    sm = BP.summary(rows)
    assert sm["faster_on_first_7"] is False and sm["ratio_to_best_peer"][rows[2]["shape"]] > 1
    assert BP.summary(rows[1:])["geomean_first_6"] is None   # a missing shape gives no verdict
    rows[3]["fla_triton_ms"] = rows[3]["cudnn_fe_ms"] = None  # no peer time: no ratio
    assert BP.summary(rows)["faster_on_first_7"] is None


def test_report_from_rows_of_two_runs(tmp_path, monkeypatch):
    import json
    first = tmp_path / "a.jsonl"
    second = tmp_path / "b.jsonl"
    rows = [{"shape": BP.label(*s), "kda_tile_ms": 1.0, "fla_triton_ms": 3.0, "cudnn_fe_ms": 2.0,
             "device": "NVIDIA H100 80GB HBM3"} for s in BP.SHAPES]
    first.write_text("\n".join(json.dumps(r) for r in rows[3:7]) + "\n")
    second.write_text("\n".join(json.dumps(r) for r in rows[:4]) + "\n")   # shape 4 again: this row wins
    monkeypatch.setattr(sys, "argv", ["bench_peers.py", "--out", str(tmp_path / "rep"), "--from-rows", str(first),
                                      str(second)])
    BP.main()
    assert not list((tmp_path / "rep").glob("*-h200.*"))      # the rows' card names the files
    md = next((tmp_path / "rep").glob("*-h100.md")).read_text()
    assert md.startswith("# KDA forward on NVIDIA H100 80GB HBM3")
    assert "geomean of that ratio over the first six shapes: 0.500" in md
    table = [line for line in md.splitlines() if line.startswith("| H")]
    assert [line.split(" | ")[0][2:] for line in table] == [BP.label(*s) for s in BP.SHAPES[:7]]


def test_rows_merge_library_by_library_and_missing_peers_are_named(tmp_path, monkeypatch):
    """A run that left fla out (BENCH_LIBS) keeps an earlier run's fla times for the same shapes
    (named as such, speed-ups taken again against the later kda_tile time); a peer with no time
    anywhere is named in the report, since a ratio to the remaining peer can flatter us."""
    import json
    first = tmp_path / "old" / "peers-rows.jsonl"
    second = tmp_path / "new" / "peers-rows.jsonl"
    first.parent.mkdir()
    second.parent.mkdir()
    old = [{"shape": BP.label(*s), "kda_tile_ms": 2.0, "fla_triton_ms": 3.0, "speedup_vs_fla_triton": 1.5,
            "cudnn_fe_ms": 8.0} for s in BP.SHAPES]
    new = [{"shape": BP.label(*s), "kda_tile_ms": 1.0, "cudnn_fe_ms": 4.0} for s in BP.SHAPES]
    first.write_text("\n".join(json.dumps(r) for r in old[1:]) + "\n")     # no old row for shape 0
    second.write_text("\n".join(json.dumps(r) for r in new) + "\n")
    merged = BP.merge_rows(dict(old[1], _source="old"), new[1])
    assert merged["fla_triton_ms"] == 3.0 and merged["fla_triton_source"] == "old"
    assert merged["speedup_vs_fla_triton"] == 3.0 and merged["cudnn_fe_ms"] == 4.0 and merged["kda_tile_ms"] == 1.0
    monkeypatch.setattr(sys, "argv", ["bench_peers.py", "--out", str(tmp_path / "rep"), "--from-rows", str(first),
                                      str(second)])
    with pytest.raises(SystemExit, match="one device a report"):
        BP.main()                                             # rows that name no device, and no BENCH_DEVICE
    monkeypatch.setenv("BENCH_DEVICE", "NVIDIA H200")
    BP.main()
    md = next((tmp_path / "rep").glob("*-h200.md")).read_text()
    # shapes 1-5 compare with fla (3.0 < 4.0), shape 0 only with cuDNN: (1/4 * (1/3)^5)^(1/6)
    assert "geomean of that ratio over the first six shapes: 0.318" in md
    assert f"**Not every peer has a time**: {BP.label(*BP.SHAPES[0])}: fla_triton." in md
    assert "fla_triton from old" in md


def test_card_names_the_device():
    assert BP.card("NVIDIA H100 80GB HBM3") == "h100"
    assert BP.card("NVIDIA H200") == "h200"
    assert BP.card("NVIDIA A100-SXM4-80GB") == "a100"


def test_bench_libs_rejects_a_name_that_is_no_library(monkeypatch):
    """BENCH_LIBS=fla (bench_peers calls it fla_triton) once timed no fla at all and said nothing
    (session 36, round 36p): a name that is no library stops the run, naming what it takes."""
    monkeypatch.setenv("BENCH_LIBS", "kda_tile,fla")
    with pytest.raises(SystemExit, match="BENCH_LIBS: expected names among kda_tile, fla_triton, cudnn_fe, got fla"):
        BP.bench_libs()
    monkeypatch.setenv("BENCH_LIBS", "kda_tile,cudnn_fe")
    assert BP.bench_libs() == "kda_tile,cudnn_fe"
    monkeypatch.delenv("BENCH_LIBS")
    assert BP.bench_libs() is None
