"""Synthetic prompts with exact lengths, and the request bodies built from them.

A prompt is random token ids (the server sees exactly `isl` tokens, no tokenizer
needed) or text, which the chat endpoint, chat templates and the sglang-router (it
rejects token ids) need. Bodies are serialised before the measured window so the hot
path only sends bytes; past `EAGER_BYTES` they are built just before each send
(`LazySpecs`), from the same per-request seed, so both ways give the same bytes.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from disagg.bench.records import RequestSpec
from disagg.errors import DisaggError

if TYPE_CHECKING:
    from disagg.plan.model import BenchPlan

EAGER_BYTES = 256 * 1024 * 1024  # request bodies of one point built ahead of the window
_BODY_BYTES_PER_TOKEN = 6  # a token id and its comma; a word and its space is less
_BODY_OVERHEAD = 256  # model name, max_tokens, stream options...

# Ids every common vocabulary (>= 32k entries) has, away from special tokens at the ends.
DEFAULT_ID_RANGE = (1000, 30000)

# Words of at most three letters: with their leading space each is a single token in
# common BPE vocabularies, and at most four characters, so a server that can only
# estimate (words, or characters / 4) counts exactly one token per word.
_WORDS = """
the of and to in is it on at by we he be as or an do go so up if no my me us am oh ox
ax ah hi ha yes not but for you all any can had her was one our out day get has him his
how man new now old see two way who boy did its let put say she too use sun sea sky red
big top run cat dog car bus sit cup pen box
"""
SYNTHETIC_WORDS = tuple(" " + word for word in _WORDS.split())


@dataclass(frozen=True)
class PromptSettings:
    """How to build prompts and request bodies for one run."""

    model: str
    isl: int
    osl: int
    range_ratio: float = 1.0  # lengths uniform in [ratio * n, n]; 1 = exact
    endpoint: str = "completions"  # or "chat"
    tokenizer: str | None = None
    chat_template: bool = False
    ignore_eos: bool = True
    seed: int = 0
    prompt_format: str = "token_ids"  # or "text"

    @classmethod
    def of(cls, bench: BenchPlan, prompt_format: str | None = None) -> PromptSettings:
        """The settings a planned benchmark asks for (`prompt_format` overrides its own)."""
        return cls(
            model=bench.model_name,
            isl=bench.isl,
            osl=bench.osl,
            range_ratio=bench.random_range_ratio,
            endpoint=bench.endpoint,
            tokenizer=bench.tokenizer,
            chat_template=bench.use_chat_template,
            ignore_eos=bench.ignore_eos,
            seed=bench.seed,
            prompt_format=prompt_format or bench.prompt_format,
        )


def load_tokenizer(path: str) -> Any:
    """A `tokenizers.Tokenizer` from a model directory or a `tokenizer.json` file."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise DisaggError(
            "a tokenizer was asked for but the `tokenizers` package is not installed",
            hint="install it in this environment, or drop --tokenizer to use token-id prompts",
        ) from exc
    file = Path(path)
    if file.is_dir():
        file = file / "tokenizer.json"
    if not file.is_file():
        raise DisaggError(
            f"no tokenizer.json at {file}",
            hint="pass the model directory that holds tokenizer.json",
        )
    try:
        return Tokenizer.from_file(str(file))
    except Exception as exc:
        raise DisaggError(f"{file}: cannot load the tokenizer: {exc}") from exc


def _length(rng: random.Random, mean: int, ratio: float) -> int:
    """An integer length uniform in [n * ratio, n], at least 1: what `random_range_ratio`
    means to srt-slurm's sa-bench and InferenceX (1.0 pins every request to n tokens)."""
    return rng.randint(max(1, round(mean * ratio)), mean)


def _rng(seed: int, seed_offset: int, index: int) -> random.Random:
    """Request `index`'s own generator: its prompt does not depend on any other's."""
    return random.Random(((seed * 1_000_003 + seed_offset) << 40) + index)


def _random_ids(rng: random.Random, length: int, low: int, high: int) -> list[int]:
    return rng.choices(range(low, high), k=length)


def _text_of_length(tokenizer: Any, rng: random.Random, length: int, low: int, high: int) -> str:
    """Text that re-encodes to `length` tokens (or as close as a few rounds get)."""
    ids = _random_ids(rng, length, low, high)
    text: str = tokenizer.decode(ids)
    for _ in range(8):
        got = tokenizer.encode(text, add_special_tokens=False).ids
        if len(got) == length:
            break
        if len(got) > length:
            got = got[:length]
        else:
            got = got + _random_ids(rng, length - len(got), low, high)
        text = tokenizer.decode(got)
    return text


