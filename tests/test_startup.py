"""Startup: importing the API imports no TileLang, and a first call with warm caches lowers
nothing, generates nothing and compiles nothing (it reads the manifest, hashes the build's
sources, loads the cached entry and checks its binding to the proved IR hashes)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kda_kernels import buildkey, registry

ROOT = Path(__file__).resolve().parents[1]
PAIR = (dict(varlen=True, fast_math=False), dict(varlen=True, initial_state="float32", final_state=True))


def _python(code, **env):
    e = dict(os.environ, **env)
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=e, capture_output=True, text=True, timeout=300)


def test_importing_the_api_imports_no_tilelang():
    p = _python("import sys, kda_tile, kda_tile.api, kda_tile.gate, kda_kernels.registry, kda_kernels.buildkey, "
                "kda_tile.__main__, host_codegen, host_codegen.cpp_entry; kda_tile.kda_prefill; "
                "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tilelang', 'tvm')))")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


# The second process: lowering, reading IR, generating or compiling the entry all raise.
WARM = r"""
import json, sys, time
from pathlib import Path
import torch
t0 = time.perf_counter()
import kda_tile
from kda_tile import api, gate
from kda_kernels import registry
import host_codegen, host_codegen.cpp_entry as ce
def forbidden(*a, **k):
    raise AssertionError("a warm first call lowered, generated or compiled")
registry.lower = forbidden
host_codegen.prepare_kernel = forbidden
ce.cpp_source = forbidden
gate.MANIFEST = Path(sys.argv[1])
g = torch.Generator().manual_seed(0)
bf = torch.bfloat16
x = lambda *s: torch.randn(*s, generator=g).to(bf)
H, T = 2, 40
args = [x(1, T, H, 128) for _ in range(4)] + [x(1, T, H)]
kw = dict(A_log=torch.zeros(H), dt_bias=torch.zeros(H, 128), cu_seqlens=torch.tensor([0, 7, T]),
          initial_state=torch.zeros(2, H, 128, 128), output_final_state=True)
try:
    env = api.check_inputs(*args, **kw, device="cpu")
    out = {"ok": True, "T": env["T"]}
except gate.UnverifiedBuildError as e:
    out = {"ok": False, "error": str(e)}
out["ms"] = (time.perf_counter() - t0) * 1e3
out["tilelang"] = sorted(m for m in sys.modules if m.split(".")[0] in ("tilelang", "tvm"))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def warm_entry():
    """The entry of PAIR, built (if not cached yet) in this process: its IR hashes."""
    import host_codegen as hc
    k1, k2 = registry.find("k1", **PAIR[0]), registry.find("k2", **PAIR[1])
    return k1, k2, hc.get_entry(k1, k2, backend="cpp").ir_hashes


def _manifest(tmp_path, k1, k2, hashes):
    path = tmp_path / "manifest.json"
    recs = {b.name: {"status": "proved", "ir_hash": hashes[b.name], "gate_key": buildkey.gate_key(b),
                     "key_inputs": buildkey.key_inputs(b)} for b in (k1, k2)}
    path.write_text(json.dumps({"builds": recs}))
    return path


def _run_warm(path):
    env = {k: v for k, v in os.environ.items() if k != "KDA_TILE_ALLOW_UNVERIFIED"}
    p = subprocess.run([sys.executable, "-c", WARM, str(path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**env, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_warm_first_call_lowers_and_compiles_nothing(tmp_path, warm_entry):
    k1, k2, hashes = warm_entry
    out = _run_warm(_manifest(tmp_path, k1, k2, hashes))
    assert out["ok"], out
    assert out["T"] == 40 and out["tilelang"] == []


def test_entry_built_from_another_ir_is_refused(tmp_path, warm_entry):
    k1, k2, hashes = warm_entry
    out = _run_warm(_manifest(tmp_path, k1, k2, {**hashes, k2.name: "c" * 64}))
    assert not out["ok"] and f"kernel build {k2.name} is bound to IR hash cccccccccccc" in out["error"]
    assert "host entry was built from IR hash" in out["error"]
