"""Check that the course's core, models and lesson code run on a CUDA device and agree with the CPU.

One line per check: its name, the largest |CPU - device| over all it compares (or what it
measured), ok or FAIL with the error; a failing check never stops the others.
  core     every attention function and module of `attention`: attention with causal/padding
           masks and an empty row, mask helpers, FlexAttention mask_mod/score_mod, MHA/GQA/MQA,
           a RoPE KV cache, additive, sinusoidal/RoPE/ALiBi, flash, latent (MLA), linear and
           delta rule, differential, top-k, paged KV cache, pooling; gradients where they train
  models   toy models (seq2seq Transformer, GRU + additive attention, recall, induction): forward
           loss, and 40 AdamW steps on the device must lower it; the Transformer's logits,
           greedy decoding, 5 training steps. SmolLM2-135M and all-MiniLM-L6-v2 at their real
           sizes with random weights: logits, flash attention inside, KV-cache greedy, generate()
  lessons  code cells of lessons 04 and 13 in one namespace under torch.set_default_device;
           widget imports removed, cells using widgets/explorers/display(/plt. skipped (listed)
Inputs come from seeded CPU generators; modules are built on the CPU, then moved with .to().
Tolerances (float32, TF32 off): core atol 1e-5 rtol 1e-4; models 1e-4 and 1e-4; 5 training
steps 1e-3 and 1e-3 (Adam amplifies tiny gradients); ids, tokens and masks exactly.

Run:  python benchmarks/cuda_check.py               # CPU against CUDA; exits 0 without CUDA
      python benchmarks/cuda_check.py --device cpu  # every check CPU against CPU (a dry run)
Exit code 1 if any check failed. Needs torch, numpy, tokenizers; no weights, widgets or gguf.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import re
import sys
import time
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script on a machine where the course is not installed
    sys.path.insert(0, str(REPO))

import attention as A  # noqa: E402
from attention import masks as M  # noqa: E402
from attention.models.pretrained.generate import generate  # noqa: E402
from attention.models.pretrained.minilm import MiniLM, MiniLMConfig  # noqa: E402
from attention.models.pretrained.smollm2 import SmolLM2, SmolLM2Config  # noqa: E402
from attention.models.toy import induction as ind  # noqa: E402
from attention.models.toy import recall as rec  # noqa: E402
from attention.models.toy.data import ToyTask, make_batch, sample_texts  # noqa: E402
from attention.models.toy.decoding import greedy_decode  # noqa: E402
from attention.models.toy.rnn import RNNConfig, RNNSeq2Seq, greedy_tokens  # noqa: E402
from attention.models.toy.training import make_model, sequence_loss  # noqa: E402

CORE = {"atol": 1e-5, "rtol": 1e-4}
MODEL = {"atol": 1e-4, "rtol": 1e-4}
TRAIN = {"atol": 1e-3, "rtol": 1e-3}
LESSONS = ("04_scaled_dot_product.ipynb", "13_flash_attention.ipynb")
SKIP_WORDS = ("widgets.", "interact", "explorer", "display(", "plt.")  # matched in lower case
NOT_PYTHON = re.compile(r"^\s*([%!].*|(import|from)\s+(widgets|ipywidgets|anywidget|IPython)\b.*)$",
                        re.M)  # fmt: skip
CPU = torch.device("cpu")
B, H, T, D = 2, 4, 9, 8
results: list[bool] = []


def report(name: str, measured: str, ok: bool, note: str = "") -> None:
    results.append(ok)
    print(f"{name:48s} {measured:>12s}  {'ok' if ok else 'FAIL'}  {note}".rstrip(), flush=True)


def fail(name: str, err: BaseException) -> None:
    said = "; ".join(s.strip() for s in str(err).splitlines() if s.strip())
    report(name, "-", False, f"{type(err).__name__}: {said[:300]}")


def leaves(x: object) -> list[Tensor]:
    """The tensors of a result: a tensor, a dataclass, or a tuple, list or dict of them."""
    if isinstance(x, Tensor):
        return [x.detach()]
    if dataclasses.is_dataclass(x):
        x = [getattr(x, f.name) for f in dataclasses.fields(x)]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in leaves(item)]
    return []  # numbers, strings, None: not compared


def max_diff(want: list[Tensor], got: list[Tensor]) -> float:
    worst = 0.0
    for a, b in zip(want, got, strict=False):
        if a.shape != b.shape or a.numel() == 0:
            continue
        a, b = a.double(), b.double()
        same = (a == b) | (a.isnan() & b.isnan())  # equal infinities count as 0
        worst = max(worst, float(torch.where(same, 0.0, (a - b).abs()).max()))
    return worst


def compare(name: str, fn, dev: torch.device, tol: dict = CORE) -> None:
    """Run fn(cpu) and fn(dev), each after torch.manual_seed(0), and compare every tensor."""
    try:
        torch.manual_seed(0)
        want = leaves(fn(CPU))
        torch.manual_seed(0)
        got = [t.cpu() for t in leaves(fn(dev))]
        diff = max_diff(want, got)
        torch.testing.assert_close(got, want, equal_nan=True, **tol)
        report(name, f"{diff:.1e}", True)
    except Exception as err:
        fail(name, err)


def measure(name: str, fn) -> None:
    """fn() -> (what it measured, ok)."""
    try:
        measured, ok = fn()
        report(name, measured, ok)
    except Exception as err:
        fail(name, err)


# --- core -----------------------------------------------------------------------------------


def qkv(dev: torch.device, hkv: int = H, grad: bool = False) -> list[Tensor]:
    shapes = ((B, H, T, D), (B, hkv, T, D), (B, hkv, T, D))
    return [torch.randn(s).to(dev).requires_grad_(grad) for s in shapes]


def mask(dev: torch.device) -> Tensor:
    """Causal and padding (the second sequence has 5 keys), query 0 of batch 0 sees nothing."""
    m = A.causal_mask(T, device=dev) & A.padding_mask(torch.tensor([T, 5], device=dev), T)[:, None]
    m = m.clone()  # (B, 1, T, T)
    m[0, :, 0] = False
    return m


def sdpa(dev):
    q, k, v = qkv(dev, grad=True)
    r = A.scaled_dot_product_attention(q, k, v, mask(dev))
    r.output.square().sum().backward()
    return r, q.grad, k.grad, v.grad, A.masked_softmax(r.scores, mask(dev)), A.repeat_kv(k, 2)


def masks(dev):
    lens = torch.tensor([3, 6], device=dev)
    pad, valid = A.padding_mask(lens, 6), A.valid_lens_to_mask(lens, 6)  # (B, 1, 6) each
    kpm, add = A.to_key_padding_mask(pad), A.to_additive_mask(pad)
    back = A.from_key_padding_mask(kpm), A.from_additive_mask(add), A.mask_to_valid_lens(valid)
    window = A.sliding_window_mask(6, 3, sinks=1, device=dev)
    docs = M.document_mask(torch.tensor([0, 0, 1, 1, 1], device=dev))
    return A.causal_mask(4, 6, offset=2, device=dev), window, docs, pad, kpm, add, valid, back


def flex(dev):
    window = lambda b, h, qi, ki: (qi >= ki) & (qi - ki < 3)  # noqa: E731
    alibi = lambda s, b, h, qi, ki: s - 0.5 * (qi - ki).abs()  # noqa: E731
    scores = M.scores_from_mod(alibi, torch.randn(5, 7).to(dev))
    counts = torch.tensor(M.block_counts(M.prefix_lm_mask(8, 3, device=dev), 4))
    return M.mask_from_mod(window, 5, 7), scores, counts


def mha(dev, n_kv=None):
    m = A.MultiHeadAttention(32, H, n_kv).to(dev)
    r = m(torch.randn(B, T, 32).to(dev), mask=mask(dev).expand(B, H, T, T))
    r.output.sum().backward()
    return r, [p.grad for p in m.parameters()]


def kv_cache(dev):
    m = A.MultiHeadAttention(32, H, 2).to(dev)
    x = torch.randn(1, T, 32).to(dev)
    rope = lambda t0, n: partial(A.apply_rope, positions=torch.arange(t0, t0 + n, device=dev))  # noqa: E731
    full = m(x, mask=A.causal_mask(T, device=dev), rope=rope(0, T)).output  # (1, T, M)
    past, steps = None, []
    for t in range(T):
        r = m(x[:, t : t + 1], past_kv=past, rope=rope(t, 1))
        past, steps = (r.k, r.v), [*steps, r.output]
    torch.testing.assert_close(torch.cat(steps, 1), full, **CORE)  # cached == full, on dev too
    return full, past


def additive(dev):
    m = A.AdditiveAttention(6, 5, 16).to(dev)
    x = [torch.randn(s).to(dev) for s in ((B, 3, 6), (B, T, 5), (B, T, 7))]
    return m(*x, A.padding_mask(torch.tensor([T, 4], device=dev), T))


def positional(dev):
    q, k, v = qkv(dev)
    pos = torch.arange(T, device=dev)
    biased = (q @ k.mT / D**0.5 + A.alibi_bias(H, T, T).to(dev)).softmax(-1) @ v
    pe = A.sinusoidal_positional_encoding(T, 16, offset=3).to(dev)
    return pe, A.apply_rope(q, pos), A.apply_rope(q, pos, layout="interleaved"), biased


def flash(dev):
    q, k, v = qkv(dev, hkv=2, grad=True)
    a = A.flash_attention(q, k, v, causal=True, block_size=(4, 3))
    b = A.flash_attention(q, k, v, mask(dev), block_size=5)
    (a.output.sum() + b.output.square().sum()).backward()
    last = list(A.flash_attention_steps(q[0, 0], k[0, 0], v[0, 0], block_size=4))[-1]
    return a, b, q.grad, k.grad, last.output, A.online_softmax(torch.randn(11).to(dev), 3)


def latent(dev):
    m = A.MultiHeadLatentAttention(32, H, kv_rank=8, d_nope=8, d_rope=4).to(dev)
    x = torch.randn(B, T, 32).to(dev)
    full = m(x, A.causal_mask(T, device=dev))
    absorbed = m(x, A.causal_mask(T, device=dev), absorbed=True)
    first = m(x[:, :5], A.causal_mask(5, device=dev))
    rest = m(
        x[:, 5:], A.causal_mask(T - 5, T, offset=5, device=dev), past=first.cache, absorbed=True
    )
    return full, absorbed.output, rest.output


def linear(dev):
    q, k, v = qkv(dev)
    k1 = F.normalize(k, dim=-1)
    beta, alpha = torch.rand(B, H, T).to(dev), (0.5 + 0.5 * torch.rand(B, H, T)).to(dev)
    linear = A.linear_attention(q, k, v), A.linear_attention_recurrent(q, k, v)
    return (
        linear,
        A.delta_rule(q, k1, v, beta, alpha),
        A.delta_rule_recurrent(q, k1, v, beta, alpha),
    )


def differential(dev):
    (q1, k1, v), (q2, k2, _) = qkv(dev), qkv(dev)
    lam = A.differential_lambda(*(0.1 * torch.randn(4, D)).to(dev), A.lambda_init(1))
    return lam, A.differential_attention(q1, k1, q2, k2, v, lam, mask(dev))


def paged(dev, pool_on_device: bool):
    if pool_on_device:
        with torch.device(dev):
            cache = A.PagedKVCache(n_blocks=8, block_size=4, n_kv_heads=2, d_head=D)
    else:
        cache = A.PagedKVCache(n_blocks=8, block_size=4, n_kv_heads=2, d_head=D, device=dev)
    k, v = torch.randn(2, T, D).to(dev), torch.randn(2, T, D).to(dev)
    cache.append("a", k[:, :5], v[:, :5])
    cache.append("b", v[:, :3], k[:, :3])  # interleaved: a's blocks are not contiguous
    cache.append("a", k[:, 5:], v[:, 5:])
    return A.paged_attention(torch.randn(H, 3, D).to(dev), cache, "a"), cache.gather("b")


def pooling(dev):
    x = torch.randn(B, T, 16).to(dev)
    pad = torch.arange(T, device=dev) < torch.tensor([[T], [4]], device=dev)  # (B, T)
    mods = [A.AttentionPool(16, 2), A.MemorySlots(16, 3), A.TanhAttention(16, 8, scaled=True)]
    p, s, t = (m.to(dev) for m in mods)
    return p(x, pad), s(x), t(x, pad)


CORE_CHECKS = {
    "sdpa: causal+padding, empty row, grads": sdpa, "masks: helpers and converters": masks,
    "masks: FlexAttention mask_mod / score_mod": flex, "multihead: MHA, grads": mha,
    "multihead: GQA (Hkv=2)": partial(mha, n_kv=2), "multihead: MQA (Hkv=1)": partial(mha, n_kv=1),
    "KV cache + RoPE, token by token == full": kv_cache, "additive attention": additive,
    "positional: sinusoidal, RoPE, ALiBi": positional, "flash: causal, mask, GQA, grads": flash,
    "latent (MLA): explicit, absorbed, cached": latent, "linear attention, delta rule": linear,
    "differential attention": differential,
    "top-k sparse attention": lambda dev: A.topk_attention(*qkv(dev), 3, mask(dev)),
    "paged KV cache, pool built under torch.device": partial(paged, pool_on_device=True),
    "paged KV cache, pool given device=": partial(paged, pool_on_device=False),
    "pooling: AttentionPool, MemorySlots, Tanh": pooling,
}  # fmt: skip


# --- models ---------------------------------------------------------------------------------

TASK, ITASK = ToyTask("reverse"), ind.InductionTask(vocab=32, min_repeat=4, max_repeat=8)


def toy_batch(g: torch.Generator, n: int = 32):
    return make_batch(TASK, sample_texts(TASK, n, split="train", generator=g))


def seq2seq_loss(model, b, dev):
    return sequence_loss(model(b.src.to(dev), b.tgt_in.to(dev)).logits, b.tgt_out.to(dev))


def recall_loss(model, b, dev):
    logits = model(b.keys.to(dev), b.values.to(dev), b.query.to(dev))  # (B, V)
    return F.cross_entropy(logits, b.answer.to(dev))


def induction_loss(model, b, dev):
    b = ind.InductionBatch(b.tokens.to(dev), b.repeat.to(dev))
    return ind.repeated_loss(model(b.tokens).logits, b)


TOY_MODELS = {  # name: (build on the CPU, loss_fn(model, batch, dev), make_batch(generator), lr)
    "toy transformer": (partial(make_model, TASK), seq2seq_loss, toy_batch, 3e-3),
    "GRU + additive": (
        lambda: RNNSeq2Seq(RNNConfig(TASK.tokenizer.vocab_size)), seq2seq_loss, toy_batch, 1e-2),
    "recall (softmax)": (partial(rec.RecallModel, "softmax", 32, 16, 16), recall_loss,
                         partial(rec.make_batch, 64, 4, 16, 16), 1e-2),
    "recall (linear)": (partial(rec.RecallModel, "linear", 32, 16, 16), recall_loss,
                        partial(rec.make_batch, 64, 4, 16, 16), 1e-2),
    "induction": (partial(ind.make_model, ITASK, ind.InductionConfig()), induction_loss,
                  partial(ind.sample_batch, ITASK, 16), 3e-3),
}  # fmt: skip


def train(build, loss_fn, make, lr: float, dev: torch.device, steps: int) -> list[float]:
    """AdamW steps on the device from seed 0: fresh CPU batches, moved by loss_fn."""
    torch.manual_seed(0)
    model, g = build().to(dev).train(), torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model, make(g), dev)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def learns(spec: tuple, dev: torch.device) -> tuple[str, bool]:
    losses = train(*spec, dev, 40)
    first, last = losses[0], sum(losses[-5:]) / 5
    return f"{first:.2f} -> {last:.2f}", last < 0.95 * first


def forward_loss(build, loss_fn, batch, dev: torch.device) -> Tensor:
    return loss_fn(build().to(dev), batch, dev)


def run_on(model, fn, inputs: tuple, dev: torch.device):
    """fn(model on dev, *inputs on dev); model is a module or a function that builds one."""
    model = model if isinstance(model, torch.nn.Module) else model()
    return fn(model.to(dev), *(x.to(dev) for x in inputs))


def init_random(model: torch.nn.Module) -> torch.nn.Module:
    """Random weights of a trained model's scale: N(0, 0.02) matrices, norms and biases kept."""
    for p in model.parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    return model.eval()


