"""K2 longest first (K2Config.longest_first; session 28, not released): programs reach their
sequence through `order` (a permutation, longest first), the rank in grid y so that the longest
sequences' programs launch first. A program whose entry is outside [0, N) leaves before it
touches memory, so every state mode proves with `order` declared DISTINCT, and the grid's digit
order is the one the design rests on."""
import dataclasses
import re

import pytest

from kda_kernels import registry
from kda_kernels.configs import K2Config


def _lf(chunk=16, **state):
    return registry.Build("k2", K2Config(varlen=True, u0_in_k2=True, chunk=chunk, longest_first=True, **state))


def test_grid_puts_the_rank_in_y_and_the_precondition_caps_n():
    b = _lf()
    assert b.name.endswith("_lf")
    assert b.config.distinct() == ("order",)
    assert "N1 <= 65536" in b.config.preconditions()
    src = registry.lower(b).kernel_source
    assert {i for i in re.findall(r"order\[([^\]]*)\]", src)} == {"((int64_t)((int)blockIdx.y))"}


def test_only_varlen_full_one_sequence_a_program():
    with pytest.raises(AssertionError):
        registry.Build("k2", K2Config(varlen=False, u0_in_k2=True, longest_first=True)).prim_func()


@pytest.mark.parametrize("chunk,state", [(16, dict(initial_state=None, final_state=False)),
                                         (32, dict(initial_state="float32", final_state=True))])
def test_longest_first_proves(chunk, state):
    from verify.jobs import build_job
    from verify.report import PROVED
    from verify.runner import verify_job
    r = verify_job(build_job(_lf(chunk, **state)))
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks if c.status != PROVED]


def test_without_distinct_the_race_is_found():
    """The proof rests on `order`'s entries differing: without that declaration two ranks may name
    one sequence, and barriers.global_race says so."""
    from verify.jobs import build_job
    from verify.report import FAILED
    from verify.runner import verify_job
    job = dataclasses.replace(build_job(_lf()), distinct=(), only=("barriers",))
    r = verify_job(job)
    race = [c for c in r.checks if c.name == "barriers.global_race"]
    assert race and race[0].status == FAILED, [(c.name, c.status) for c in r.checks]
