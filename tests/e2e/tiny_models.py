"""Tiny llama-architecture GGUF models for the end-to-end tests, written with ``gguf``.

The tokenizer is copied from a vocab-only GGUF shipped with llama.cpp's source
(``models/ggml-vocab-llama-spm.gguf``, kept by :mod:`llama_build`) and cut to
its first ``n_vocab`` pieces: the SentencePiece byte-fallback pieces
(``<0x00>``..``<0xFF>``, ids 3-258) all survive the cut, so any text still
tokenizes, and a small vocabulary keeps the output layer (the bulk of the
work per token) cheap.  Weights are seeded random numbers; a draft model is the
target's weights plus noise, so ``noise=0`` gives a draft that greedy
verification accepts in full and a larger noise one that it accepts less often.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ARCH = "llama"
VOCAB_FILE = "ggml-vocab-llama-spm.gguf"
CONTROL_PIECES = 3  # <unk>, <s>, </s> of the SentencePiece vocabulary


def tokenizer_fields(vocab_path, n_vocab=512):
    """``(key, value, type, sub_type)`` for every ``tokenizer.*`` key, arrays cut to n_vocab."""
    import gguf

    reader = gguf.GGUFReader(str(vocab_path))  # memory-mapped; arrays cut below
    out = []
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        main = field.types[0]
        if main == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            kept = field.data[:n_vocab]
            if sub == gguf.GGUFValueType.STRING:
                values = [bytes(field.parts[i]).decode("utf-8") for i in kept]
            else:
                values = [field.parts[i].tolist()[0] for i in kept]
            out.append((name, values, main, sub))
        elif main == gguf.GGUFValueType.STRING:
            out.append((name, bytes(field.parts[field.data[0]]).decode("utf-8"), main, None))
        else:
            out.append((name, field.parts[field.data[0]].tolist()[0], main, None))
    return out


def _weights(rng, n_vocab, n_embd, n_ff, n_layer):
    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    tensors = {"token_embd.weight": mat(n_vocab, n_embd),
               "output_norm.weight": np.ones(n_embd, dtype=np.float32),
               "output.weight": mat(n_vocab, n_embd)}
    for i in range(n_layer):
        p = f"blk.{i}."
        tensors[p + "attn_norm.weight"] = np.ones(n_embd, dtype=np.float32)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensors[p + name + ".weight"] = mat(n_embd, n_embd)
        tensors[p + "ffn_norm.weight"] = np.ones(n_embd, dtype=np.float32)
        tensors[p + "ffn_gate.weight"] = mat(n_ff, n_embd)
        tensors[p + "ffn_up.weight"] = mat(n_ff, n_embd)
        tensors[p + "ffn_down.weight"] = mat(n_embd, n_ff)
    return tensors


def write_model(path, vocab_path=None, *, tokenizer=None, n_vocab=512, n_embd=64, n_ff=128, n_layer=2, n_head=4,
                n_ctx=1024, seed=0, noise=0.0, noise_seed=1, name="goldenal-tiny"):
    """Write one tiny model; the weights depend on ``seed`` only, plus ``noise`` x N(0, 1).

    ``tokenizer`` is :func:`tokenizer_fields` of the vocab file, read once for several models.
    """
    import gguf

    if tokenizer is None:
        tokenizer = tokenizer_fields(vocab_path, n_vocab)

    tensors = _weights(np.random.default_rng(seed), n_vocab, n_embd, n_ff, n_layer)
    if noise:
        rng = np.random.default_rng(noise_seed)
        for key, value in tensors.items():
            if value.ndim == 2:
                tensors[key] = (value + noise * rng.standard_normal(value.shape)
                                / np.sqrt(value.shape[1])).astype(np.float32)
    # No logit for the control pieces (unk, bos, eos: ids 0-2): greedy decoding then never
    # picks them.  llama-server never accepts a drafted end-of-generation token, even with
    # a synthetic rate of 1 (server_sample_and_accept_synth), so a random model drafting
    # eos now and then would cut synthetic steps short.
    tensors["output.weight"][:CONTROL_PIECES] = 0.0
    writer = gguf.GGUFWriter(str(path), ARCH)
    writer.add_name(name)
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for key, value, vtype, sub in tokenizer:
        writer.add_key_value(key, value, vtype, sub)
    for key, value in tensors.items():
        writer.add_tensor(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path)


def write_models(directory, vocab_path, *, noise=0.1):
    """``{"target", "draft" (same weights), "noisy" (perturbed draft)}`` paths in ``directory``.

    With ``noise=0.1`` the perturbed draft is accepted at a smoothly decaying
    rate (here about [0.41, 0.18, 0.09] per position at K=3, AL 1.7), as real
    acceptance is; 0.5 is accepted almost never.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tok = tokenizer_fields(vocab_path)
    return {"target": write_model(directory / "target.gguf", tokenizer=tok),
            "draft": write_model(directory / "draft.gguf", tokenizer=tok,
                                 name="goldenal-tiny-draft"),
            "noisy": write_model(directory / "noisy.gguf", tokenizer=tok, noise=noise,
                                 name="goldenal-tiny-noisy")}
