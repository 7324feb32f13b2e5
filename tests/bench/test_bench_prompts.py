"""Prompts have the lengths asked for; text prompts and the chat endpoint work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.bench.prompts import PromptFactory, PromptSettings
from disagg.errors import DisaggError
from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A word-level tokenizer with 3000 words, saved as tokenizer.json."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(2999)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path_factory.mktemp("tok")
    tok.save(str(folder / "tokenizer.json"))
    return folder


def test_token_id_prompts_have_exact_lengths_and_honour_the_range_ratio() -> None:
    exact = PromptFactory(PromptSettings(model="m", isl=100, osl=10)).build(20)
    assert [len(json.loads(s.body)["prompt"]) for s in exact] == [100] * 20
    spread = PromptFactory(PromptSettings(model="m", isl=100, osl=10, range_ratio=0.5)).build(200)
    lens = [len(json.loads(s.body)["prompt"]) for s in spread]
    # sa-bench's meaning, which recipes use: uniform in [ratio * isl, isl]
    assert min(lens) >= 50 and max(lens) <= 100 and len(set(lens)) > 20
    assert [s.input_len for s in spread] == lens
    body = json.loads(exact[0].body)
    assert body["ignore_eos"] is True and body["max_tokens"] == 10
    assert body["stream_options"] == {"include_usage": True}


def test_same_seed_same_prompts() -> None:
    settings = PromptSettings(model="m", isl=50, osl=5, seed=7)
    assert PromptFactory(settings).build(5) == PromptFactory(settings).build(5)


def test_text_prompts_re_encode_to_the_requested_length(tokenizer_dir: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    specs = PromptFactory(
        PromptSettings(model="m", isl=64, osl=8, endpoint="chat", tokenizer=str(tokenizer_dir))
    ).build(5)
    for spec in specs:
        text = json.loads(spec.body)["messages"][0]["content"]
        assert len(tok.encode(text, add_special_tokens=False).ids) == 64


def test_chat_endpoint_end_to_end(tokenizer_dir: Path, out: Path) -> None:
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1)) as url:
        run = measure(url, plan(endpoint="chat", tokenizer=str(tokenizer_dir)), out)
    r = run.result
    assert run.valid, r["invalid_reason"]
    assert r["backend"] == "openai-chat" and r["completed"] == 16
    assert r["output_lens"] == [16] * 16  # the role chunk with empty content is not a token


def test_a_chat_template_without_a_tokenizer_is_a_user_error() -> None:
    with pytest.raises(DisaggError, match="needs a tokenizer"):
        PromptFactory(PromptSettings(model="m", isl=8, osl=8, chat_template=True))
    with pytest.raises(DisaggError, match=r"no tokenizer\.json"):
        PromptFactory(PromptSettings(model="m", isl=8, osl=8, tokenizer="/nonexistent"))


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        (PromptSettings(model="m", isl=300, osl=8, prompt_format="text"), "prompt"),
        (PromptSettings(model="m", isl=300, osl=8, endpoint="chat"), "messages"),
    ],
)
def test_text_prompts_without_a_tokenizer_are_synthetic_words(
    settings: PromptSettings, where: str
) -> None:
    """Behind the sglang-router prompts must be text; without a tokenizer each word is a token."""
    specs = PromptFactory(settings).build(5)
    texts = []
    for spec in specs:
        body = json.loads(spec.body)
        text = body["prompt"] if where == "prompt" else body["messages"][0]["content"]
        assert isinstance(text, str)
        words = text.split(" ")
        assert len(words) == 300
        assert all(1 <= len(word) <= 3 and word.isalpha() for word in words)
        texts.append(text)
    assert len(set(texts)) == 5  # different prompts, so no prefix cache hides prefill cost