class PromptFactory:
    """Builds the request specs for warm-up and measured requests of a run."""

    def __init__(self, settings: PromptSettings) -> None:
        self.settings = settings
        self.tokenizer: Any = None
        low, high = DEFAULT_ID_RANGE
        if settings.tokenizer is not None:
            self.tokenizer = load_tokenizer(settings.tokenizer)
            vocab = int(self.tokenizer.get_vocab_size())
            # keep clear of special tokens, which sit at the ends of most vocabularies
            low, high = (min(low, vocab // 4), vocab - 256) if vocab > 2048 else (0, vocab)
        elif settings.chat_template:
            raise DisaggError(
                "--chat-template needs a tokenizer (the template is in tokenizer_config.json)",
                hint="pass --tokenizer MODEL_DIR, or use --endpoint chat to let the server "
                "apply its template",
            )
        if settings.prompt_format not in ("token_ids", "text"):
            raise DisaggError(f"unknown prompt format {settings.prompt_format!r}")
        self.id_range = (low, high)
        self.template = _chat_template(settings.tokenizer) if settings.chat_template else None

    def build(self, count: int, *, seed_offset: int = 0) -> Sequence[RequestSpec]:
        """`count` requests: built now when their bodies fit in EAGER_BYTES, else lazily."""
        s = self.settings
        if not 0.0 <= s.range_ratio <= 1.0:
            raise DisaggError(
                f"range ratio must be in [0, 1], got {s.range_ratio:g}",
                hint="lengths are drawn from [ratio * n, n]; 1 means exactly n",
            )
        if count * (_BODY_BYTES_PER_TOKEN * s.isl + _BODY_OVERHEAD) > EAGER_BYTES:
            return LazySpecs(s, range(count), seed_offset, self)
        return [self.spec_at(i, seed_offset) for i in range(count)]

    def lengths_at(self, index: int, seed_offset: int = 0) -> tuple[random.Random, int, int]:
        """Request `index`'s generator, after drawing its input and output lengths."""
        s = self.settings
        rng = _rng(s.seed, seed_offset, index)
        return rng, _length(rng, s.isl, s.range_ratio), _length(rng, s.osl, s.range_ratio)

    def spec_at(self, index: int, seed_offset: int = 0) -> RequestSpec:
        """Request `index` of a build (the same bytes whenever it is asked for)."""
        rng, isl, osl = self.lengths_at(index, seed_offset)
        s = self.settings
        if s.endpoint != "chat" and self.template is None and s.prompt_format != "text":
            low, high = self.id_range
            return self.request(index, _random_ids(rng, isl, low, high), isl, osl)
        return self.request(index, self.text(rng, isl), isl, osl)

    def request(self, index: int, prompt: str | list[int], isl: int, osl: int) -> RequestSpec:
        """The serialised request for one prompt (text, or token ids for completions)."""
        s = self.settings
        body: dict[str, Any] = {"model": s.model}
        if s.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
            body["max_completion_tokens"] = osl
        elif self.template is not None and isinstance(prompt, str):
            body["prompt"] = self.template(prompt)
        else:
            body["prompt"] = prompt
        body["max_tokens"] = osl
        body["temperature"] = 0.0
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if s.ignore_eos:
            body["ignore_eos"] = True
        data = json.dumps(body, separators=(",", ":")).encode()
        return RequestSpec(index=index, body=data, input_len=isl, output_len=osl)

    def head(self, text: str, length: int) -> str:
        """The first `length` tokens of `text` built by `text()` (for shared prefixes)."""
        if self.tokenizer is None:
            return " ".join(text.split(" ")[:length])  # one word a token
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids[:length]
        return str(self.tokenizer.decode(ids))

    def text(self, rng: random.Random, length: int) -> str:
        """Text of `length` tokens (exact with a tokenizer, one word a token without)."""
        if self.tokenizer is None:
            return "".join(rng.choices(SYNTHETIC_WORDS, k=length)).lstrip()
        low, high = self.id_range
        return _text_of_length(self.tokenizer, rng, length, low, high)


class LazySpecs(Sequence[RequestSpec]):
    """A point's requests, each built when asked for: memory stays flat however many.

    Picklable (worker processes get their share by slicing): the factory, which may hold
    a tokenizer, is made again from the settings on first use in each process.
    """

    def __init__(
        self,
        settings: PromptSettings,
        indices: range,
        seed_offset: int,
        factory: PromptFactory | None = None,
    ) -> None:
        self.settings = settings
        self.indices = indices
        self.seed_offset = seed_offset
        self._factory = factory

    @property
    def factory(self) -> PromptFactory:
        if self._factory is None:
            self._factory = PromptFactory(self.settings)
        return self._factory

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_factory": None}

    def __len__(self) -> int:
        return len(self.indices)

    @overload
    def __getitem__(self, item: int) -> RequestSpec: ...

    @overload
    def __getitem__(self, item: slice) -> LazySpecs: ...

    def __getitem__(self, item: int | slice) -> RequestSpec | LazySpecs:
        if isinstance(item, slice):
            return LazySpecs(self.settings, self.indices[item], self.seed_offset, self._factory)
        return self.factory.spec_at(self.indices[item], self.seed_offset)

    def lengths(self) -> Iterator[tuple[int, int, int]]:
        """(index, input length, output length) of each request, without building bodies."""
        for index in self.indices:
            _, isl, osl = self.factory.lengths_at(index, self.seed_offset)
            yield index, isl, osl


def _chat_template(path: str | None) -> Any:
    """Render a user message with the model's chat template (tokenizer_config.json)."""
    if path is None:
        raise DisaggError("--chat-template needs --tokenizer MODEL_DIR")
    config_file = Path(path) / "tokenizer_config.json"
    try:
        config = json.loads(config_file.read_text())
    except (OSError, ValueError) as exc:
        raise DisaggError(f"{config_file}: cannot read the chat template: {exc}") from exc
    source = config.get("chat_template")
    if not isinstance(source, str):
        raise DisaggError(
            f"{config_file}: no chat_template string",
            hint="use --endpoint chat to let the server apply its template",
        )
    try:
        jinja2 = importlib.import_module("jinja2")  # optional: only this flag needs it
    except ImportError as exc:
        raise DisaggError(
            "--chat-template needs the `jinja2` package",
            hint="install it, or use --endpoint chat to let the server apply its template",
        ) from exc
    template = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(source)

    def render(text: str) -> str:
        return str(
            template.render(
                messages=[{"role": "user", "content": text}],
                add_generation_prompt=True,
                bos_token=_special(config.get("bos_token")),
                eos_token=_special(config.get("eos_token")),
                raise_exception=_raise,
            )
        )

    return render


def _raise(message: str) -> None:
    raise DisaggError(f"the chat template refused the prompt: {message}")


def _special(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("content", ""))
    return str(value or "")
