"""The release gate refuses builds without a passing, current verification record."""
import json

import pytest

from kda_tile import gate
from kda_kernels import buildkey, registry

BUILD = registry.find("k2", varlen=False, initial_state=None, final_state=False)


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    monkeypatch.setattr(gate, "MANIFEST", path)
    monkeypatch.setattr(gate, "_checked", {})
    from kda_tile import api
    monkeypatch.setattr(api, "_ENTRIES", {})  # a dispatch cached by an earlier test skips the gate
    monkeypatch.delenv("KDA_TILE_ALLOW_UNVERIFIED", raising=False)
    return path


def _write(path, **record):
    path.write_text(json.dumps({"builds": {BUILD.name: record}}))


def test_missing_record_is_refused(manifest):
    manifest.write_text(json.dumps({"builds": {}}))
    with pytest.raises(gate.UnverifiedBuildError, match=r"no verification record.*python -m verify"):
        gate.check(BUILD)


def test_stale_hash_is_refused(manifest):
    _write(manifest, ir_hash="0" * 64, status="proved")
    with pytest.raises(gate.UnverifiedBuildError, match="stale"):
        gate.check(BUILD)


def test_failed_record_is_refused(manifest):
    _write(manifest, ir_hash=registry.ir_hash(registry.lower(BUILD)), status="failed")
    with pytest.raises(gate.UnverifiedBuildError, match="did not pass"):
        gate.check(BUILD)


def test_current_proved_record_is_served(manifest):
    digest = registry.ir_hash(registry.lower(BUILD))
    _write(manifest, ir_hash=digest, status="proved", gate_key=buildkey.gate_key(BUILD),
           key_inputs=buildkey.key_inputs(BUILD))
    assert gate.check(BUILD) == digest


def test_override_warns_and_serves(manifest, monkeypatch):
    manifest.write_text(json.dumps({"builds": {}}))
    monkeypatch.setenv("KDA_TILE_ALLOW_UNVERIFIED", "1")
    with pytest.warns(UserWarning, match="unverified"):
        gate.check(BUILD)


def test_api_refuses_before_touching_inputs(manifest):
    import torch
    import kda_tile
    manifest.write_text(json.dumps({"builds": {}}))
    x = torch.randn(1, 16, 1, 128).bfloat16()
    with pytest.raises(gate.UnverifiedBuildError):
        kda_tile.kda_prefill(x, x, x, x, torch.randn(1, 16, 1).bfloat16(), A_log=torch.zeros(1),
                             dt_bias=torch.zeros(1, 128))


def test_committed_manifest_covers_every_released_build():
    builds = gate.load_manifest().get("builds", {})
    missing = [b.name for b in registry.RELEASED if builds.get(b.name, {}).get("status") != "proved"]
    assert not missing, f"run `python -m verify`: no passing record for {missing}"


def test_committed_manifest_matches_every_gate_key():
    builds = gate.load_manifest().get("builds", {})
    stale = {b.name: buildkey.explain(builds.get(b.name, {}).get("key_inputs"), buildkey.key_inputs(b))
             for b in registry.RELEASED if builds.get(b.name, {}).get("gate_key") != buildkey.gate_key(b)}
    assert not stale, f"run `python -m verify`: stale records {stale}"
