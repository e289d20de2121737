"""Seeded-bug corpus for `verify`: small kernels with one real bug each, and clean twins.

Every module exposes KERNELS (and optionally MUTATIONS, PRECONDITIONS, PASS_CONFIGS,
BANK_BUDGET) the way `python -m verify module.py` reads them, plus EXPECT: kernel name
-> the check category that must reject it, or None for a clean twin that must pass.
"""
