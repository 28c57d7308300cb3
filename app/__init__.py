"""forgetmap: what did post-training make a model forget?

The installed package ``forgetmap`` is this folder (app/; the worker, worker/, is
``forgetmap.worker``). Its rooms are its subpackages (docs/architecture.md). At the top it names
only what a training script or a notebook imports, loaded on first use so that
``import forgetmap`` costs nothing: ``from forgetmap import ForgetmapCallback``.
"""

__all__ = ["ForgetmapCallback", "__version__"]


def __getattr__(name: str):
    if name == "ForgetmapCallback":  # needs the trainer extra: pip install 'forgetmap[trainer]'
        from forgetmap.integrations.trainer import ForgetmapCallback

        return ForgetmapCallback
    if name == "__version__":  # one version: pyproject.toml's, as the installed package says
        from importlib.metadata import version

        return version("forgetmap")
    raise AttributeError(f"module 'forgetmap' has no attribute {name!r}")
