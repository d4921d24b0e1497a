"""The one error every model reader raises for a damaged, truncated or foreign file."""

from __future__ import annotations


class WeightFileError(ValueError):
    """A weight, tokenizer or checkpoint file that is missing, damaged or not the expected format.

    The message names the file, where in it reading stopped (a byte position or a key) and how
    to get an intact copy.
    """
