"""The release manifest (verify/manifest.json): one record per released build.

A record holds the build's gate key and the inputs it hashes (kda_kernels.buildkey: the sources
of its factory's module and the kda_tile modules it imports, config, TileLang and TVM versions,
target), the structural hash of the lowered device IR that was proved, the checks, and the
verifier version. The release gate serves a build only from a proved record whose gate key
matches the build's key now.

The manifest is written only by a complete run (every released build) in which every build
was proved, and only if no gate key changed while the run lowered and checked the builds. A
failing, partial, interrupted or timed-out run leaves the file byte-identical (so a proved
record is never downgraded), and the command exits non-zero. The write is atomic.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from . import MANIFEST_PATH, VERSION
from .report import PROVED


class NotWritten(Exception):
    """The run may not rewrite the manifest; the message says why."""


def manifest_path() -> Path:
    return MANIFEST_PATH


def gate_keys(builds) -> dict:
    """Build name -> gate key now (no lowering)."""
    from kda_kernels import buildkey
    return {b.name: buildkey.gate_key(b) for b in builds}


def record(build, report) -> dict:
    from kda_kernels import buildkey
    return {
        "name": build.name,
        "stage": build.stage,
        "config": build.config_dict(),
        "gate_key": buildkey.gate_key(build),
        "key_inputs": buildkey.key_inputs(build),
        "ir_hash": report.ir_hash,
        "status": report.status,
        "checks_passed": sorted(c.name for c in report.checks if c.status == PROVED),
        "checks_failed": sorted(c.name for c in report.checks if c.status != PROVED),
        "verifier_version": VERSION,
        "proof_key": report.proof_key,
        "carried": report.carried,
    }


def render(builds, reports) -> str:
    by_name = {r.name: r for r in reports}
    doc = {"verifier_version": VERSION,
           "builds": {b.name: record(b, by_name[b.name]) for b in builds if b.name in by_name}}
    return json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"


def write(builds, reports, path=None, keys=None) -> tuple:
    """Writes the manifest for a complete run in which every build was proved. Returns (path,
    changed). Raises NotWritten, leaving the file untouched, when a build has no report, a
    report is not proved or has no IR hash, or (keys: the gate keys taken when the run started)
    a build's key changed during the run."""
    path = Path(path) if path else manifest_path()
    by_name = {r.name: r for r in reports}
    problems = []
    for b in builds:
        r = by_name.get(b.name)
        if r is None:
            problems.append(f"{b.name}: not verified in this run")
        elif r.status != PROVED:
            problems.append(f"{b.name}: {'error' if r.error else r.status}")
        elif not r.ir_hash:
            problems.append(f"{b.name}: no IR hash")
    if keys is not None:
        now = gate_keys(builds)
        problems += [f"{n}: its sources or inputs changed during the run" for n in sorted(now)
                     if keys.get(n) != now[n]]
    if problems:
        raise NotWritten(f"{len(problems)} of {len(builds)} builds: " + "; ".join(problems))
    text = render(builds, reports)
    try:
        if path.read_text() == text:
            return path, False
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path, True


def load(path=None) -> dict:
    path = Path(path) if path else manifest_path()
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def prior(rec) -> dict:
    """What a worker needs of a build's record to carry its verdict over (None: nothing to carry:
    no record, not proved, proved with warnings, or made before proof keys)."""
    if not rec or rec.get("status") != PROVED or not rec.get("proof_key") or rec.get("checks_failed"):
        return None
    return {k: rec[k] for k in ("status", "proof_key", "ir_hash", "checks_passed")}


def stale_proofs(doc: dict, proof_keys: dict) -> list:
    """Builds whose proof key now differs from their record's: the verifier's sources, the program
    before lowering, the toolchain or a check input changed since they were proved, so the next
    `python -m verify` proves them again instead of carrying them over."""
    recs = doc.get("builds", {})
    return sorted(n for n, k in proof_keys.items() if recs.get(n, {}).get("proof_key") != k)


def stale(doc: dict, hashes: dict, keys: dict = None) -> list:
    """Reasons the manifest does not match the released builds (empty: up to date).

    hashes: build name -> IR hash of the build lowered now; keys: build name -> gate key now."""
    from kda_kernels import buildkey, registry
    problems = []
    if doc.get("verifier_version") != VERSION:
        problems.append(f"manifest verifier version {doc.get('verifier_version')!r} != {VERSION!r}")
    recs = doc.get("builds", {})
    names = sorted(set(hashes) | set(keys or {}))
    for name in names:
        r = recs.get(name)
        if r is None:
            problems.append(f"{name}: no record")
            continue
        h = hashes.get(name)
        if h is not None and r.get("ir_hash") != h:
            problems.append(f"{name}: IR hash {str(r.get('ir_hash'))[:12]} in the manifest, {h[:12]} lowered now")
        if keys is not None and r.get("gate_key") != keys.get(name):
            why = "; ".join(buildkey.explain(r.get("key_inputs"), buildkey.key_inputs(registry.BY_NAME[name])))
            problems.append(f"{name}: gate key differs ({why})")
        if r.get("verifier_version") != VERSION:
            problems.append(f"{name}: verified by {r.get('verifier_version')!r}, current {VERSION!r}")
        if r.get("status") != PROVED:
            problems.append(f"{name}: status {r.get('status')!r}, not proved")
    for name in sorted(set(recs) - set(names)):
        problems.append(f"{name}: record for a build that is no longer released")
    return problems
