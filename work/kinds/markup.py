"""The span markup kind: the markup app holds its texts, drafts, pages and exports; the rules are
the protocol's (the page's selections read strictly, the classifier's checks). Its work is not
held as assignments: it has no `ItemKind`."""

from __future__ import annotations

from work import kinds


def register() -> None:
    """The kind's declaration (from WorkConfig.ready())."""
    kinds.register(kinds.TaskKind(kinds.MARKUP, "span markup"))
