"""The registry of released kernel builds.

Every specialization `kda_prefill` can serve is listed in RELEASED. `verify` and
`host_codegen` read the lowered IR of these builds; the API only serves builds
whose IR hash has a passing record in the verification manifest.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import asdict, dataclass
from typing import Union

from .k1_prepare import K1Config, build_k1
from .k2_recurrence import K2Config, build_k2

TARGET = {"kind": "cuda", "arch": "sm_90a"}

KernelConfig = Union[K1Config, K2Config]


@dataclass(frozen=True)
class Build:
    stage: str  # "k1" or "k2"
    config: KernelConfig

    @property
    def name(self) -> str:
        return self.config.name

    def prim_func(self):
        return build_k1(self.config) if self.stage == "k1" else build_k2(self.config)

    def config_dict(self) -> dict:
        return asdict(self.config)


def _released() -> tuple[Build, ...]:
    builds = []
    for varlen, fast_math in itertools.product((False, True), (False, True)):
        builds.append(Build("k1", K1Config(varlen=varlen, fast_math=fast_math)))
    # K2 does no transcendental math, so fast_math selects only among K1 builds.
    # Two value-block widths: 32 doubles the programs for inputs with few (sequence, head) pairs.
    for varlen, h0, out_final, block_v in itertools.product(
            (False, True), (None, "float32", "bfloat16"), (False, True), (64, 32)):
        builds.append(Build("k2", K2Config(varlen=varlen, initial_state=h0, final_state=out_final,
                                           block_v=block_v)))
    return tuple(builds)


RELEASED: tuple[Build, ...] = _released()
BY_NAME: dict[str, Build] = {b.name: b for b in RELEASED}


def pass_configs(build: Build) -> dict:
    return build.config.pass_configs()


@functools.lru_cache(maxsize=None)
def lower(build: Build):
    """Lower one build for sm_90a (no GPU needed). Returns tilelang's CompiledArtifact
    with .device_mod and .host_mod."""
    import tilelang
    from tilelang import tvm

    with tvm.transform.PassContext(config=pass_configs(build)), tvm.target.Target(TARGET):
        return tilelang.lower(build.prim_func(), target=TARGET)


def ir_hash(artifact) -> str:
    """Structural hash of a lowered build: sha256 of its device IR's printed script."""
    return hashlib.sha256(artifact.device_mod.script().encode()).hexdigest()


def find(stage: str, **spec) -> Build:
    for b in RELEASED:
        if b.stage == stage and all(getattr(b.config, k) == v for k, v in spec.items()):
            return b
    raise LookupError(f"no released {stage} build for {spec}")
