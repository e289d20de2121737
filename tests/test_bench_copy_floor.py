"""bench/copy_floor.py on the CPU: its kernels compile with K1's launch shape and cp.async copies,
and its byte count is K1's (the u0_in_k2 workspace: three K-wide rows, Ab and Mqk, gC)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))


def test_bytes_are_k1s():
    import copy_floor
    H, T = 96, 8192
    for C in (16, 32):
        read = 3 * T * H * 128 * 2
        ws = T * H * (3 * 128 + 2 * C) * 2 + (T // C) * H * 128 * 4
        assert copy_floor.bytes_moved(H, T, C) == read + ws
    assert abs(copy_floor.bytes_moved(H, T, 16) / 1e9 - 1.28) < 0.01


@pytest.mark.parametrize("C,threads,min_blocks", [(16, 64, 12), (32, 128, 5)])
def test_kernels_compile_with_k1s_shape(C, threads, min_blocks):
    import copy_floor
    src = copy_floor.compiled(C, threads, min_blocks).get_kernel_source()
    assert f"__launch_bounds__({threads}, {min_blocks})" in src
    assert src.count("cp_async_gs") == 3 and "cp_async_wait<0>" in src


def test_pipelined_copy_keeps_a_chunk_in_flight():
    """k1copy32 p4: four chunks a program in two slots, each wait leaving the next chunk's copies
    in flight (wait_group 1), the copies of chunk c + 2 issued in the loop."""
    import copy_floor
    src = copy_floor.compiled(32, 128, 4, 4).get_kernel_source()
    assert "__launch_bounds__(128, 4)" in src
    assert src.count("cp_async_gs") == 9 and "cp_async_wait<1>" in src and "for (int c = 0; c < 4; ++c)" in src
