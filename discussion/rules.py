"""Who may read and write a thread of comments (django-rules).

A thread is on one item of an expert's work (an assignment: a rubric answer or a side-by-side
pair; or a span markup of a panel). It is between that expert and the supervisors of the item's
panel:

- the expert sees the threads on his own items only: never another expert's item, comments or
  work;
- a supervisor sees the threads on his panels' items, except where he scores blind himself: an
  answer he holds open work on as an expert (work.selectors.blind_answer_ids, as the review page),
  and markups when he is an expert too (markup.rules: markups are for supervisors who mark none);
- an admin sees every thread.

Views ask through panels.access: the role (`discussion.view_threads`, a 403) first, then the item
(`discussion.comment`, a 404 as if it did not exist).
"""

from __future__ import annotations

from typing import Any

import rules

from markup.models import Markup
from panels.rules import is_admin, is_expert, is_supervisor
from work.selectors import blind_answer_ids


@rules.predicate
def owns_item(user: Any, item: Any) -> bool:
    if item is None or not user.is_authenticated:
        return False
    return bool(item.expert_id is not None and item.expert.user_id == user.pk)


@rules.predicate
def supervises_item(user: Any, item: Any) -> bool:
    """The item's panel is his, and he does not score it blind."""
    if item is None or not user.is_authenticated or item.panel_id is None:
        return False
    if not item.panel.supervisors.filter(pk=user.pk).exists():
        return False
    if isinstance(item, Markup):
        return not is_expert(user)
    return not blind_answer_ids(user).filter(answer_id=item.answer_id).exists()


rules.add_perm("discussion.view_threads", is_expert | is_supervisor | is_admin)
rules.add_perm("discussion.comment", is_admin | owns_item | supervises_item)
rules.add_perm("discussion.resolve_threads", is_admin | is_supervisor)
rules.add_perm("discussion.resolve", is_admin | supervises_item)
