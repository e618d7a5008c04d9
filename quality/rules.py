"""Who may manage exams, review attempts, take exams and manage a panel's gold (django-rules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import rules

from panels.rules import is_admin, is_expert, supervises_panel
from quality.control import answer_routed_to_panel as routed


@dataclass(frozen=True)
class PanelAnswer:
    """An answer seen through a panel's console: the object of `quality.manage_panel_answer`."""

    panel: Any
    answer: Any


@rules.predicate
def supervises_answer_panel(user: Any, target: PanelAnswer | None) -> bool:
    return target is not None and bool(supervises_panel(user, target.panel))


@rules.predicate
def answer_routed_to_panel(user: Any, target: PanelAnswer | None) -> bool:
    """The answer is real work the panel scores (critical gates alone do not count)."""
    if target is None or target.answer is None:
        return False
    return routed(panel=target.panel, answer=target.answer)


# Reference scores and control items of an answer: only through a panel the user may manage,
# and only for answers routed to that panel (admins included: the panel's gold is its own).
rules.add_perm(
    "quality.manage_panel_answer",
    (is_admin | supervises_answer_panel) & answer_routed_to_panel,
)


@rules.predicate
def supervises_exam(user: Any, exam: Any) -> bool:
    if exam is None or not user.is_authenticated:
        return False
    return bool(exam.panel.supervisors.filter(pk=user.pk).exists())


@rules.predicate
def supervises_attempt(user: Any, attempt: Any) -> bool:
    if attempt is None or not user.is_authenticated:
        return False
    return bool(attempt.exam.panel.supervisors.filter(pk=user.pk).exists())


# Exams: only the panel's supervisors (and admins) see references and review attempts.
rules.add_perm("quality.manage_exam", is_admin | supervises_exam)
rules.add_perm("quality.review_attempt", is_admin | supervises_attempt)
rules.add_perm("quality.take_exam", is_expert)


@rules.predicate
def member_of_exam_panel(user: Any, exam: Any) -> bool:
    if exam is None or not user.is_authenticated:
        return False
    return bool(exam.panel.memberships.filter(expert__user=user).exists())


@rules.predicate
def owns_attempt(user: Any, attempt: Any) -> bool:
    if attempt is None or not user.is_authenticated:
        return False
    return bool(attempt.expert.user_id == user.pk)


# A candidate takes the exams of the panels they belong to, and goes through their own attempts.
rules.add_perm("quality.start_exam", is_expert & member_of_exam_panel)
rules.add_perm("quality.continue_attempt", owns_attempt)
# The references of an attempt (practice feedback, the graded result): its own expert only;
# the panel's supervisors read every attempt in the console (`quality.review_attempt`).
rules.add_perm("quality.view_own_attempt", owns_attempt)
