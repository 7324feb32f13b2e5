"""`{node}` and `{node_id}` in a worker's environment values, filled per node.

srtctl formats those values with `str.format_map` (`start_worker`); a node's values are
known only inside the allocation, so a plan carries `${self.node}` / `${self.node_id}`.
"""

from __future__ import annotations

from string import Formatter

NODE_FIELDS = {"node": "${self.node}", "node_id": "${self.node_id}"}


class _Kept(dict[str, str]):
    """The node fields as placeholders; any other name kept as written, braces included."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill_node_fields(value: str) -> str:
    """`value` as srtctl's formatting leaves it, with the node fields as placeholders.

    Raises ValueError (the reason) for a value srtctl's formatting would fail on, or a
    node field with a conversion or format spec, whose result depends on the node.
    """
    if "{" not in value and "}" not in value:
        return value
    try:
        for _text, field, spec, conversion in Formatter().parse(value):
            if field in NODE_FIELDS and (spec or conversion):
                raise ValueError(f"{{{field}}} with a format spec or conversion")
        return value.format_map(_Kept(NODE_FIELDS))
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
