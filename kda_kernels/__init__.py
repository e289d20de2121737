"""The kernels layer of kda_tile: TileLang kernel factories (one module per stage, each with a
frozen config dataclass in configs.py), the registry of released builds, their gate keys
(buildkey) and the float64 reference. Nothing here imports host_codegen, verify or kda_tile:
kernels -> lowered IR -> verify and host_codegen -> kda_tile (the API)."""
