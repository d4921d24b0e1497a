"""The explorers: each wires controls -> a pure function of `attention.explore` -> views.

base        the Explorer loop (declared controls and panels, the registry's function on one
            thread, draw, errors, export)
controls    control declarations (slider, menu, check...) and their widgets; small readouts
<stem>      one module per explorer, fed by attention/explore/<stem>.py; widgets/registry.py
            lists them (class, stem, function, lessons), and this package's names come from it

Each explorer is imported when first used (PEP 562), so `widgets.explorers.RopeExplorer` loads
rope.py alone.
"""

from importlib import import_module
from typing import Any

from ..registry import explorer_modules

__all__ = sorted(explorer_modules())


def __getattr__(name: str) -> Any:
    modules = explorer_modules()  # read each time: a test may register a toy explorer
    if name not in modules:
        raise AttributeError(f"module 'widgets.explorers' has no attribute {name!r}")
    value = getattr(import_module(f".{modules[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(explorer_modules()))
