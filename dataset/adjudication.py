"""A supervisor's adjudication of a disputed triple: stored apart from the experts' estimates.

`adjudicate` records a verdict (a value of the triple's rubric, or NA where the criterion
allows it) with a reason; `latest_for` gives each triple's latest one, for the review page and
the export's own columns. The aggregation uses them only when
`POLLUX["ADJUDICATION_OVERRIDES"]` is on (`with_overrides`): then an adjudicated triple's
verdict is the supervisor's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
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


def with_overrides(triples: pd.DataFrame, kept: pd.DataFrame) -> pd.DataFrame:
    """The aggregation's per-triple verdicts with each adjudicated triple's latest verdict in
    place of the experts' (POLLUX["ADJUDICATION_OVERRIDES"]; the caller asks the setting).

    An adjudicated triple is in the dataset whatever excluded it before (the supervisor's
    verdict settles the dispute): its mode and mean are the adjudicated score (NaN and
    `all_na` for NA), and its confidence is the share of its kept expert estimates that gave
    that value, so the experts' agreement with the verdict stays visible. `kept` holds the
    kept estimates' triple_id, score and is_na. Triples without an adjudication are unchanged.
    """
    verdicts = latest_for(triples["triple_id"].tolist())
    if not verdicts:
        return triples
    out = triples.copy()
    ids = out["triple_id"].to_numpy()
    for position in np.flatnonzero(np.isin(ids, list(verdicts))):
        verdict = verdicts[int(ids[position])]
        mine = kept[kept["triple_id"] == ids[position]]
        if verdict.is_na:
            agree = mine["is_na"].astype(bool)
            value = np.nan
        else:
            agree = ~mine["is_na"].astype(bool) & (mine["score"] == verdict.score)
            value = float(verdict.score)  # type: ignore[arg-type]
        out.iat[position, out.columns.get_loc("mode")] = value
        out.iat[position, out.columns.get_loc("mean")] = value
        out.iat[position, out.columns.get_loc("all_na")] = bool(verdict.is_na)
        out.iat[position, out.columns.get_loc("confidence")] = (
            float(agree.mean()) if len(mine) else np.nan
        )
        out.iat[position, out.columns.get_loc("excluded_reason")] = ""
    return out
