"""Every released build lowers and compiles to an sm_90a cubin with nvcc (no GPU needed)."""
import re
import shutil

import pytest

from kda_kernels import registry


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is required to build the kernels")
def test_every_released_build_compiles_for_sm90a(capsys):
    """`python -m kda_tile build` (kernels; the host entries have their own tests): every build
    gets an sm_90a cubin and its host spec; a second run finds them cached and still reports
    each kernel's real shared memory and cubin size."""
    from kda_tile.__main__ import build
    n = len(registry.RELEASED)
    for run in ("first", "cached"):
        assert build(jobs=2, entries=False) == 0
        out = capsys.readouterr().out
        for b in registry.RELEASED:
            line = next(ln for ln in out.splitlines() if f"] {b.name} " in ln)
            assert f"/{n}] " in line and " ok " in line, line
            smem = int(re.search(r"smem +(\d+) B", line).group(1))
            assert smem > 0 and "threads" in line and "cubin" in line, line
            if run == "cached":
                assert " cached " in line, line
        assert f"built {n}/{n} kernels" in out


def test_build_host_entry_phase_reports_its_pair():
    from kda_tile._build import _entry_one
    r = _entry_one(0)
    assert r["status"] == "ok" and " + " in r["name"]


def test_registry_names_are_unique_and_cover_the_api():
    names = [b.name for b in registry.RELEASED]
    assert len(set(names)) == len(names)
    for varlen in (False, True):
        for fast in (False, True):
            registry.find("k1", varlen=varlen, fast_math=fast)
        for h0 in (None, "float32", "bfloat16"):
            for ht in (False, True):
                registry.find("k2", varlen=varlen, initial_state=h0, final_state=ht)


def test_lowered_kernels_target_sm90a_and_use_wgmma_or_mma():
    k2 = registry.find("k2", varlen=True, initial_state="float32", final_state=True)
    art = registry.lower(k2)
    script = art.device_mod.script()
    assert '"arch": "sm_90a"' in script
    assert "ptx_wgmma" in script and "tma_load" in script
