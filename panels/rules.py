"""Object-level permissions (django-rules): one place that says who may do what.

Roles: an *expert* (has an Expert profile), a *supervisor* (supervises given panels), an *admin*
(is_staff). Views ask `user.has_perm("annotation.score_assignment", assignment)` and the like.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import rules


@rules.predicate
def is_admin(user: Any) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


@rules.predicate
def is_expert(user: Any) -> bool:
    return bool(user.is_authenticated and hasattr(user, "expert"))


@rules.predicate
def is_supervisor(user: Any) -> bool:
    if not user.is_authenticated:
        return False
    # Asked several times per page (navigation, permissions): one query per request's user.
    cached = getattr(user, "_pollux_is_supervisor", None)
    if cached is None:
        cached = bool(user.supervised_panels.exists())
        user._pollux_is_supervisor = cached
    return bool(cached)


@rules.predicate
def supervises_panel(user: Any, panel: Any) -> bool:
    if panel is None or not user.is_authenticated:
        return False
    return bool(panel.supervisors.filter(pk=user.pk).exists())


@rules.predicate
def supervises_expert(user: Any, expert: Any) -> bool:
    if expert is None or not user.is_authenticated:
        return False
    return bool(expert.panels.filter(supervisors=user).exists())


@rules.predicate
def owns_assignment(user: Any, assignment: Any) -> bool:
    if assignment is None or not user.is_authenticated or not hasattr(user, "expert"):
        return False
    return bool(assignment.expert_id == user.expert.pk)


@rules.predicate
def supervises_assignment(user: Any, assignment: Any) -> bool:
    if assignment is None or not user.is_authenticated:
        return False
    return bool(assignment.panel.supervisors.filter(pk=user.pk).exists())


@dataclass(frozen=True)
class PanelAnswer:
    """An answer seen through a panel's console: the object of `panels.manage_panel_answer`."""

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
    from panels.services import answer_routed_to_panel as routed

    return routed(panel=target.panel, answer=target.answer)


rules.add_perm("panels.view_console", is_admin | is_supervisor)
# Reference scores and control items of an answer: only through a panel the user may manage,
# and only for answers routed to that panel (admins included: the panel's gold is its own).
rules.add_perm(
    "panels.manage_panel_answer",
    (is_admin | supervises_answer_panel) & answer_routed_to_panel,
)
rules.add_perm("panels.manage_panel", is_admin | supervises_panel)
rules.add_perm("panels.manage_expert", is_admin | supervises_expert)
rules.add_perm("annotation.score_assignment", owns_assignment)
rules.add_perm("annotation.view_assignment", owns_assignment | is_admin | supervises_assignment)
rules.add_perm("annotation.reassign_assignment", is_admin | supervises_assignment)
rules.add_perm("annotation.import_material", is_admin)
rules.add_perm("annotation.export_dataset", is_admin)
rules.add_perm("annotation.view_queue", is_expert)


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
rules.add_perm("panels.manage_exam", is_admin | supervises_exam)
rules.add_perm("panels.review_attempt", is_admin | supervises_attempt)
rules.add_perm("panels.take_exam", is_expert)
