"""`python -m verify` rewrites verify/manifest.json only after a complete run that proves every
released build. A failing, unknown (resource limit), erroring, partial, interrupted run, or
one during which a source changed, leaves the file byte-identical and exits non-zero. The runs
here are faked at the worker boundary (run_parallel), so nothing is lowered."""
import json

import pytest

from kda_tile import gate
from kda_kernels import registry
from verify import __main__ as cli
from verify import manifest
from verify.report import FAILED, PROVED, UNKNOWN, CheckResult, KernelReport

NAMES = [b.name for b in registry.RELEASED]


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A copy of the committed manifest that the CLI writes to."""
    path = tmp_path / "manifest.json"
    path.write_bytes(gate.MANIFEST.read_bytes())
    monkeypatch.setattr(manifest, "manifest_path", lambda: path)
    return path


def _report(name, status=PROVED, error=None):
    r = KernelReport(name=name, ir_hash="e" * 64, error=error)
    r.checks = [CheckResult(name="bounds.global", category="bounds", status=status)]
    r.solver_stats = {"queries": 3, "cached": 0, "unknown": int(status == UNKNOWN), "rlimit": 10,
                      "rlimit_max_query": 5}
    return r


def _fake_run(monkeypatch, make):
    def run_parallel(fn, specs, jobs, on_result=None):
        specs = specs() if callable(specs) else specs
        out = []
        for i, s in enumerate(specs):
            out.append(make(s[1]))
            if on_result:
                on_result(out[-1], i + 1, len(specs))
        return out
    monkeypatch.setattr(cli, "run_parallel", run_parallel)


def _main(tmp_path, *extra):
    return cli.main(["--jobs", "1", "--json", str(tmp_path / "r.json"), *extra])


@pytest.mark.parametrize("bad", [
    dict(status=FAILED), dict(status=UNKNOWN), dict(error="RuntimeError: lowering crashed")],
    ids=["failed", "unknown-rlimit", "error"])
def test_failing_run_leaves_the_manifest_byte_identical(shipped, tmp_path, monkeypatch, capsys, bad):
    before = shipped.read_bytes()
    victim = NAMES[5]
    _fake_run(monkeypatch, lambda n: _report(n, **bad) if n == victim else _report(n))
    assert _main(tmp_path) == 1
    out = capsys.readouterr().out
    assert shipped.read_bytes() == before
    assert "manifest: NOT written" in out and victim in out
    assert f"[{len(NAMES)}/{len(NAMES)}] {NAMES[-1]}" in out   # one progress line per kernel


def test_partial_run_never_writes(shipped, tmp_path, monkeypatch, capsys):
    before = shipped.read_bytes()
    _fake_run(monkeypatch, _report)
    assert _main(tmp_path, "--only", NAMES[0], NAMES[1]) == 0    # proved, but partial
    assert shipped.read_bytes() == before
    assert "a partial run never rewrites" in capsys.readouterr().out


def test_unknown_only_name_is_an_error(shipped, tmp_path, monkeypatch):
    _fake_run(monkeypatch, _report)
    with pytest.raises(SystemExit, match="no released build named nope"):
        _main(tmp_path, "--only", "nope")


def test_interrupted_run_never_writes(shipped, tmp_path, monkeypatch):
    before = shipped.read_bytes()

    def run_parallel(fn, specs, jobs, on_result=None):
        specs()
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "run_parallel", run_parallel)
    with pytest.raises(KeyboardInterrupt):
        _main(tmp_path)
    assert shipped.read_bytes() == before


def test_source_changed_during_the_run_never_writes(shipped, tmp_path, monkeypatch, capsys):
    before = shipped.read_bytes()
    _fake_run(monkeypatch, _report)
    real = manifest.gate_keys
    calls = []

    def keys(builds):
        calls.append(1)
        k = real(builds)
        return k if len(calls) == 1 else {**k, NAMES[0]: "0" * 64}   # the second look: changed
    monkeypatch.setattr(manifest, "gate_keys", keys)
    assert _main(tmp_path) == 1
    assert shipped.read_bytes() == before
    assert "changed during the run" in capsys.readouterr().out


def test_proved_run_writes_once_then_leaves_it_unchanged(shipped, tmp_path, monkeypatch, capsys):
    _fake_run(monkeypatch, _report)
    assert _main(tmp_path) == 0
    first = shipped.read_bytes()
    doc = json.loads(first)
    rec = doc["builds"][NAMES[0]]
    assert rec["status"] == "proved" and rec["ir_hash"] == "e" * 64
    assert rec["gate_key"] == registry.gate_key(registry.BY_NAME[NAMES[0]]) and rec["key_inputs"]["sources"]
    assert "(updated)" in capsys.readouterr().out
    assert _main(tmp_path) == 0
    assert shipped.read_bytes() == first and "(unchanged)" in capsys.readouterr().out


def test_write_refuses_directly(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("original\n")
    builds = list(registry.RELEASED[:2])
    with pytest.raises(manifest.NotWritten, match="not verified in this run"):
        manifest.write(builds, [_report(builds[0].name)], path)
    with pytest.raises(manifest.NotWritten, match="failed"):
        manifest.write(builds, [_report(b.name, FAILED) for b in builds], path)
    assert path.read_text() == "original\n"


def _fake_lowering(monkeypatch, shipped, ir=None, proof=None):
    """--check-manifest's workers faked: each build lowers to its record's IR hash and proof key,
    except where ir / proof (name -> value) say otherwise."""
    recs = json.loads(shipped.read_text())["builds"]

    def run_parallel(fn, specs, jobs, on_result=None):
        names = specs()
        out = [(n, (ir or {}).get(n, recs[n]["ir_hash"]), 0.1, (proof or {}).get(n, recs[n]["proof_key"]))
               for n in names]
        for i, r in enumerate(out):
            on_result(r, i + 1, len(out))
        return out
    monkeypatch.setattr(cli, "run_parallel", run_parallel)


def test_check_manifest_reports_each_build(shipped, monkeypatch, capsys):
    _fake_lowering(monkeypatch, shipped, ir={NAMES[3]: "d" * 64})
    assert cli.main(["--check-manifest"]) == 1
    out = capsys.readouterr().out
    assert f"{NAMES[0]} " in out and "matches its record" in out
    assert f"{NAMES[3]} " in out and "DIFFERS from its record" in out
    assert f"{NAMES[3]}: IR hash" in out and "dddddddddddd lowered now" in out


def test_check_manifest_notes_stale_proof_keys(shipped, monkeypatch, capsys):
    """A current manifest passes, but a build whose proof key moved (say, a verifier edit) is named:
    the next full run proves it again instead of carrying it over."""
    _fake_lowering(monkeypatch, shipped)
    assert cli.main(["--check-manifest"]) == 0
    out = capsys.readouterr().out
    assert "manifest up to date" in out and "proof keys" not in out
    _fake_lowering(monkeypatch, shipped, proof={NAMES[2]: "f" * 64, NAMES[7]: "f" * 64})
    assert cli.main(["--check-manifest"]) == 0
    out = capsys.readouterr().out
    assert "manifest up to date" in out
    assert f"note: 2 of {len(NAMES)} builds have proof keys that differ" in out
    assert f"(first: {min(NAMES[2], NAMES[7])})" in out


def test_hash_work_gives_the_proof_key_a_full_run_records(monkeypatch):
    """--check-manifest's proof key is the one a full run's verify_job records for the same build
    (its key is computed before lowering, which is stopped here)."""
    from verify import jobs, runner
    name = registry.RELEASED[0].name
    got = jobs._hash_work(name)
    assert got[0] == name and got[1] == json.loads(gate.MANIFEST.read_text())["builds"][name]["ir_hash"]

    def no_lowering(*a, **k):
        raise RuntimeError("stopped after the proof key")
    monkeypatch.setattr(runner, "lower", no_lowering)
    report = runner.verify_job(jobs._registry_job(name))
    assert "stopped after the proof key" in report.error
    assert len(got[3]) == 64 and got[3] == report.proof_key
