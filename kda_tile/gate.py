"""The release gate: a build is served only when the verification manifest holds a
passing record for the IR hash it lowers to."""
import json
import os
import sys
import warnings
from pathlib import Path

from . import registry

MANIFEST = Path(__file__).with_name("manifest.json")
_checked: dict[str, str] = {}


class UnverifiedBuildError(RuntimeError):
    pass


def load_manifest() -> dict:
    try:
        return json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        return {"builds": {}}


def check(build: registry.Build) -> str:
    """Returns the build's IR hash when the manifest proves it; raises otherwise."""
    if build.name in _checked:
        return _checked[build.name]
    digest = registry.ir_hash(registry.lower(build))
    record = load_manifest().get("builds", {}).get(build.name)
    problem = None
    if record is None:
        problem = "has no verification record"
    elif record.get("ir_hash") != digest:
        problem = f"is stale: manifest IR hash {record.get('ir_hash', '?')[:12]}, lowered IR hash {digest[:12]}"
    elif record.get("status") != "proved":
        problem = f"did not pass verification (status {record.get('status')!r})"
    if problem is not None:
        msg = (f"kernel build {build.name} {problem} in {MANIFEST}. Run `python -m verify` "
               "(or `kda-verify`) to verify the released kernels and refresh the manifest.")
        if os.environ.get("KDA_TILE_ALLOW_UNVERIFIED") == "1":
            warnings.warn("KDA_TILE_ALLOW_UNVERIFIED=1: serving an unverified build: " + msg, stacklevel=3)
            print("kda_tile WARNING: serving unverified build " + build.name, file=sys.stderr)
        else:
            raise UnverifiedBuildError(msg)
    _checked[build.name] = digest
    return digest
