"""The instruction writing kind: the authoring app holds slots, reviews, pages and exports; the
form's fields and checks are the protocol's. Its work is not held as assignments: it has no
`ItemKind`."""

from __future__ import annotations

from work import kinds


def register() -> None:
    """The kind's declaration (from WorkConfig.ready())."""
    kinds.register(kinds.TaskKind(kinds.AUTHORING, "instruction writing"))
