"""A tiny real Llama checkpoint for tests that start real engines, routers and frontends.

Random weights (hidden 64, 2 layers, head_dim 32) written with `safetensors` + `numpy`, and
a word-level tokenizer trained here with `tokenizers`, so no model hub and no `transformers`
are needed. The tokenizer is shaped for disagg's load generator and for engines that emit
random ids (the Dynamo mocker):

- vocabulary >= 32k: every id in `disagg.bench.prompts.DEFAULT_ID_RANGE` exists;
- every word of one to three letters (lower case or capitalised, with or without a leading
  space) is exactly one token, so synthetic word prompts count exactly;
- every id outside the three special tokens (ids 0-2) decodes to a visible word with its
  leading space, and decoding any such id sequence re-encodes to the same ids.

`tokenizer_config.json` uses the classic keys (`tokenizer_class: PreTrainedTokenizerFast`,
`chat_template`) that the Rust loaders of smg and Dynamo read, and config.json carries
`rope_theta`.

Tests take the session fixture `tiny_model` (tests/conftest.py); scripts can build one with
`python tests/tiny_model.py DIR`.
"""

from __future__ import annotations

import itertools
import json
import string
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SERVED_NAME = "tiny-llama"
HIDDEN = 64
LAYERS = 2
HEAD_DIM = 32
HEADS = HIDDEN // HEAD_DIM
INTERMEDIATE = 128
MAX_POSITIONS = 4096
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2, as in Llama checkpoints
# Role words of the chat template, so a templated prompt has no unknown token.
EXTRA_WORDS = ("system", "user", "assistant")
# Words and single spaces only (content trimmed): nothing the vocabulary would not know.
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if not loop.first %}{{ ' ' }}{% endif %}"
    "{{ message['role'] + ' ' + message['content'] | trim }}{% endfor %}"
    "{% if add_generation_prompt %}{{ ' assistant' }}{% endif %}"
)


@dataclass(frozen=True)
class TinyModel:
    """A built checkpoint: where it is and what a test needs to talk to it."""

    path: Path
    served_name: str
    vocab_size: int
    max_model_len: int

    @property
    def word_ids(self) -> range:
        """Ids that decode to one visible word each (everything but the special tokens)."""
        return range(len(SPECIAL_TOKENS), self.vocab_size)


def _short_words() -> Iterator[str]:
    letters = string.ascii_lowercase
    for length in (1, 2, 3):
        for chars in itertools.product(letters, repeat=length):
            word = "".join(chars)
            yield word
            yield word.capitalize()
    yield from EXTRA_WORDS


def train_tokenizer() -> Tokenizer:
    """Word-level tokenizer over every short word, trained on a corpus that lists each once.

    Byte-level pre-tokenisation with an added prefix space makes `"the"` at the start of a
    text and `" the"` after a word the same token (`Ġthe`); the byte-level decoder turns
    `Ġ` back into a space, so decoded text re-encodes to the same ids.
    """
    tokenizer = Tokenizer(models.WordLevel(unk_token=SPECIAL_TOKENS[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    words = list(_short_words())
    trainer = trainers.WordLevelTrainer(
        vocab_size=len(words) + len(SPECIAL_TOKENS),
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    tokenizer.train_from_iterator(words, trainer=trainer)
    return tokenizer


def _config(vocab_size: int) -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": True,
        "vocab_size": vocab_size,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "float32",
    }


def _weights(vocab_size: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

    tensors = {
        "model.embed_tokens.weight": normal(vocab_size, HIDDEN),
        "model.norm.weight": np.ones(HIDDEN, dtype=np.float32),
    }
    for layer in range(LAYERS):
        p = f"model.layers.{layer}"
        tensors[f"{p}.input_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
        tensors[f"{p}.post_attention_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
        for proj in ("q_proj", "k_proj", "v_proj"):
            tensors[f"{p}.self_attn.{proj}.weight"] = normal(HEADS * HEAD_DIM, HIDDEN)
        tensors[f"{p}.self_attn.o_proj.weight"] = normal(HIDDEN, HEADS * HEAD_DIM)
        tensors[f"{p}.mlp.gate_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        tensors[f"{p}.mlp.up_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        tensors[f"{p}.mlp.down_proj.weight"] = normal(HIDDEN, INTERMEDIATE)
    return tensors


def _tokenizer_config() -> dict[str, object]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": SPECIAL_TOKENS[0],
        "bos_token": SPECIAL_TOKENS[1],
        "eos_token": SPECIAL_TOKENS[2],
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MAX_POSITIONS,
        "chat_template": CHAT_TEMPLATE,
    }


def build_tiny_model(directory: Path, *, seed: int = 0) -> TinyModel:
    """Write the checkpoint into `directory` (created) and describe it."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer()
    vocab_size = tokenizer.get_vocab_size()
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps(_tokenizer_config(), indent=2))
    (directory / "special_tokens_map.json").write_text(
        json.dumps(dict(zip(("unk_token", "bos_token", "eos_token"), SPECIAL_TOKENS, strict=True)))
    )
    (directory / "config.json").write_text(json.dumps(_config(vocab_size), indent=2))
    generation = {"bos_token_id": 1, "eos_token_id": 2}
    (directory / "generation_config.json").write_text(json.dumps(generation))
    save_file(_weights(vocab_size, seed), str(directory / "model.safetensors"), {"format": "pt"})
    return TinyModel(directory, SERVED_NAME, vocab_size, max_model_len=2048)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/tiny_model.py DIR")
    model = build_tiny_model(Path(sys.argv[1]))
    print(model.path)
