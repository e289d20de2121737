"""The gate key: which inputs it covers, and the gate refusing a record made for other inputs
(edited source, changed config, another TileLang or TVM, another target) without lowering."""
import dataclasses
import json
import shutil

import pytest

from kda_tile import gate
from kda_kernels import buildkey, registry

K1 = registry.find("k1", varlen=True, fast_math=False)
K2 = registry.find("k2", varlen=False, initial_state="float32", final_state=True)


def test_sources_follow_the_imports():
    s1 = set(buildkey.key_inputs(K1)["sources"])
    s2 = set(buildkey.key_inputs(K2)["sources"])
    assert s1 == {"kda_kernels/k1_prepare.py", "kda_kernels/_math.py", "kda_kernels/_tir.py", "kda_kernels/configs.py"}
    assert s2 == {"kda_kernels/k2_recurrence.py", "kda_kernels/_math.py", "kda_kernels/_tir.py",
                  "kda_kernels/configs.py"}
    # a factory registered later gets its imports the same way (the fused kernel's module)
    # (it takes its chain step from K2's module, and that module's imports with it)
    assert set(buildkey.source_files({"kda_kernels.fused"})) == {"kda_kernels/fused.py", "kda_kernels/_math.py",
                                                             "kda_kernels/_tir.py", "kda_kernels/k2_recurrence.py",
                                                             "kda_kernels/configs.py"}


def test_key_inputs_are_machine_independent():
    text = json.dumps(buildkey.key_inputs(K1))
    assert str(buildkey.PACKAGE_DIR) not in text
    inp = buildkey.key_inputs(K1)
    assert inp["target"] == registry.TARGET and inp["config"] == dataclasses.asdict(K1.config)
    assert inp["tilelang"] and inp["tvm"] and inp["factory"] == "kda_kernels.k1_prepare:build_k1"


def test_tvm_version_read_without_import_matches_tvm():
    from tilelang import tvm
    assert buildkey.toolchain()["tvm"] == str(tvm.__version__)
    import tilelang
    assert buildkey.toolchain()["tilelang"].split("+")[0] == tilelang.__version__.split("+")[0]


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    """A manifest proving K1 and K2 for their keys now; lowering is forbidden."""
    path = tmp_path / "manifest.json"
    recs = {b.name: {"status": "proved", "ir_hash": "a" * 64, "gate_key": buildkey.gate_key(b),
                     "key_inputs": buildkey.key_inputs(b)} for b in (K1, K2)}
    path.write_text(json.dumps({"builds": recs}))
    monkeypatch.setattr(gate, "MANIFEST", path)
    monkeypatch.setattr(gate, "_checked", {})
    monkeypatch.delenv("KDA_TILE_ALLOW_UNVERIFIED", raising=False)

    def no_lowering(*a, **k):
        raise AssertionError("the gate lowered a build")
    monkeypatch.setattr(registry, "lower", no_lowering)
    return path


def test_unchanged_build_is_served_without_lowering(manifest):
    assert gate.check(K1) == "a" * 64 and gate.check(K2) == "a" * 64


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """The key reads the sources from a copy of kda_kernels that the test may edit."""
    root = tmp_path / "pkg" / "kda_kernels"
    shutil.copytree(buildkey.PACKAGE_DIR, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(buildkey, "PACKAGE_DIR", root)
    buildkey._cached.cache_clear()
    yield root
    buildkey._cached.cache_clear()


@pytest.mark.parametrize("build", [K1, K2], ids=["k1", "k2"])
def test_editing_any_source_invalidates_the_record(manifest, package_copy, build):
    sources = buildkey.key_inputs(build)["sources"]
    assert gate.check(build)   # the copy is the same package: served
    for rel in sources:
        f = package_copy.parent / rel
        original = f.read_bytes()
        f.write_bytes(original + b"\n# an edit\n")
        buildkey._cached.cache_clear()
        gate._checked.clear()
        with pytest.raises(gate.UnverifiedBuildError, match=rf"stale.*{rel} changed"):
            gate.check(build)
        f.write_bytes(original)
    buildkey._cached.cache_clear()
    gate._checked.clear()
    assert gate.check(build)


def test_editing_another_module_keeps_the_record(manifest, package_copy):
    (package_copy / "reference.py").write_text("# unrelated\n", encoding="utf-8")
    (package_copy / "fused.py").write_text("# not imported by K1 or K2\n", encoding="utf-8")
    assert gate.check(K1) and gate.check(K2)


def test_a_new_import_joins_the_sources(manifest, package_copy):
    f = package_copy / "k2_recurrence.py"
    f.write_text(f.read_text() + "\nfrom . import buildkey  # noqa\n")
    buildkey._cached.cache_clear()
    with pytest.raises(gate.UnverifiedBuildError, match="kda_kernels/buildkey.py is a new source"):
        gate.check(K2)


def test_changed_config_is_refused(manifest):
    other = registry.Build("k2", dataclasses.replace(K2.config, stages=4))
    assert other.name == K2.name
    with pytest.raises(gate.UnverifiedBuildError, match=r"stale.*config.stages 3 -> 4"):
        gate.check(other)


@pytest.mark.parametrize("tool,value", [("tilelang", "0.1.16"), ("tvm", "0.26.dev0")])
def test_changed_compiler_version_is_refused(manifest, monkeypatch, tool, value):
    real = buildkey.toolchain()
    monkeypatch.setattr(buildkey, "toolchain", lambda: {**real, tool: value})
    buildkey._cached.cache_clear()
    try:
        with pytest.raises(gate.UnverifiedBuildError, match=rf"stale.*{tool} '{real[tool]}' -> '{value}'"):
            gate.check(K1)
    finally:
        buildkey._cached.cache_clear()


def test_changed_target_is_refused(manifest, monkeypatch):
    monkeypatch.setattr(registry, "TARGET", {"kind": "cuda", "arch": "sm_100a"})
    buildkey._cached.cache_clear()
    try:
        with pytest.raises(gate.UnverifiedBuildError, match="stale.*target"):
            gate.check(K1)
    finally:
        buildkey._cached.cache_clear()


def test_record_without_a_key_is_stale(manifest):
    doc = json.loads(manifest.read_text())
    for r in doc["builds"].values():
        del r["gate_key"], r["key_inputs"]
    manifest.write_text(json.dumps(doc))
    with pytest.raises(gate.UnverifiedBuildError, match="stale.*no gate key"):
        gate.check(K1)


def test_artifact_bound_to_another_ir_is_refused(manifest):
    proved = gate.check(K1)
    gate.check_artifact(K1, proved, proved)
    with pytest.raises(gate.UnverifiedBuildError, match="host entry was built from IR hash bbbbbbbbbbbb"):
        gate.check_artifact(K1, proved, "b" * 64)


def test_imports_in_function_bodies_count_and_text_in_strings_does_not(manifest, package_copy):
    f = package_copy / "k2_recurrence.py"
    f.write_text(f.read_text() + '\n"""import kda_kernels.reference"""\n')
    buildkey._cached.cache_clear()
    assert "kda_kernels/reference.py" not in buildkey.key_inputs(K2)["sources"]
    f.write_text(f.read_text() + "\n\ndef _later():\n    from .reference import CHUNK  # noqa\n    return CHUNK\n")
    buildkey._cached.cache_clear()
    assert "kda_kernels/reference.py" in buildkey.key_inputs(K2)["sources"]
