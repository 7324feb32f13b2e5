"""OpenAI-compatible request parsing and response rendering for the simulated engine.

Output text is one `" tok"` piece per token. Without a tokenizer, token ids count exactly
and text as max(words, ceil(chars / 4)), which matches common BPE tokenizers on English
and counts our own pieces exactly; a chat message adds 3 template tokens. Streaming chunks
are rendered from a per-request prefix string, not `json.dumps`: they are the hot path.
"""

from __future__ import annotations

import json
import math
import random
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["completions", "chat", "generate"]
PIECE = " tok"
CHAT_TOKENS_PER_MESSAGE = 3


class BadRequest(Exception):
    """A request the engine refuses with HTTP 400 (OpenAI error shape)."""


@dataclass(frozen=True)
class Prompt:
    tokens: int
    key: int  # stable hash of the prompt, seeds the pseudo-random EOS


@dataclass(frozen=True)
class GenRequest:
    kind: Kind
    prompts: list[Prompt]
    max_tokens: int
    min_tokens: int
    ignore_eos: bool
    stream: bool
    include_usage: bool
    model: str
    seed: int | None
    rooms: list[int] | None
    bootstrap_hosts: list[str] | None  # one per prompt (the router sends lists for batches)
    bootstrap_ports: list[int] | None

    def stop_at(self, index: int, default_seed: int) -> int:
        """Where EOS falls for prompt `index`: uniform in [max(1, min_tokens), max_tokens]."""
        if self.ignore_eos:
            return self.max_tokens
        seed = self.seed if self.seed is not None else default_seed
        rng = random.Random(f"{seed}:{self.prompts[index].key}:{self.max_tokens}:{index}")
        low = min(max(1, self.min_tokens), self.max_tokens)
        return rng.randint(low, self.max_tokens)


def count_text(text: str) -> int:
    return max(len(text.split()), math.ceil(len(text) / 4))


def _prompt(value: Any, where: str) -> Prompt:
    if isinstance(value, str):
        return Prompt(count_text(value), zlib.crc32(value.encode()))
    if isinstance(value, list) and all(isinstance(t, int) for t in value):
        return Prompt(len(value), zlib.crc32(repr(value).encode()))
    raise BadRequest(f"{where} must be a string or a list of token ids")