def greedy(model: SmolLM2, ids: Tensor, n: int = 8) -> Tensor:
    """n greedy tokens after ids (B, T), feeding only the new token with the KV cache."""
    out = model(ids, use_cache=True, need_weights=False, last_only=True)
    new = []
    for _ in range(n):
        new.append(out.logits[:, -1].argmax(-1, keepdim=True))  # (B, 1)
        out = model(new[-1], cache=out.cache, use_cache=True, need_weights=False, last_only=True)
    new = torch.cat(new, 1)  # (B, n)
    full = model(torch.cat([ids, new], 1), need_weights=False).logits  # (B, T + n, V), no cache
    torch.testing.assert_close(full[:, ids.shape[1] - 1 : -1].argmax(-1), new, atol=0, rtol=0)
    return new


class NumberTokenizer:
    """All generate() needs of a tokenizer, for random weights: ids written as numbers."""

    stop_ids = frozenset()

    def encode(self, text: str) -> list[int]:
        return [int(w) for w in text.split()]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return " ".join(map(str, ids))


def generated(model: SmolLM2, ids: Tensor) -> Tensor:
    prompt = " ".join(map(str, ids[0].tolist()))  # generate() builds its own (1, T) tensor
    return torch.tensor(generate(model, NumberTokenizer(), prompt, max_new_tokens=8).new_ids)


