"""Pure computations behind the explorers in `widgets/`, one module per explorer, and only those.

Each explorer is a frozen params dataclass -> a pure function -> a frozen result dataclass, so
a notebook can call the function without any widget, a test can compare a widget's view with
the function's result for the same params, and `explorer.result` is the maths. The same params
always give the same numbers (every random draw is seeded).

Module attention/explore/<stem>.py feeds widgets/explorers/<stem>.py and reads
`<Stem>Params -> explore_<stem> -> <Stem>Exploration`; widgets/explorers.toml names each
explorer's stem and function (model_view has three: explore_model_view, explore_head_view,
explore_neuron; interventions two: explore_patching, explore_rollout). Results are
Explorations, so none shares a name with the core's Results. _util holds the size limits and
the seeded MultiHeadAttention the explorers share; `one_thread` (applied once, by the widgets'
Explorer base, around every update) and the argument checks come from attention.sandbox.limits.

The package's public names are the pair modules' `__all__` lists, read from their source; a
module `__getattr__` imports a pair module the first time one of its names is asked for, so
`from attention.explore import explore_mask` imports mask.py and not the models.
What lives elsewhere:

    attention/experiments/     the lessons' measurements (RNN memory, sqrt(d_k), norm placement,
                               lesson 12's losses, chat and induction scores, sampling, sinks,
                               sliding windows, decoding speed)
    attention/models/cache.py  pretrained_model: each real model loaded once per kernel
    attention/sandbox/         the whitelist that checks, compiles and runs a learner's typed
                               mask function (the MaskFunctionExplorer's)
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from functools import cache
from pathlib import Path

from ._util import MAX_LEN as MAX_LEN  # the shared limits and one_thread, imported at once
from ._util import MAX_WIDTH as MAX_WIDTH
from ._util import one_thread as one_thread

_SHARED = ("MAX_LEN", "MAX_WIDTH", "one_thread")


def pair_modules() -> tuple[str, ...]:
    """The stems of the explorer modules: every module here whose name has no leading _."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name[0] != "_"))


def _public(stem: str) -> tuple[str, ...]:
    """A pair module's __all__, read from its source (the module is imported on first use)."""
    spec = importlib.util.find_spec(f"{__name__}.{stem}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            return tuple(ast.literal_eval(node.value))
    # a module without __all__: the classes and functions it defines
    kinds = (ast.ClassDef, ast.FunctionDef)
    return tuple(n.name for n in tree.body if isinstance(n, kinds) and n.name[0] != "_")


@cache
def _exports() -> dict[str, str]:
    """name -> the stem of the pair module that exports it; a name exported twice is refused."""
    where: dict[str, str] = {}
    for stem in pair_modules():
        for name in _public(stem):
            if where.setdefault(name, stem) != stem:
                raise ImportError(
                    f"attention.explore: {name} is exported by both {where[name]}.py and {stem}.py"
                )
    return where


def __getattr__(name: str) -> object:
    if name == "__all__":
        return [*_SHARED, *_exports()]
    if name.startswith("__") or name not in _exports():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_exports()[name]}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_exports()})
