"""verify: a Z3 verifier for the lowered device IR of TileLang kernels.

`python -m verify` checks every released kda_tile build; see verify/README.md.
"""
from pathlib import Path

# Bump whenever a check's encoding changes: the release manifest records it and
# `python -m verify --check-manifest` treats a different version as stale.
VERSION = "2.23.0"

CATEGORIES = ("bounds", "layout", "barriers", "banks")

# The release manifest (verify.manifest writes it, kda_tile.gate reads it). This module imports
# nothing else, so the gate can name it at first call for free.
MANIFEST_PATH = Path(__file__).with_name("manifest.json")

__all__ = ["VERSION", "CATEGORIES", "MANIFEST_PATH"]
