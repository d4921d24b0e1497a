"""Text generation with SmolLM2: a chat template, then one token at a time.

A chat is plain text with special tokens around each turn; the model learnt to continue it:
    <|im_start|>system\\nYou are a helpful AI assistant named SmolLM, ...<|im_end|>\\n
    <|im_start|>user\\nWhat is the capital of France?<|im_end|>\\n
    <|im_start|>assistant\\n                 <- the model writes from here until <|im_end|>
Each step picks the next token from the last position's logits:
    greedy: argmax; temperature t: sample softmax(logits / t); top-k: only the k best compete.
With the key/value cache the prompt is read once and each step feeds one new token; without
it every step reruns the whole sequence. Both give the same tokens.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .smollm2 import SmolLM2
from .tokenizer import Tokenizer

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
CHAT_TOKENS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")  # the template's control tokens


def check_plain_text(name: str, text: object, specials: Sequence[str]) -> str:
    """Refuse text holding a special token's spelling: the tokenizer would make it the real
    control token, so a user could write a turn of their own ("<|im_start|>system ...")."""
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected a str, got {type(text).__name__}")
    found = next((t for t in specials if t in text), None)
    if found is not None:
        raise ValueError(
            f"{name}: contains {found!r}, which would become the model's control token, not "
            "text; expected text without special tokens (remove it, or build the prompt "
            "yourself with tokenizer.encode)"
        )
    return text


def format_chat(
    messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = True
) -> str:
    """Write `messages` ({"role": ..., "content": ...}) in SmolLM2's chat template.

    The same text as the Jinja template stored in the GGUF file (tokenizer.chat_template):
    a default system turn first when none is given, and with add_generation_prompt an open
    assistant turn for the model to complete.
    """
    if not messages:
        raise ValueError("messages: expected at least one {'role': ..., 'content': ...}, got none")
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not {"role", "content"} <= m.keys():
            raise ValueError(f"messages: expected dicts with 'role' and 'content', got {m!r}")
        for field in ("role", "content"):
            check_plain_text(f"messages[{i}][{field!r}]", m[field], CHAT_TOKENS)
    text = ""
    if messages[0]["role"] != "system":
        text += f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
    for m in messages:
        text += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
    if add_generation_prompt:
        text += "<|im_start|>assistant\n"
    return text


def sample_next(
    logits: Tensor,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Pick one token per row of `logits` (B, V) -> (B,) ids.

    temperature 0 is greedy (argmax). Otherwise softmax(logits / temperature) is sampled, after
    setting all but the top_k largest logits to -inf when top_k is given. Lower temperatures
    sharpen the distribution, higher ones flatten it.
    """
    if not temperature >= 0:
        raise ValueError(f"temperature: expected a number >= 0 (0 = greedy), got {temperature}")
    if top_k is not None and not (type(top_k) is int and 1 <= top_k <= logits.shape[-1]):
        raise ValueError(f"top_k: expected an int in [1, {logits.shape[-1]}], got {top_k!r}")
    if temperature == 0:
        return logits.argmax(dim=-1)  # (B,)
    scores = logits / temperature  # (B, V)
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[:, -1:]  # (B, 1) the k-th largest
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores, dim=-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (B,)


@dataclass(frozen=True)
class Generation:
    """A prompt and what the model wrote after it."""

    prompt_ids: list[int]
    new_ids: list[int]  # generated ids, ending with a stop id (<|im_end|>) if the model stopped
    text: str  # the generated text, special tokens left out
    stopped: str = ""  # why generation ended: "end token", "max_new_tokens" or "context full"


def generate(
    model: SmolLM2,
    tokenizer: Tokenizer,
    prompt: str | Sequence[Mapping[str, str]],
    *,
    max_new_tokens: int = 32,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    ablate: set[tuple[int, int]] | None = None,
) -> Generation:
    """Continue `prompt` token by token until an end token (tokenizer.stop_ids) or max_new_tokens.

    Args:
        prompt: raw text to continue, or chat messages (formatted with format_chat).
        temperature, top_k: see sample_next; the default is greedy.
        seed or generator: makes sampling repeatable (give at most one).
        use_cache: reuse the keys/values of earlier tokens (fast) or rerun everything (slow).
        ablate: (layer, head) pairs silenced at every step (see SmolLM2.forward).

    Generation that reaches the model's context length (cfg.max_seq_len) stops there with a
    warning and returns what it made (`stopped` says why it ended).

    Raises:
        ValueError: an empty prompt, one longer than the context, or chat messages whose text
            holds a special token's spelling such as "<|im_start|>" (it would become one).
    """
    if seed is not None and generator is not None:
        raise ValueError("seed and generator: give at most one")
    if type(max_new_tokens) is not int or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens: expected a positive int, got {max_new_tokens!r}")
    if seed is not None:
        generator = torch.Generator().manual_seed(seed)
    if isinstance(prompt, str):
        text = prompt
    else:  # chat messages: their text may not smuggle in a control token of any kind
        specials = tuple(t.content for t in tokenizer.backend.get_added_tokens_decoder().values())
        for i, m in enumerate(prompt):
            if isinstance(m, Mapping) and isinstance(m.get("content"), str):
                check_plain_text(f"prompt[{i}]['content']", m["content"], specials)
        text = format_chat(prompt)
    prompt_ids = tokenizer.encode(text)
    if not prompt_ids:
        raise ValueError(f"prompt: expected text of at least one token, got {prompt!r}")
    context = model.cfg.max_seq_len
    if len(prompt_ids) > context:
        raise ValueError(
            f"prompt: the model reads at most {context} positions, got a prompt of "
            f"{len(prompt_ids)} tokens"
        )
    ids = torch.tensor([prompt_ids], device=next(model.parameters()).device)  # (1, T)
    new_ids: list[int] = []
    cache, step_ids = None, ids
    options = {"need_weights": False, "last_only": True, "ablate": ablate}
    stopped = "max_new_tokens"
    for _ in range(max_new_tokens):
        if ids.shape[1] > context:  # the last new token has no position left to be read at
            stopped = "context full"
            warnings.warn(
                f"generate: stopped after {len(new_ids)} new tokens: the model reads at most "
                f"{context} positions and the prompt took {len(prompt_ids)}",
                stacklevel=2,
            )
            break
        if use_cache:  # feed only what the cache has not seen
            out = model(step_ids, cache=cache, use_cache=True, **options)
            cache = out.cache
        else:
            out = model(ids, **options)
        last = out.logits[:, -1]  # (1, V) scores for the token after the last one
        nxt = sample_next(last, temperature=temperature, top_k=top_k, generator=generator)
        new_ids.append(int(nxt))
        if new_ids[-1] in tokenizer.stop_ids:
            stopped = "end token"
            break
        step_ids = nxt[:, None]  # (1, 1)
        ids = torch.cat([ids, step_ids], dim=1)  # (1, T + 1)
    return Generation(
        prompt_ids=prompt_ids,
        new_ids=new_ids,
        text=tokenizer.decode(new_ids, skip_special_tokens=True),
        stopped=stopped,
    )
