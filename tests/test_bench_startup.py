"""bench/startup.py's report (the measurement itself runs fresh processes for minutes: it is
run by hand and on the GPU machine, not in CI)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_startup_bench_report_renders():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import startup
    finally:
        sys.path.pop(0)
    calls = [{"config": n, "ms": 10.0 + i, "gate_ms": 1.0, "entry_ms": 5.0, "rest_ms": 4.0}
             for i, n in enumerate(startup.CONFIGS)]
    run = {"torch_import_ms": 900.0, "import_ms": 40.0, "calls": calls, "steady_ms": 0.1,
           "tilelang_imported": False, "mode": "check_inputs"}
    s = startup.summarize([run, run])
    doc = {"date": "2026-01-01", "device": "cpu", "mode": "m", "configs": list(startup.CONFIGS),
           "warm": {"runs": 2, "summary": s, "tilelang_imported": False}, "cold": {"runs": 1, "summary": s},
           "verdict": "within budget", "env": {"python": "3", "torch": "2", "tilelang": "0", "cpus": 2, "machine": "x"}}
    md = startup.markdown(doc)
    assert "| **import + first call** | **50.0 (50.0) ms** | 300 ms ok |" in md
    assert md.count("further:") == len(startup.CONFIGS) - 1