def _prompts(value: Any, where: str) -> list[Prompt]:
    if (
        isinstance(value, list)
        and value
        and (all(isinstance(v, list) for v in value) or all(isinstance(v, str) for v in value))
    ):
        return [_prompt(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or value == [] or value == "":
        raise BadRequest(f"{where} is required")
    return [_prompt(value, where)]


def _chat_prompt(messages: Any) -> Prompt:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    tokens = 0
    parts: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise BadRequest(f"messages[{i}] must be an object with role and content")
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        text = "" if content is None else str(content)
        parts.append(text)
        tokens += count_text(text) + CHAT_TOKENS_PER_MESSAGE
    return Prompt(tokens, zlib.crc32("\x00".join(parts).encode()))


def _int(body: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = body.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"{key} must be a non-negative integer, got {value!r}")
    return value


def parse(kind: Kind, body: Any, *, default_max_tokens: int, model: str) -> GenRequest:
    """Normalise a request body; raises BadRequest with a message a client can act on."""
    if not isinstance(body, Mapping):
        raise BadRequest("request body must be a JSON object")
    if kind == "generate":
        params = body.get("sampling_params") or {}
        if not isinstance(params, Mapping):
            raise BadRequest("sampling_params must be an object")
        source = body.get("input_ids") if body.get("input_ids") is not None else body.get("text")
        prompts = _prompts(source, "text/input_ids")
        max_tokens = _int(params, "max_new_tokens", 128)
        min_tokens = _int(params, "min_new_tokens", 0)
        ignore_eos = bool(params.get("ignore_eos", False))
        include_usage = True
    else:
        if kind == "chat":
            prompts = [_chat_prompt(body.get("messages"))]
            max_tokens = _int(body, "max_completion_tokens", None)
            if max_tokens is None:
                max_tokens = _int(body, "max_tokens", default_max_tokens)
        else:
            prompts = _prompts(body.get("prompt"), "prompt")
            max_tokens = _int(body, "max_tokens", default_max_tokens)
        min_tokens = _int(body, "min_tokens", 0)
        ignore_eos = bool(body.get("ignore_eos", False))
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
        if (_int(body, "n", 1) or 1) != 1:
            raise BadRequest("n > 1 is not supported by the simulated engine")
    if not max_tokens:
        raise BadRequest("max_tokens must be at least 1")
    return GenRequest(
        kind=kind,
        prompts=prompts,
        max_tokens=max_tokens,
        min_tokens=min_tokens or 0,
        ignore_eos=ignore_eos,
        stream=bool(body.get("stream", False)),
        include_usage=include_usage,
        model=str(body.get("model") or model),
        seed=_int(body, "seed", None),
        rooms=_rooms(body.get("bootstrap_room"), len(prompts)),
        bootstrap_hosts=_per_prompt(body, "bootstrap_host", len(prompts), str),
        bootstrap_ports=_per_prompt(body, "bootstrap_port", len(prompts), int),
    )


def _per_prompt(body: Mapping[str, Any], key: str, count: int, kind: type) -> list[Any] | None:
    """A scalar applies to every prompt; a list gives one value per prompt."""
    value = body.get(key)
    if value is None:
        return None
    values = value if isinstance(value, list) else [value] * count
    if len(values) != count or not all(isinstance(v, kind) for v in values):
        raise BadRequest(f"{key} must be a {kind.__name__} or one {kind.__name__} per prompt")
    return values


def _rooms(value: Any, count: int) -> list[int] | None:
    if value is None:
        return None
    rooms = value if isinstance(value, list) else [value + i for i in range(count)]
    if len(rooms) != count or not all(isinstance(r, int) for r in rooms):
        raise BadRequest("bootstrap_room must be an integer or one integer per prompt")
    return rooms


def error_body(message: str, code: int) -> dict[str, Any]:
    kind = "BadRequestError" if code == 400 else "ServiceUnavailableError"
    return {"object": "error", "message": message, "type": kind, "code": code}


class Renderer:
    """Builds the bytes of one request's response, streaming or not."""

    def __init__(self, req: GenRequest) -> None:
        self.req = req
        self.created = int(time.time())
        prefix = "chatcmpl-" if req.kind == "chat" else "cmpl-"
        self.id = prefix + uuid.uuid4().hex
        head = {"id": self.id, "object": self._object(stream=True), "created": self.created}
        head["model"] = req.model
        self._head = json.dumps(head, separators=(",", ":"))[:-1]  # without the closing brace
        self._started: set[int] = set()

    def _object(self, *, stream: bool) -> str:
        if self.req.kind == "chat":
            return "chat.completion.chunk" if stream else "chat.completion"
        return "text_completion"

    def chunk(self, index: int, tokens: int, finish: str | None, generated: int) -> bytes:
        """One SSE event carrying `tokens` new tokens of choice `index`."""
        text = PIECE * tokens
        reason = "null" if finish is None else f'"{finish}"'
        kind = self.req.kind
        if kind == "generate":
            meta = (
                f'{{"id":"{self.id}","prompt_tokens":{self.req.prompts[index].tokens},'
                f'"completion_tokens":{generated},"finish_reason":'
                + ("null" if finish is None else f'{{"type":"{finish}"}}')
                + "}"
            )
            body = f'{{"index":{index},"text":"{PIECE * generated}","meta_info":{meta}}}'
            return f"data: {body}\n\n".encode()
        if kind == "chat":
            role = "" if index in self._started else '"role":"assistant",'
            self._started.add(index)
            choice = (
                f'{{"index":{index},"delta":{{{role}"content":"{text}"}},"finish_reason":{reason}}}'
            )
        else:
            choice = f'{{"index":{index},"text":"{text}","logprobs":null,"finish_reason":{reason}}}'
        return f'data: {self._head},"choices":[{choice}]}}\n\n'.encode()

    def usage(self, completion_tokens: int) -> dict[str, int]:
        prompt = sum(p.tokens for p in self.req.prompts)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        }

    def usage_chunk(self, completion_tokens: int) -> bytes:
        usage = json.dumps(self.usage(completion_tokens))
        return f'data: {self._head},"choices":[],"usage":{usage}}}\n\n'.encode()

    def whole(self, generated: Sequence[int], reasons: Sequence[str]) -> dict[str, Any]:
        """The non-streaming response body."""
        usage = self.usage(sum(generated))
        if self.req.kind == "generate":
            items = [
                {
                    "text": PIECE * n,
                    "meta_info": {
                        "id": self.id,
                        "prompt_tokens": self.req.prompts[i].tokens,
                        "completion_tokens": n,
                        "finish_reason": {"type": reasons[i]},
                    },
                }
                for i, n in enumerate(generated)
            ]
            return items[0] if len(items) == 1 else {"items": items, "usage": usage}
        choices: list[dict[str, Any]] = []
        for i, n in enumerate(generated):
            if self.req.kind == "chat":
                body: dict[str, Any] = {"message": {"role": "assistant", "content": PIECE * n}}
            else:
                body = {"text": PIECE * n, "logprobs": None}
            choices.append({"index": i, **body, "finish_reason": reasons[i]})
        return {
            "id": self.id,
            "object": self._object(stream=False),
            "created": self.created,
            "model": self.req.model,
            "choices": choices,
            "usage": usage,
        }
