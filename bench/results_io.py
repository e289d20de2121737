"""Where the benchmarks write: $OUT on the device machine (what comes back), else bench/results/."""
import json
import os
from pathlib import Path


def results_dir() -> Path:
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).resolve().parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_rows(name: str, rows: list, device_key: str = "device") -> Path:
    """rows as {device_key: the GPU's name, "rows": rows} in results_dir() / name."""
    import torch
    path = results_dir() / name
    path.write_text(json.dumps({device_key: torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return path
