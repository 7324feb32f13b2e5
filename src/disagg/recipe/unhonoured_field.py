"""One recipe field a plan does not carry out: refused, or listed as ignored with the reason.
Apart from `honoured`, so the `disagg.services` kinds return it without importing that."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["refused", "ignored"]


@dataclass(frozen=True)
class Unhonoured:
    """One field a variant sets that its plan does not carry out."""

    path: tuple[str, ...]
    action: Action
    why: str
    shown: str = ""  # the value, named after the field in a refusal (`roles.decode.engine sglang`)

    @property
    def field(self) -> str:
        return ".".join(self.path)

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "action": self.action, "why": self.why}
