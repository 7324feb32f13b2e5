"""The tiny checkpoint is what real engines, routers and the load generator rely on."""

from __future__ import annotations

import json

from safetensors import safe_open
from tokenizers import Tokenizer

from disagg.bench.prompts import DEFAULT_ID_RANGE, SYNTHETIC_WORDS, PromptFactory, PromptSettings
from disagg.staging.checkpoint import check_directory
from tiny_model import SPECIAL_TOKENS, TinyModel


def _tokenizer(model: TinyModel) -> Tokenizer:
    return Tokenizer.from_file(str(model.path / "tokenizer.json"))


def test_vocabulary_covers_the_load_generators_id_range(tiny_model: TinyModel) -> None:
    tok = _tokenizer(tiny_model)
    assert tok.get_vocab_size() == tiny_model.vocab_size >= 32_000
    assert DEFAULT_ID_RANGE[1] < tiny_model.vocab_size
    config = json.loads((tiny_model.path / "config.json").read_text())
    assert config["vocab_size"] == tiny_model.vocab_size
    assert config["rope_theta"] > 0


def test_every_short_word_is_one_token(tiny_model: TinyModel) -> None:
    tok = _tokenizer(tiny_model)
    unk = tok.token_to_id(SPECIAL_TOKENS[0])
    for word in [*SYNTHETIC_WORDS, " The", " Ox", "a", "zzz"]:
        ids = tok.encode(word, add_special_tokens=False).ids
        assert len(ids) == 1 and ids[0] != unk, (word, ids)
    sentence = "".join(SYNTHETIC_WORDS).lstrip()
    assert len(tok.encode(sentence).ids) == len(SYNTHETIC_WORDS)


def test_every_word_id_decodes_to_visible_text_that_re_encodes_to_itself(
    tiny_model: TinyModel,
) -> None:
    tok = _tokenizer(tiny_model)
    ids = list(tiny_model.word_ids)
    pieces = [tok.decode([i]) for i in ids]
    assert all(piece.strip() and piece.isprintable() for piece in pieces)
    assert tok.encode(tok.decode(ids)).ids == ids


def test_checkpoint_is_complete_for_disaggs_own_check(tiny_model: TinyModel) -> None:
    report = check_directory(str(tiny_model.path))
    assert report.complete, report.problems
    assert report.safetensors_files == 1


def test_weights_match_the_config(tiny_model: TinyModel) -> None:
    config = json.loads((tiny_model.path / "config.json").read_text())
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    assert (hidden, config["num_hidden_layers"], config["head_dim"]) == (64, 2, 32)
    with safe_open(str(tiny_model.path / "model.safetensors"), "numpy") as f:
        names = set(f.keys())
        assert f.get_slice("model.embed_tokens.weight").get_shape() == [
            tiny_model.vocab_size,
            hidden,
        ]
        q = f.get_slice("model.layers.1.self_attn.q_proj.weight").get_shape()
    assert q == [heads * config["head_dim"], hidden]
    assert {f"model.layers.{i}.mlp.down_proj.weight" for i in range(2)} <= names


def test_text_prompts_from_the_load_generator_have_exact_lengths(tiny_model: TinyModel) -> None:
    settings = PromptSettings(
        model=tiny_model.served_name,
        isl=37,
        osl=4,
        tokenizer=str(tiny_model.path),
        prompt_format="text",
    )
    tok = _tokenizer(tiny_model)
    for spec in PromptFactory(settings).build(5):
        prompt = json.loads(spec.body)["prompt"]
        assert len(tok.encode(prompt, add_special_tokens=False).ids) == spec.input_len == 37


def test_chat_template_renders_only_known_tokens(tiny_model: TinyModel) -> None:
    settings = PromptSettings(
        model=tiny_model.served_name,
        isl=8,
        osl=4,
        tokenizer=str(tiny_model.path),
        chat_template=True,
    )
    tok = _tokenizer(tiny_model)
    config = json.loads((tiny_model.path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    prompt = json.loads(PromptFactory(settings).build(1)[0].body)["prompt"]
    ids = tok.encode(prompt).ids
    assert tok.token_to_id(SPECIAL_TOKENS[0]) not in ids
    assert tok.decode(ids).split()[0] == "user"
    assert tok.decode(ids).split()[-1] == "assistant"
