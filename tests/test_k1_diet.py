"""The 32-token K1's instruction diet (session 45): K1Config.norm_lanes (the row norms over four
lanes a row, one pass) and K1Config.inv_blocks at 32 tokens (each 16-row diagonal block's inverse
from its 8-row blocks: chains of 28 products on one warp, not 120). Their block arithmetic in
float64, the names and the configurations they refuse, and verify on the fixed build: proved
whole, and with the barrier between Y = L21 P1 and -P2 Y dropped, a race on X_s."""
import dataclasses

import numpy as np
import pytest

from kda_kernels import registry
from kda_kernels.configs import K1Config

C, SUB, HB = 32, 16, 8


def blocks_inverse(L):
    """block_inverse's inv_blocks steps, index for index (Ad_s is C x SUB, X_s SUB x SUB)."""
    Ad = np.full((C, SUB), np.nan)
    X = np.full((SUB, SUB), np.nan)
    for qb in range(2 * 2):
        for j in range(HB):
            acol = np.zeros(HB)
            for i in range(HB):
                acol[i] = (i == j) - sum(L[qb * HB + i, qb * HB + m] * acol[m] for m in range(i))
            Ad[qb * HB:(qb + 1) * HB, qb % 2 * HB + j] = acol
    for hb in range(2):
        for i in range(HB):
            for j in range(HB):
                X[hb * HB + i, j] = sum(L[hb * SUB + HB + i, hb * SUB + m] * Ad[hb * SUB + m, j] for m in range(HB))
    for hb in range(2):
        for i in range(HB):
            for j in range(HB):
                Ad[hb * SUB + HB + i, j] = -sum(Ad[hb * SUB + HB + i, HB + m] * X[hb * HB + m, j] for m in range(HB))
                Ad[hb * SUB + i, HB + j] = 0.0
    return Ad


@pytest.mark.parametrize("seed", range(3))
def test_eight_row_blocks_give_each_diagonal_blocks_inverse(seed):
    rng = np.random.default_rng(seed)
    L = np.tril(rng.standard_normal((C, C)) * 0.4, -1)
    Ad = blocks_inverse(L)
    for hb in range(2):
        blk = L[hb * SUB:(hb + 1) * SUB, hb * SUB:(hb + 1) * SUB]
        np.testing.assert_allclose(Ad[hb * SUB:(hb + 1) * SUB], np.linalg.inv(np.eye(SUB) + blk), atol=1e-12)


def _base():
    return registry.find("k1", varlen=False, fast_math=False, chunk=32)


def test_names_and_refusals():
    b = _base()
    cfg = dataclasses.replace(b.config, norm_lanes=4, inv_blocks=True)
    assert cfg.name.endswith("_ch32_rnr_tu_nl4_ib_el_lp")
    with pytest.raises(AssertionError, match="norm_lanes 3"):
        registry.Build("k1", dataclasses.replace(b.config, norm_lanes=3)).prim_func()
    with pytest.raises(AssertionError, match="inv_blocks takes"):
        registry.Build("k1", K1Config(inv_blocks=True)).prim_func()     # 16 tokens, 64 threads


@pytest.fixture(scope="module")
def diet_k1():
    from verify.jobs import build_job
    from verify.lowering import lower
    b = registry.Build("k1", dataclasses.replace(_base().config, norm_lanes=4, inv_blocks=True))
    return b, build_job(b), lower(b.prim_func(), registry.pass_configs(b), b.name)


def test_diet_k1_proves(diet_k1):
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = diet_k1
    got = {c.name: c.status for c in verify_lowered(low, job, KernelReport(name=b.name)).checks}
    assert got and all(s == PROVED for s in got.values()), got


def test_diet_k1_without_the_barrier_before_minus_p2_y_races(diet_k1):
    from verify import mutate
    from verify.report import PROVED, KernelReport
    from verify.runner import verify_lowered
    b, job, low = diet_k1
    lines = low.device_script.splitlines()
    syncs = [i for i, t in enumerate(lines) if "tvm_storage_sync" in t]
    nth = next(n for n, i in enumerate(syncs) if "z_1[0] = z_1[0] - Ad_s_1[" in "\n".join(lines[i:i + 3]))
    assert "X_s_1[" in lines[syncs[nth] - 3] + lines[syncs[nth] - 2] + lines[syncs[nth] - 1]
    cut = mutate.applied(low, lambda f: mutate.drop_call(f, "tirx.tvm_storage_sync", nth=nth))
    rep = verify_lowered(cut, dataclasses.replace(job, only=("barriers",)), KernelReport(name=b.name))
    race = next(c for c in rep.checks if c.name == "barriers.race")
    assert race.status != PROVED and any("X_s" in str(f) for f in race.findings), race
