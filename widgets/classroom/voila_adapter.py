"""Voilà's internals that the classroom server reads, in one place, checked against their version.

The classroom's kernel manager and handlers (server.py) need a few things Voilà 0.5 keeps to
itself: its kernel pool (``VoilaKernelManager._pools``: per notebook, a list of futures whose
result is ``{"task": the notebook's run, "renderer": ..., "kernel_id": ...}``), whether the
pool's first kernel has set up its notebook (``notebook_data``), the environment variable that
marks the pool's own kernel starts (``VOILA_PREHEAT``), and the Voilà app that its
``init_settings`` puts in the handlers' settings under ``"voila"`` (whose log the static
handlers lack). Beside them, two internals of the stack Voilà runs on: Jupyter Server's count
of a kernel's connections (``_kernel_connections``) and tornado's ``_finished``.

Each read is one function here, and nothing else in the course touches these names. A Voilà
that renamed them would not fail loudly: ``_pools`` gone reads as an empty pool and every page
waits for a new kernel. So importing this module checks the installed Voilà against
VOILA_VERSIONS, the range they were read from (pyproject pins the same), and refuses to start
with any other.
"""

from __future__ import annotations

import asyncio
from importlib import metadata
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

VOILA_VERSIONS = ">=0.5,<0.6"  # the Voilà whose internals this module reads


def check_voila_version(installed: str | None = None) -> str:
    """Return the installed Voilà's version (or `installed`, given for a test) if it is in range.

    Raises:
        RuntimeError: Voilà is missing, or its version is outside VOILA_VERSIONS.
    """
    install = f"pip install 'voila{VOILA_VERSIONS}'"
    if installed is None:
        try:
            installed = metadata.version("voila")
        except metadata.PackageNotFoundError:
            raise RuntimeError(
                f"the classroom server needs voila{VOILA_VERSIONS}, got no Voilà; {install}"
            ) from None
    try:
        known = Version(installed) in SpecifierSet(VOILA_VERSIONS, prereleases=True)
    except InvalidVersion:
        known = False
    if not known:
        raise RuntimeError(
            f"the classroom server reads Voilà's internals as voila{VOILA_VERSIONS} keeps them, "
            f"got voila {installed}; {install}"
        )
    return installed


check_voila_version()


# ---------------------------------------------------------------------------- the kernel pool


def _pool(manager: Any, notebook_path: str | None = None) -> list[asyncio.Future]:
    """The pool's entries for `notebook_path` (None: every notebook's). Without a pool (Voilà
    adds it to the kernel manager only when preheating) there are none."""
    pools = getattr(manager, "_pools", {})
    if notebook_path is not None:
        return list(pools.get(notebook_path, []))
    return [entry for pool in pools.values() for entry in pool]


def _started(entry: asyncio.Future) -> bool:
    """Whether a pool entry has finished without error (it holds a started kernel)."""
    return entry.done() and not entry.cancelled() and entry.exception() is None


def pool_kernel_ids(manager: Any) -> set[str]:
    """The ids of the started kernels waiting in the pool."""
    return {entry.result()["kernel_id"] for entry in _pool(manager) if _started(entry)}


def pool_started(manager: Any, notebook_path: str) -> int:
    """Pool kernels started for `notebook_path` (their notebook may still be running)."""
    return sum(1 for entry in _pool(manager, notebook_path) if _started(entry))


def pool_rendered(manager: Any) -> int:
    """Pool kernels that have run their whole notebook (their page is rendered)."""
    return sum(1 for entry in _pool(manager) if _started(entry) and entry.result()["task"].done())


def pool_is_set_up(manager: Any) -> bool:
    """Whether the pool's first kernel has set up its notebook; until then Voilà gives a page
    a new kernel rather than one from the pool."""
    return bool(getattr(manager, "notebook_data", None))


def is_pool_start(start_kwargs: dict[str, Any]) -> bool:
    """Whether a `start_kernel(**start_kwargs)` call is Voilà refilling its pool."""
    return (start_kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True"


# ---------------------------------------------------------------------------- the server


def voila_log(handler: Any) -> Any:
    """The Voilà app's log, for any of its handlers (the static ones have none of their own)."""
    return handler.settings["voila"].log


def has_connection(manager: Any, kernel_id: str) -> bool:
    """Whether a page is connected to the kernel (Jupyter Server counts its websockets)."""
    return bool(manager._kernel_connections.get(kernel_id))


def is_finished(handler: Any) -> bool:
    """Whether tornado has finished the handler's response (e.g. authentication refused it)."""
    return handler._finished