def model_checks(dev: torch.device) -> None:
    for name, spec in TOY_MODELS.items():
        build, loss_fn, make, _ = spec
        batch = make(torch.Generator().manual_seed(1))
        compare(f"{name}: forward loss", partial(forward_loss, build, loss_fn, batch), dev, MODEL)
        measure(f"{name}: 40 steps lower the loss", partial(learns, spec, dev))
    src = toy_batch(torch.Generator().manual_seed(1), 16).src
    toy, gru = TOY_MODELS["toy transformer"], TOY_MODELS["GRU + additive"]
    checks = {
        "toy transformer: logits": (toy[0], lambda m, x: m(x, x).logits, (src,)),
        "toy transformer: greedy decode (KV cache)": (toy[0], greedy_decode, (src,)),
        "toy transformer: 5 AdamW steps": (None, lambda d: torch.tensor(train(*toy, d, 5)), ()),
        "GRU: greedy tokens": (gru[0], partial(greedy_tokens, max_steps=11), (src,)),
    }
    torch.manual_seed(0)
    smol = init_random(SmolLM2(SmolLM2Config(49152, 576, 30, 9, 1536)))  # SmolLM2-135M's sizes
    ids = torch.randint(0, 49152, (2, 12))
    flash = {"attention_fn": A.flash_attention, "need_weights": False}
    checks |= {
        "smollm2-135m (random): logits, attentions": (smol, lambda m, x: m(x), (ids,)),
        "smollm2-135m: flash attention inside": (smol, lambda m, x: m(x, **flash).logits, (ids,)),
        "smollm2-135m: greedy, KV cache == no cache": (smol, greedy, (ids,)),
        "smollm2-135m: generate()": (smol, generated, (ids,)),
    }
    torch.manual_seed(0)
    mini = init_random(MiniLM(MiniLMConfig(30522, 384, 6, 12, 1536)))  # all-MiniLM-L6-v2's sizes
    ids, real = torch.randint(0, 30522, (2, 12)), torch.arange(12) < torch.tensor([[12], [7]])
    checks |= {
        "minilm-l6 (random): hidden, attentions, padding": (
            mini, lambda m, x, r: m(x, attention_mask=r), (ids, real)),
        "minilm-l6: sentence embedding": (mini, MiniLM.sentence_embedding, (ids, real)),
        "minilm-l6: flash attention inside": (
            mini, lambda m, x, r: m(x, attention_mask=r, **flash).hidden, (ids, real)),
    }  # fmt: skip
    for name, (model, fn, inputs) in checks.items():
        tol = TRAIN if model is None else MODEL
        compare(name, fn if model is None else partial(run_on, model, fn, inputs), dev, tol)


