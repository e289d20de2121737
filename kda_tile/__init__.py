"""kda_tile: Kimi Delta Attention forward for NVIDIA Hopper, in TileLang."""
__version__ = "0.1.0"
__all__ = ["kda_prefill", "kda_decode", "empty_cache", "__version__"]


def __getattr__(name):
    # Lazy, so that `kda_kernels.reference` imports without TileLang.
    if name in ("kda_prefill", "empty_cache"):
        from . import api
        globals()[name] = getattr(api, name)  # later lookups skip this hook (~1 us each)
        return globals()[name]
    if name == "kda_decode":
        from . import decode
        globals()[name] = decode.kda_decode
        return globals()[name]
    raise AttributeError(name)
