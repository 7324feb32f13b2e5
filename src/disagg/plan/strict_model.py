"""The base of every plan model: no unknown fields, validators built on first use."""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    # Validators built on first use, as one piece with the plan that holds them.
    model_config = ConfigDict(extra="forbid", defer_build=True)