# --- lessons --------------------------------------------------------------------------------


def lesson_checks(path: Path, dev: torch.device) -> None:
    cells = [(i, "".join(c["source"])) for i, c in enumerate(json.loads(path.read_text())["cells"])
             if c["cell_type"] == "code"]  # fmt: skip
    namespace: dict = {"__name__": "__lesson__"}
    skipped = []
    torch.set_default_device(dev)
    try:
        for i, source in cells:
            source = NOT_PYTHON.sub("pass  # removed: widget import or notebook magic", source)
            if any(word in source.lower() for word in SKIP_WORDS):
                skipped.append(i)
                continue
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(source, f"{path.name} cell {i}", "exec"), namespace)
                wrong = [s for s in out.getvalue().splitlines() if s.startswith("Not yet")]
                report(f"{path.stem} cell {i}", "ran", not wrong, wrong[0][:300] if wrong else "")
            except Exception as err:
                fail(f"{path.stem} cell {i}", err)
    finally:
        torch.set_default_device(None)
    print(f"{path.stem}: skipped cells {skipped} (widgets, explorers, display or plt)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu for a dry run")
    dev = torch.device(parser.parse_args(argv).device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to compare")
        return 0
    os.environ["MPLBACKEND"] = "Agg"  # before any lesson cell imports matplotlib
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else dev.type
    start = time.perf_counter()
    print(f"comparing cpu with {dev} ({name}); torch {torch.__version__}")
    for check, fn in CORE_CHECKS.items():
        compare(check, fn, dev)
    model_checks(dev)
    for lesson in LESSONS:
        lesson_checks(REPO / "lessons" / lesson, dev)
    failed = results.count(False)
    print(f"{len(results)} checks, {failed} failed; torch {torch.__version__}, device {name}, "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
