"""verify on the released kernels: the lowering it checks is the one the gate hashes, a K1 and
a K2 build are proved (the full set runs in `python -m verify`, about two minutes), and
mutants of them that break synchronization are rejected."""
import dataclasses

import pytest

from kda_kernels import registry
from verify import mutate
from verify.ir import ir_hash
from verify.jobs import _registry_job
from verify.lowering import lower
from verify.report import PROVED, KernelReport
from verify.runner import verify_lowered
from verify.tir import op_name, tirx


def _first(stage):
    return next(b for b in registry.RELEASED if b.stage == stage)


@pytest.fixture(scope="module")
def lowered():
    out = {}
    for stage in ("k1", "k2"):
        b = _first(stage)
        out[stage] = (_registry_job(b.name), lower(b.prim_func(), registry.pass_configs(b), b.name))
    return out


def _verify(job, low, fn=None):
    if fn is not None:
        low = mutate.applied(low, fn)
    return verify_lowered(low, job, KernelReport(name=job.name))


def test_same_ir_as_the_gate(lowered):
    b = _first("k2")
    assert ir_hash(lowered["k2"][1].artifact) == registry.ir_hash(registry.lower(b))


@pytest.mark.parametrize("stage", ["k1", "k2"])
def test_release_build_proved(lowered, stage):
    r = _verify(*lowered[stage])
    bad = [(c.name, [f.message for f in c.findings]) for c in r.checks if c.status != PROVED]
    assert r.status == PROVED, bad
    assert {"bounds", "layout", "barriers", "banks"} <= {c.category for c in r.checks}


def _syncs(f, nargs):
    from tvm.tirx.stmt_functor import post_order_visit
    calls = []
    post_order_visit(f.body, lambda n: calls.append(n) if isinstance(n, tirx.Call)
                     and op_name(n) == "tirx.tvm_storage_sync" else None)
    return [i for i, c in enumerate(calls) if len(c.args) == nargs]


def _last_wait_parity_zero(f):
    return mutate.rewrite_call(f, "tl.mbarrier_wait_parity", lambda c: mutate.with_arg(c, 1, 0), nth=-1)


K2_MUTANTS = {
    # the consumers' wait for a filled ring slot: the wgmma reads race the TMA writes
    "k2_no_full_wait": (lambda f: mutate.drop_call(f, "tl.mbarrier_wait_parity", nth=0), {"barriers.race"}),
    # the loader's wait for a freed slot: the TMA overwrites what the consumers still read
    "k2_no_empty_wait": (lambda f: mutate.drop_call(f, "tl.mbarrier_wait_parity", nth=1), {"barriers.race"}),
    "k2_constant_parity": (_last_wait_parity_zero, {"barriers.parity", "barriers.race"}),
    "k2_wrong_tx_bytes": (lambda f: mutate.rewrite_call(f, "tl.mbarrier_expect_tx",
                                                        lambda c: mutate.with_arg(c, 1, 1024)),
                          {"barriers.mbarrier_phase"}),
}
# (the proxy-fence mutant left with the old K2, which wrote the state to shared memory for wgmma;
# this K2 has no generic-proxy writes that an async-proxy read follows: tests/seeded covers it)


@pytest.mark.parametrize("name", list(K2_MUTANTS))
def test_k2_mutants_rejected(lowered, name):
    fn, want = K2_MUTANTS[name]
    r = _verify(*lowered["k2"], fn)
    failed = {c.name for c in r.checks if c.status in ("failed", "unknown")}
    assert failed and failed <= want | {"barriers.race"} and failed & want, failed


def test_k1_without_barrier_rejected(lowered):
    # drop the block-wide barrier before the first wgmma: its operands are written just above
    # (the barrier checks only, and the first mutant caught ends it: each takes minutes)
    job, low = lowered["k1"]
    job = dataclasses.replace(job, only=("barriers",))
    idx = _syncs(low.device_func, 1)
    results = []
    for i in idx[1:4]:
        r = _verify(job, low, lambda f, i=i: mutate.drop_call(f, "tirx.tvm_storage_sync", nth=i))
        results.append({c.name for c in r.checks if c.status != PROVED})
        if "barriers.race" in results[-1]:
            break
    assert any("barriers.race" in s for s in results), results


def test_k1_skip_holes_returns_block_uniformly():
    """The varlen K1 (K1Config.skip_holes): one early return, which barriers.divergence checks is
    taken by whole blocks (every thread runs the slot search on read-only cu_seqlens)."""
    from tvm.tirx.stmt_functor import post_order_visit
    b = registry.find("k1", varlen=True, fast_math=False)
    assert b.config.skip_holes
    low = lower(b.prim_func(), registry.pass_configs(b), b.name)
    rets = []
    post_order_visit(low.device_func.body, lambda n: rets.append(n) if isinstance(n, tirx.Call)
                     and op_name(n) == "tirx.thread_return" else None)
    assert len(rets) == 1
    job = dataclasses.replace(_registry_job(b.name), only=("barriers",))
    r = _verify(job, low)
    div = next(c for c in r.checks if c.name == "barriers.divergence")
    assert div.status == PROVED and "1 early return" in div.detail, (div.status, div.detail)
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks if c.status != PROVED]


def test_k2_whole_chunk_store_needs_its_bound():
    """K2 stores a whole chunk of o with neither TileLang's guards (K2Config.pass_configs) nor a
    predicate per row: only `c C + C <= seqlen` keeps those stores inside the sequence and inside
    o. Weakened to `c C < seqlen` (a partial chunk stored whole), verify must reject the build by
    bounds (past T) and by the race with the next sequence's program."""
    b = registry.find("k2", varlen=True, initial_state="float32", final_state=True)
    assert registry.pass_configs(b).get("tl.disable_safe_memory_legalize")
    low = lower(b.prim_func(), registry.pass_configs(b), b.name)

    def weaken(f):
        out = mutate.rewrite_if(f, lambda t: t.endswith("+ 16 <= seqlen"), lambda c: tirx.LT(c.a.a, c.b))
        assert out.script() != f.script()
        return out
    r = _verify(_registry_job(b.name), low, weaken)
    failed = {c.name for c in r.checks if c.status != PROVED}
    assert {"bounds.global", "barriers.global_race"} <= failed, failed
