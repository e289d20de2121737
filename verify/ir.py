"""The structural hash of a lowered build (the release manifest keys on it)."""
from __future__ import annotations

import hashlib


def ir_hash(artifact) -> str:
    """kda_kernels.registry.ir_hash when available (the API recomputes it), else the same digest."""
    try:
        from kda_kernels.registry import ir_hash as registry_hash
    except Exception:  # the registry is absent when verifying a user module elsewhere
        registry_hash = None
    if registry_hash is not None:
        return registry_hash(artifact)
    return hashlib.sha256(artifact.device_mod.script().encode()).hexdigest()
