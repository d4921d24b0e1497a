"""Code that runs on a learner's behalf, bounded: the only place the course compiles their text.

    whitelist.py   a mask or score function the learner types (lesson 20's MaskFunctionExplorer):
                   parsed, checked against a whitelist of Python, compiled, run on a grid
    limits.py      argument checks (check_int, check_bool, check_choice) and one_thread,
                   shared by the explorers' functions (attention.explore) and the lessons'
                   experiments (attention.experiments)

It imports only the core and torch: layers above it (models, explore, experiments, exercises,
widgets) may use it; the core may not (the import-linter contracts in pyproject.toml).
"""

from .limits import check_bool, check_choice, check_int, one_thread
from .whitelist import (
    CompiledFunction,
    MaskFunctionError,
    compile_mask_function,
    document_ids,
    run_mask_function,
)

__all__ = [
    "CompiledFunction",
    "MaskFunctionError",
    "check_bool",
    "check_choice",
    "check_int",
    "compile_mask_function",
    "document_ids",
    "one_thread",
    "run_mask_function",
]
