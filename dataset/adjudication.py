"""A supervisor's adjudication of a disputed triple: stored apart from the experts' estimates.

`adjudicate` records a verdict (a value of the triple's rubric, or NA where the criterion
allows it) with a reason; `latest_for` gives each triple's latest one, for the review page and
the export's own columns. The aggregation does not use them yet (`ADJUDICATION_OVERRIDES`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from dataset.models import Adjudication
from panels.models import SupervisorAction
from panels.services import actor_or_none, audit
from work.models import Triple, TripleKind

REASON_MAX = 2000


class AdjudicationRefused(ValueError):
    """The verdict cannot be recorded; `field` names the input ("score" or "reason")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _check(triple: Triple, score: int | None, is_na: bool, reason: str) -> None:
    if triple.kind != TripleKind.POINTWISE or triple.rubric is None or triple.criterion is None:
        raise AdjudicationRefused("score", _("Only rubric criteria are adjudicated."))
    if not reason:
        raise AdjudicationRefused("reason", _("Give the reason for the verdict."))
    if len(reason) > REASON_MAX:
        raise AdjudicationRefused(
            "reason", _("The reason is longer than %(n)d characters.") % {"n": REASON_MAX}
        )
    if is_na:
        if not triple.criterion.allows_na:
            raise AdjudicationRefused("score", _("This criterion cannot be marked NA."))
        return
    if score is None or score not in triple.rubric.values:
        raise AdjudicationRefused(
            "score",
            _("The score must be one of %(values)s.")
            % {"values": ", ".join(str(v) for v in triple.rubric.values)},
        )


@transaction.atomic
def adjudicate(
    *, triple: Triple, score: int | None, is_na: bool, reason: str, user: Any
) -> Adjudication:
    """Record a supervisor's verdict on the triple (the earlier ones are kept), audited."""
    reason = (reason or "").strip()
    _check(triple, score, is_na, reason)
    verdict = Adjudication.objects.create(
        triple=triple,
        score=None if is_na else score,
        is_na=is_na,
        reason=reason,
        author=actor_or_none(user),
    )
    audit(
        action=SupervisorAction.Kind.ADJUDICATE,
        actor=user,
        panel=triple.panel,
        note=reason,
        data={"triple": triple.pk, "score": verdict.score, "is_na": is_na},
    )
    return verdict


def latest_for(triple_ids: Iterable[int]) -> dict[int, Adjudication]:
    """Each triple's latest adjudication (triples without one are absent); one query."""
    out: dict[int, Adjudication] = {}
    rows = Adjudication.objects.filter(triple_id__in=list(triple_ids)).order_by(
        "triple_id", "-created_at", "-id"
    )
    for row in rows:
        out.setdefault(row.triple_id, row)
    return out
