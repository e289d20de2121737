"""K2 over several sequences a program (K2Config.seqs_per_program, issue 9's many short sequences),
on the CPU: what it accepts, its name, its grid, and the ring's per-role chunk counter that
verify's lockstep model reads. Not released; device round round24c times it against the released
K2 after checking it against float64."""
import dataclasses

import pytest

from kda_kernels import registry
from kda_kernels.configs import K2Config


def _released(varlen=True):
    return registry.find("k2", varlen=varlen, initial_state=None, final_state=False, chunk=16).config


def test_name_and_what_it_accepts():
    cfg = dataclasses.replace(_released(), seqs_per_program=8)
    assert cfg.name.endswith("_spp8")
    from kda_kernels.k2_recurrence import build_k2
    for bad in (dataclasses.replace(_released(varlen=False), seqs_per_program=8),
                K2Config(varlen=True, seqs_per_program=8)):          # no u0_in_k2
        with pytest.raises(AssertionError, match="several sequences a program"):
            build_k2(bad)


def test_grid_and_ring_counter():
    from verify.extract import extract
    from verify.lowering import lower
    from kda_kernels.k2_recurrence import build_k2
    cfg = dataclasses.replace(_released(), seqs_per_program=4)
    low = lower(build_k2(cfg))
    assert '"blockIdx.x": (N1 + 2) // 4' in low.device_script      # ceil((N1 - 1) / 4) programs a head block
    k = extract(low, list(cfg.preconditions()), dict(cfg.derived_vars()))
    waits = [s for s in k.sites if s.kind == "mbar" and s.op == "wait"]
    # every ring wait's barrier index comes from a chunk counter register in lockstep with it
    from verify.phases import Phases
    from verify import solver
    ph = Phases(k, solver.Ctx(k))
    assert waits and all(ph.lockstep(w) is not None for w in waits if w.mbar[0] in ("full", "empty"))
