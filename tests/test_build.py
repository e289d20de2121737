"""Every released build lowers and compiles to an sm_90a cubin with nvcc (no GPU needed)."""
import shutil

import pytest

from kda_tile import registry


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is required to build the kernels")
def test_every_released_build_compiles_for_sm90a(capsys):
    from kda_tile.__main__ import build
    assert build(jobs=2) == 0
    out = capsys.readouterr().out
    for b in registry.RELEASED:
        line = next(l for l in out.splitlines() if l.strip().startswith(b.name + " "))
        assert line.rstrip().endswith("ok"), line


def test_registry_names_are_unique_and_cover_the_api():
    names = [b.name for b in registry.RELEASED]
    assert len(set(names)) == len(names)
    for varlen in (False, True):
        for fast in (False, True):
            registry.find("k1", varlen=varlen, fast_math=fast)
        for h0 in (None, "float32", "bfloat16"):
            for ht in (False, True):
                for bv in (32, 64):
                    registry.find("k2", varlen=varlen, initial_state=h0, final_state=ht, block_v=bv)


def test_lowered_kernels_target_sm90a_and_use_wgmma_or_mma():
    k2 = registry.find("k2", varlen=True, initial_state="float32", final_state=True, block_v=64)
    art = registry.lower(k2)
    script = art.device_mod.script()
    assert '"arch": "sm_90a"' in script
    assert "ptx_wgmma" in script and "tma_load" in script
