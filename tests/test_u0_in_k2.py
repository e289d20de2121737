"""K1Config/K2Config.u0_in_k2 (bench/NOTES.md, sessions 16-17): K2 forms U0 = Ab v itself, so
the pair's workspace trades U0 [.., 128] for Ab [.., 16], and v moves from K1's parameters to
K2's. The kernels run on the GPU through bench/k2_round.py (u0k2) and the GPU matrix."""
import pytest

from kda_kernels.configs import K1Config, K2Config

WS_K2_READS = {"Wk", "kr", "gC"}


def _names(f):
    return [f.buffer_map[p].name if p in f.buffer_map else p.name for p in f.params]


@pytest.mark.parametrize("varlen", [False, True])
def test_k1_writes_ab_and_reads_no_v(varlen):
    from kda_kernels.k1_prepare import build_k1
    u0k2 = set(_names(build_k1(K1Config(varlen=varlen, u0_in_k2=True))))
    released = set(_names(build_k1(K1Config(varlen=varlen))))
    assert "Ab" in u0k2 and not {"v", "U0"} & u0k2
    assert {"v", "U0"} <= released and "Ab" not in released
    assert u0k2 - {"Ab"} == released - {"v", "U0"}


@pytest.mark.parametrize("mode", ["full", "map", "seg"])
def test_k2_reads_v_and_ab_in_every_mode(mode):
    from kda_kernels.k2_recurrence import build_k2
    cfg = K2Config(varlen=True, mode=mode, u0_in_k2=True)
    names = set(_names(build_k2(cfg)))
    assert {"v", "Ab"} | WS_K2_READS <= names and "U0" not in names
    assert "U0" in _names(build_k2(K2Config(varlen=True, mode=mode)))
    # v fixes T for pass A too, so its entry derives NC from T like the other passes
    assert cfg.derived_vars() == {"NC": "T // 16 + (N1 - 1)"}
    assert cfg.name.endswith("_u0k2")
