"""Where tensors live: the CPU, or CUDA when a GPU is present."""

import torch


def default_device() -> torch.device:
    """Return cuda if a GPU is available, else cpu. Nothing in the course needs a GPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
