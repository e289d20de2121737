"""bench/host_interleaved.py without a GPU: the floor's C++ builds against this TVM-FFI, and the
summary pairs block medians."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import host_interleaved  # noqa: E402


def test_summary_pairs_blocks():
    r = host_interleaved.summarize([5.1, 9.0, 5.2], [3.0, 7.1, 3.1])
    assert r["ours_us"] == 5.2 and r["floor_us"] == 3.1
    assert r["above_floor_us"] == 2.1   # a slow block pair (9.0 against 7.1) moves both kinds alike


def test_floor_source_builds(tmp_path):
    import tvm_ffi
    import tvm_ffi.cpp
    (tmp_path / "floor.cc").write_text(host_interleaved.SOURCE)
    so = tvm_ffi.cpp.build("host_interleaved_floor_test", cpp_files=[str(tmp_path / "floor.cc")],
                           build_directory=str(tmp_path / "build"), extra_cflags=["-O2", "-std=c++17"],
                           extra_ldflags=["-ldl"])
    mod = tvm_ffi.load_module(so)
    assert mod["floor_call"] is not None and mod["setup"] is not None
