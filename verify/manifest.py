"""The release manifest (kda_tile/manifest.json): one record per released build."""
from __future__ import annotations

import json
from pathlib import Path

from . import VERSION
from .report import PROVED


def manifest_path() -> Path:
    import kda_tile
    return Path(kda_tile.__file__).with_name("manifest.json")


def record(build, report) -> dict:
    return {
        "name": build.name,
        "stage": build.stage,
        "config": build.config_dict(),
        "ir_hash": report.ir_hash,
        "status": report.status,
        "checks_passed": sorted(c.name for c in report.checks if c.status == PROVED),
        "checks_failed": sorted(c.name for c in report.checks if c.status != PROVED),
        "verifier_version": VERSION,
    }


def write(builds, reports, path=None) -> Path:
    path = Path(path) if path else manifest_path()
    by_name = {r.name: r for r in reports}
    doc = {"verifier_version": VERSION,
           "builds": {b.name: record(b, by_name[b.name]) for b in builds if b.name in by_name}}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    return path


def load(path=None) -> dict:
    path = Path(path) if path else manifest_path()
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def stale(doc: dict, hashes: dict) -> list:
    """Reasons the manifest does not match the released builds (empty: up to date).

    hashes: build name -> IR hash of the build lowered now."""
    problems = []
    if doc.get("verifier_version") != VERSION:
        problems.append(f"manifest verifier version {doc.get('verifier_version')!r} != {VERSION!r}")
    recs = doc.get("builds", {})
    for name, h in sorted(hashes.items()):
        r = recs.get(name)
        if r is None:
            problems.append(f"{name}: no record")
            continue
        if r.get("ir_hash") != h:
            problems.append(f"{name}: IR hash {str(r.get('ir_hash'))[:12]} in the manifest, {h[:12]} lowered now")
        if r.get("verifier_version") != VERSION:
            problems.append(f"{name}: verified by {r.get('verifier_version')!r}, current {VERSION!r}")
        if r.get("status") != PROVED:
            problems.append(f"{name}: status {r.get('status')!r}, not proved")
    for name in sorted(set(recs) - set(hashes)):
        problems.append(f"{name}: record for a build that is no longer released")
    return problems
