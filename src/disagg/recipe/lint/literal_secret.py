"""DA009: a token, API key or password written into the recipe itself.

A recipe is shared, committed and copied into every plan.json, so a credential in it
leaks with each; it belongs in the submitting shell's environment. What looks secret is
`disagg.redact`'s rule, the one that hides such values in printed plans and reports.
"""

from __future__ import annotations

from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Rule, Severity
from disagg.recipe.lint.nodes import Node, is_env_map, scalars
from disagg.redact import has_token, is_literal_secret, is_secret_name

RULE = Rule("DA009", "literal-secret")


def check(ctx: FileContext) -> list[Finding]:
    findings: list[Finding] = []
    for node in ctx.scanned.nodes:
        if node.kind == "map":
            for key, value in node.pairs:
                name = str(key.value)
                for text in scalars(value):
                    if is_literal_secret(name, text.value):
                        findings.append(_finding(ctx, node, name, text))
        elif node.kind == "seq":
            findings += _argv_secrets(ctx, node)
    # a token in a list under a key is seen as the key's value and as a list item
    once = {(f.locations[0].line, f.locations[0].col): f for f in reversed(findings)}
    return [f for f in findings if once[(f.locations[0].line, f.locations[0].col)] is f]


def _argv_secrets(ctx: FileContext, seq: Node) -> list[Finding]:
    """`["--api-key", "sk-..."]` or `--api-key=sk-...` in a list of command words."""
    items = seq.items
    found: list[Finding] = []
    for index, item in enumerate(items):
        if item.kind != "scalar" or not isinstance(item.value, str):
            continue
        if has_token(item.value):  # a token-shaped word, whatever flag it follows
            found.append(_finding(ctx, seq, f"item {index}", item))
            continue
        flag, sep, value = item.value.partition("=")
        if not flag.startswith("-") or not is_secret_name(flag.lstrip("-")):
            continue
        if sep and is_literal_secret(flag, value):
            found.append(_finding(ctx, seq, flag, item))
        elif not sep and index + 1 < len(items):
            following = items[index + 1]
            if following.kind == "scalar" and is_literal_secret(flag, following.value):
                found.append(_finding(ctx, seq, flag, following))
    return found


def _finding(ctx: FileContext, owner: Node, name: str, text: Node) -> Finding:
    where = ctx.loc(text, "value")
    if is_env_map(owner.path):
        hint = (
            f"delete {name} from the recipe and `export {name}=...` in the shell that runs "
            f"`disagg submit`/`run` (the job inherits it); list {name} under the cluster "
            "profile's `secret_env` so the pre-flight checks it is set"
        )
    else:
        hint = (
            "keep credentials out of recipes: this value lands in plan.json and the role's "
            "command line; if the program can read it from an environment variable, export "
            "that in the submitting shell instead"
        )
    return RULE.finding(
        Severity.WARNING,
        message=(
            f"{'.'.join(owner.path) or '<top level>'}: {name} holds a literal secret; "
            "it would be copied into every plan.json made from this recipe"
        ),
        locations=(where,),
        hint=hint,
    )
