"""verify: a Z3 verifier for the lowered device IR of TileLang kernels.

`python -m verify` checks every released kda_tile build; see verify/README.md.
"""

# Bump whenever a check's encoding changes: the release manifest records it and
# `python -m verify --check-manifest` treats a different version as stale.
VERSION = "2.1.0"

CATEGORIES = ("bounds", "layout", "barriers", "banks")

__all__ = ["VERSION", "CATEGORIES"]
