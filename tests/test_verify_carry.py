"""`python -m verify` carries a proved record's verdict over to a build whose proof key (the
program before lowering, pass configs, toolchain, every non-IR input of the checks, the
verifier's sources, Z3) and lowered IR hash equal the record's, and proves everything else."""
import dataclasses

import pytest

from kda_kernels import registry
from verify import __main__ as cli
from verify import manifest, runner
from verify.jobs import build_job
from verify.report import PROVED

BUILD = registry.BY_NAME["kda_decode_f32_bv16_1t"]   # the quickest released build to prove (~3 s)


@pytest.fixture(scope="module")
def proved():
    r = runner.verify_job(build_job(BUILD))
    assert r.status == PROVED and not r.carried and len(r.proof_key) == 64
    return r


def _prior(r, **changes):
    rec = {"status": r.status, "proof_key": r.proof_key, "ir_hash": r.ir_hash,
           "checks_passed": sorted(c.name for c in r.checks if c.status == PROVED), "checks_failed": []}
    rec.update(changes)
    return manifest.prior(rec)


def test_matching_record_is_carried_without_the_solver(proved, monkeypatch):
    def no_checks(*a, **k):
        raise AssertionError("the checks ran for a carried build")
    monkeypatch.setattr(runner, "verify_lowered", no_checks)
    r = runner.verify_job(build_job(BUILD), prior=_prior(proved))
    assert r.carried and r.status == PROVED and r.ir_hash == proved.ir_hash
    assert sorted(c.name for c in r.checks) == sorted(c.name for c in proved.checks if c.status == PROVED)
    assert "carried over" in runner.progress_line(r, 1, 1)


@pytest.mark.parametrize("change", [dict(proof_key="0" * 64), dict(ir_hash="f" * 64)], ids=["proof_key", "ir_hash"])
def test_other_key_or_ir_is_proved_again(proved, change):
    r = runner.verify_job(build_job(BUILD), prior=_prior(proved, **change))
    assert not r.carried and r.status == PROVED and r.proof_key == proved.proof_key
    assert r.solver_stats["queries"] > 0


@pytest.mark.parametrize("rec", [None, {}, dict(status="failed"), dict(proof_key=""), dict(checks_failed=["bounds.guarded"])],
                         ids=["none", "empty", "not-proved", "no-key", "warnings"])
def test_records_that_carry_nothing(proved, rec):
    if rec is None or rec == {}:
        assert manifest.prior(rec) is None
    else:
        assert _prior(proved, **rec) is None


def test_proof_key_covers_every_input(proved, monkeypatch):
    job = build_job(BUILD)
    func = BUILD.prim_func()
    base = runner.proof_key(job, func)
    assert base == proved.proof_key == runner.proof_key(build_job(BUILD), BUILD.prim_func())
    changed = {
        "preconditions": dataclasses.replace(job, preconditions=job.preconditions + ["N <= 7"]),
        "bank_budget": dataclasses.replace(job, bank_budget=job.bank_budget + 1),
        "rlimit": dataclasses.replace(job, rlimit=job.rlimit + 1),
        "strict": dataclasses.replace(job, strict=not job.strict),
        "any_contents": dataclasses.replace(job, any_contents=not job.any_contents),
        "monotone": dataclasses.replace(job, monotone={}),
        "pass_configs": dataclasses.replace(job, pass_configs={**job.pass_configs, "tl.disable_tma_lower": True}),
    }
    keys = {n: runner.proof_key(j, func) for n, j in changed.items()}
    other = next(b for b in registry.RELEASED if b.stage == "decode" and b.name != BUILD.name)
    keys["program"] = runner.proof_key(job, other.prim_func())
    monkeypatch.setattr(runner, "verifier_digest", lambda: "edited")
    keys["verifier"] = runner.proof_key(job, func)
    assert all(k != base for k in keys.values()), [n for n, k in keys.items() if k == base]
    assert len(set(keys.values())) == len(keys)


def _capture_specs(monkeypatch):
    seen = []

    def run_parallel(fn, specs, jobs, on_result=None):
        seen.extend(specs() if callable(specs) else specs)
        raise KeyboardInterrupt   # stop before anything is lowered or written
    monkeypatch.setattr(cli, "run_parallel", run_parallel)
    return seen


@pytest.mark.parametrize("reprove", [False, True])
def test_cli_hands_each_worker_its_record(monkeypatch, tmp_path, reprove):
    recs = {b.name: {"status": PROVED, "proof_key": "k" + b.name, "ir_hash": "h", "checks_passed": ["bounds.global"],
                     "checks_failed": []} for b in registry.RELEASED[:3]}
    monkeypatch.setattr(manifest, "load", lambda path=None: {"builds": recs})
    seen = _capture_specs(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        cli.main(["--jobs", "1", "--json", str(tmp_path / "r.json")] + (["--reprove"] if reprove else []))
    priors = {s[1]: s[2] for s in seen}
    assert set(priors) == {b.name for b in registry.RELEASED}
    for b in registry.RELEASED:
        want = None if reprove or b.name not in recs else manifest.prior(recs[b.name])
        assert priors[b.name] == want
