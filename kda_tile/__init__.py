"""kda_tile: Kimi Delta Attention forward for NVIDIA Hopper, in TileLang."""
__version__ = "0.1.0"
__all__ = ["kda_prefill", "__version__"]


def __getattr__(name):
    # Lazy, so that `kda_tile.reference` imports without TileLang.
    if name == "kda_prefill":
        from .api import kda_prefill
        return kda_prefill
    raise AttributeError(name)
