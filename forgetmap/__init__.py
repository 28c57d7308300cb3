"""forgetmap's names for Python users: ``from forgetmap import ForgetmapCallback``.

The application lives in the ``app`` package; this one only re-exports what a training script or
a notebook imports, loaded on first use so that ``import forgetmap`` costs nothing.
"""

__all__ = ["ForgetmapCallback"]


def __getattr__(name: str):
    if name == "ForgetmapCallback":  # needs the trainer extra: pip install 'forgetmap[trainer]'
        from app.integrations.trainer import ForgetmapCallback

        return ForgetmapCallback
    raise AttributeError(f"module 'forgetmap' has no attribute {name!r}")
