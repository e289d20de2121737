"""K1Config.rsqrt_nr (session 21; released on the accurate 32-token builds in session 22, on the
16-token ones in session 31): the row norms' 1/sqrt as rsqrt.approx plus one Newton step. Its
formula keeps ~1 ulp from any start within rsqrt.approx's error, verify proves the 32-token build
that uses it, and fast_math builds do not change."""
import numpy as np

from kda_kernels import _math
from kda_kernels.configs import K1Config


def newton(x, y):
    """_math.NR_SOURCE's step in float32 (its fmaf as a multiply and an add: one more rounding)."""
    f = np.float32
    return y * (f(-0.5) * x * y * y + f(1.5))


def test_one_newton_step_brings_rsqrt_approx_to_about_one_ulp():
    assert "fmaf(-0.5f * x * y, y, 1.5f)" in _math.NR_SOURCE
    x = np.logspace(-6, 6, 20001).astype(np.float32)
    exact = 1.0 / np.sqrt(x.astype(np.float64))
    for rel in (-2.0 ** -22.9, 0.0, 2.0 ** -22.9):   # rsqrt.approx's worst relative error either way
        y = newton(x, (exact * (1 + rel)).astype(np.float32))
        err = np.abs(y.astype(np.float64) - exact) / exact
        assert err.max() < 2.5 * 2.0 ** -24, (rel, err.max())
    # the step is what does it: a start 2^-12 off ends within ~2^-23 (quadratic convergence)
    y = newton(x, (exact * (1 + 2.0 ** -12)).astype(np.float32))
    assert (np.abs(y.astype(np.float64) - exact) / exact).max() < 2.0 ** -22


def test_rsqrt_nr_build_proves_and_names_itself():
    from kda_kernels.registry import Build
    from verify.jobs import build_job
    from verify.report import PROVED
    from verify.runner import verify_job
    cfg = K1Config(varlen=True, chunk=32, threads=128, min_blocks=5, skip_holes=True, dyn_search=True,
                   mqk_diag=True, u0_in_k2=True, rsqrt_nr=True)
    assert cfg.name.endswith("_ch32_rnr")
    assert K1Config(fast_math=True, rsqrt_nr=True).name == K1Config(fast_math=True).name  # fast_math: no effect
    r = verify_job(build_job(Build("k1", cfg)))
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks]
