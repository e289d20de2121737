"""K1's prologue knobs (session 22, released in session 23): early_loads (A_log, dt_bias and
beta loaded ahead of the q, k, g copies' wait) and lean_prologue (the copies' rows from registers:
the slot search's in varlen builds, the chunk's b and t0 in fixed ones). Each is proved by verify
(the released builds by `python -m verify`), and lean_prologue's point holds in the generated
source: no CTA barrier between the kernel's start and its first copy, where head_once has some."""
import pytest

from kda_kernels import registry
from kda_kernels.configs import K1Config


def _k1(chunk, varlen=True, **knobs):
    kw = dict(chunk=32, threads=128, min_blocks=5, rsqrt_nr=True, tail_unswitch=True) if chunk == 32 else {}
    return registry.Build("k1", K1Config(varlen=varlen, skip_holes=varlen, dyn_search=varlen, u0_in_k2=True,
                                         **kw, **knobs))


def _barriers_before_first_copy(build) -> int:
    src = registry.lower(build).kernel_source
    return src[:src.index("cp_async_gs")].count("__syncthreads()")


@pytest.mark.parametrize("varlen", [True, False])
@pytest.mark.parametrize("chunk", [16, 32])
def test_lean_prologue_issues_its_copies_before_any_barrier(chunk, varlen):
    assert _barriers_before_first_copy(_k1(chunk, varlen, head_once=True)) >= 1
    b = _k1(chunk, varlen, early_loads=True, lean_prologue=True)
    assert b.name.endswith("_el_lp")
    assert _barriers_before_first_copy(b) == 0


@pytest.mark.parametrize("chunk,slot_guess", [(16, False), (32, False), (16, True)])
def test_prologue_knobs_prove(chunk, slot_guess):
    """slot_guess (prepared in session 23): the search's first step at the sequence a batch of
    equal lengths gives; its two loads and the loads it spares stay inside cu_seqlens."""
    from verify.jobs import build_job
    from verify.report import PROVED
    from verify.runner import verify_job
    b = _k1(chunk, early_loads=True, lean_prologue=True, slot_guess=slot_guess)
    assert b.name.endswith("_el_lp_sg" if slot_guess else "_el_lp")
    r = verify_job(build_job(b))
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks]
