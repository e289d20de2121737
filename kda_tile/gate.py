"""The release gate: a build is served only when the verification manifest holds a proved
record made for the build's current gate key, and the artifact that will run it (the host
entry and its cubins) was built from the IR hash that record proved.

    check(build)                      -> the proved IR hash (raises UnverifiedBuildError)
    check_artifact(build, proved, built, what)  the artifact's IR hash is the proved one

The key (kda_kernels.buildkey) is a hash of the sources of the build's factory module and every
kda_tile module it imports, its config, the TileLang and TVM versions and the target: the
inputs its lowered IR is a function of. So the gate never lowers a build: a warm first call
reads the manifest, hashes a few source files and loads the cached entry, whose binding
(host_codegen: binding.json) names the IR hashes it was generated from. A build whose key
changed (an edited kernel, a different config or TileLang) is refused until `python -m verify`
proves it again; KDA_TILE_ALLOW_UNVERIFIED=1 serves it anyway, with a warning.
"""
import json
import os
import sys
import warnings

from kda_kernels import buildkey, registry
from verify import MANIFEST_PATH

MANIFEST = MANIFEST_PATH
ALLOW_ENV = "KDA_TILE_ALLOW_UNVERIFIED"
_checked: dict[str, str] = {}


class UnverifiedBuildError(RuntimeError):
    pass


_parsed: list = [None, None]   # (bytes, parsed manifest) of the last read


def load_manifest() -> dict:
    """The manifest, parsed again only when its bytes changed (a further configuration's gate
    then costs a file read and a few source hashes). Do not mutate the result."""
    try:
        data = MANIFEST.read_bytes()
    except FileNotFoundError:
        return {"builds": {}}
    if data != _parsed[0]:
        _parsed[:] = [data, json.loads(data)]
    return _parsed[1]


def _refuse(build_name: str, problem: str) -> None:
    msg = (f"kernel build {build_name} {problem} in {MANIFEST}. Run `python -m verify` "
           "(or `kda-verify`) to verify the released kernels and refresh the manifest.")
    if os.environ.get(ALLOW_ENV) == "1":
        warnings.warn(f"{ALLOW_ENV}=1: serving an unverified build: " + msg, stacklevel=4)
        print("kda_tile WARNING: serving unverified build " + build_name, file=sys.stderr)
        return
    raise UnverifiedBuildError(msg)


def check(build: registry.Build) -> str:
    """The IR hash the manifest proved for this build; raises UnverifiedBuildError when there
    is no record, the record is not proved, or it was made for another gate key. With
    KDA_TILE_ALLOW_UNVERIFIED=1 it warns and returns "" (nothing proved to bind to)."""
    if build.name in _checked:
        return _checked[build.name]
    record = load_manifest().get("builds", {}).get(build.name)
    problem = None
    if record is None:
        problem = "has no verification record"
    elif record.get("status") != "proved":
        problem = f"did not pass verification (status {record.get('status')!r})"
    elif record.get("gate_key") != buildkey.gate_key(build):
        why = buildkey.explain(record.get("key_inputs"), buildkey.key_inputs(build))
        problem = "is stale: its record was made for other inputs (" + "; ".join(why) + ")"
    proved = ""
    if problem is not None:
        _refuse(build.name, problem)
    else:
        proved = record["ir_hash"]
    _checked[build.name] = proved
    return proved


def check_artifact(build: registry.Build, proved: str, built: str, what: str = "host entry") -> None:
    """Refuses an artifact built from another IR than the one the manifest proved (a cache
    made before a re-verification, or an input the key does not cover). proved == "" (the
    override is on and nothing was proved) binds nothing."""
    if proved and built != proved:
        _refuse(build.name, f"is bound to IR hash {proved[:12]} but its {what} was built from IR hash "
                            f"{str(built)[:12]}")
