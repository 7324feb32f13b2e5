"""The frontend registry names each adapter module by the types the adapter says it answers to."""

from __future__ import annotations

from importlib import import_module

import pytest

from disagg import frontends
from disagg.frontends import _TABLE, frontend_for, names, refusal

_ADAPTERS = _TABLE.where  # type -> (module, attribute), as the modules declare them


@pytest.mark.parametrize("kind", names())
def test_each_listed_type_is_answered_by_its_adapter(kind: str) -> None:
    adapter = frontend_for(kind)
    assert kind in adapter.types
    assert refusal(kind) is None
    assert frontend_for(kind) is adapter  # one adapter per class, made once


def test_every_type_an_adapter_answers_to_is_listed() -> None:
    classes = {where for where in _ADAPTERS.values()}
    for module, name in classes:
        adapter = getattr(import_module(module), name)
        for kind in adapter.types:
            assert _ADAPTERS.get(kind) == (module, name), kind


def test_an_unlisted_type_is_refused_with_the_built_ones() -> None:
    reason = refusal("infera")
    assert reason is not None and reason.startswith("frontend type infera")
    with pytest.raises(KeyError):
        frontends.frontend_for("infera")
