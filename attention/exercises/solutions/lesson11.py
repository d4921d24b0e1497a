"""Reference solutions to the exercises of lesson 11 (checked by attention.exercises.lesson11).

The lesson shows the same code in hidden cells tagged `solution`;
tests/exercises/test_solution_copies.py keeps the two equal.
"""

import torch


def solution_shift_right(tgt_out: torch.Tensor, bos_id: int) -> torch.Tensor:
    bos = torch.full_like(tgt_out[:, :1], bos_id)  # (B, 1) the start token
    return torch.cat([bos, tgt_out[:, :-1]], dim=1)  # (B, T): last column dropped


def solution_sequence_loss(
    logits: torch.Tensor, tgt_out: torch.Tensor, pad_id: int
) -> torch.Tensor:
    v = logits.shape[-1]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, v), tgt_out.reshape(-1), ignore_index=pad_id
    )  # mean over the non-PAD positions


def solution_greedy_step(model, src: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
    memory = model.encode(src).output  # (B, S, M)
    logits, _ = model.decode(prefix, memory, model.src_mask(src))  # (B, t, V)
    return logits[:, -1].argmax(dim=-1)  # (B,) the last position predicts the next token
