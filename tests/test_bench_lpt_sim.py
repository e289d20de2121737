"""bench/lpt_sim.py: its calibration rows stay where the H200 measured K2, and longest-first never
loses to today's order."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import lpt_sim  # noqa: E402


def test_calibration_and_order():
    assert abs(lpt_sim.simulate(lpt_sim.programs(96, [8192], False)) / 1e3 - 0.435) < 0.02
    assert abs(lpt_sim.simulate(lpt_sim.programs(96, [1024] * 16, False)) / 1e3 - 0.70) < 0.05
    ragged = [1300, 547, 2048, 963, 271, 3063]
    today = lpt_sim.simulate(lpt_sim.programs(96, ragged, False))
    first = lpt_sim.simulate(lpt_sim.programs(96, ragged, True))
    assert first < 0.85 * today
