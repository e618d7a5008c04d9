"""Who may do what in instruction writing (django-rules; views ask through panels.access).

- An *author* (a membership with `can_author`) sees his own slots only, never another author's
  drafts; he edits them while they are drafts or returned.
- A *reviewer* (`can_review` in the slot's panel) reviews the panel's submitted instructions,
  never his own.
- An *editor* (`can_edit` in the slot's panel) proofreads the panel's reviewed instructions.
- The panel's *supervisors* see every slot of their panels and give the originality verdict;
  admins do everything and edit the plan.
- Review is blind: who wrote an instruction (and who reviewed it) is shown to the panel's
  supervisors and to admins, except to anyone who holds the review role in that panel, paused or
  not, whatever else he is there (`authoring.see_author`; the export blanks the column by the
  same `review_panel_ids`). A supervisor who also reviews his panel reviews like any reviewer.
"""

from __future__ import annotations

from typing import Any

import rules
from django.db.models import Q

from panels.models import Membership
from panels.rules import is_admin, is_supervisor, supervises_panel
from protocol import authoring

PROOFREAD_STATES = (authoring.EDITING, authoring.ORIGINALITY, authoring.ACCEPTED)


def _member(user: Any, panel_id: int, **role: bool) -> bool:
    if not user.is_authenticated:
        return False
    return bool(
        Membership.objects.filter(
            panel_id=panel_id, expert__user=user, is_paused=False, **role
        ).exists()
    )


@rules.predicate
def writes_anywhere(user: Any) -> bool:
    if not user.is_authenticated or not hasattr(user, "expert"):
        return False
    return bool(
        Membership.objects.filter(expert__user=user, is_paused=False)
        .filter(Q(can_author=True) | Q(can_review=True) | Q(can_edit=True))
        .exists()
    )


@rules.predicate
def is_slot_author(user: Any, slot: Any) -> bool:
    return bool(user.is_authenticated and slot is not None and slot.author.user_id == user.pk)


@rules.predicate
def reviews_slot(user: Any, slot: Any) -> bool:
    # A draft never submitted is its author's alone.
    return slot is not None and slot.round > 0 and _member(user, slot.panel_id, can_review=True)


@rules.predicate
def edits_slot(user: Any, slot: Any) -> bool:
    # Editors meet an instruction once its review accepted it.
    return (
        slot is not None
        and slot.state in PROOFREAD_STATES
        and _member(user, slot.panel_id, can_edit=True)
    )


@rules.predicate
def supervises_slot(user: Any, slot: Any) -> bool:
    return slot is not None and supervises_panel(user, slot.panel)


def review_panel_ids(user: Any) -> set[int]:
    """The panels where the user holds the review role (a pause does not lift the blindness:
    he reviews again once resumed). The one source of `authoring.see_author`."""
    if not user.is_authenticated:
        return set()
    return set(
        Membership.objects.filter(expert__user=user, can_review=True).values_list(
            "panel_id", flat=True
        )
    )


@rules.predicate
def reviews_in_slot_panel(user: Any, slot: Any) -> bool:
    return slot is not None and slot.panel_id in review_panel_ids(user)


# Roles: the writing pages (experts with a writing role, supervisors, admins).
rules.add_perm("authoring.view_writing", is_admin | is_supervisor | writes_anywhere)
rules.add_perm("authoring.manage_plan", is_admin)
rules.add_perm("authoring.view_dashboard", is_admin | is_supervisor)
# Objects.
rules.add_perm(
    "authoring.view_slot",
    is_admin
    | supervises_slot
    | is_slot_author
    | (reviews_slot & ~is_slot_author)
    | (edits_slot & ~is_slot_author),
)
rules.add_perm("authoring.write_slot", is_slot_author)
rules.add_perm("authoring.review_slot", reviews_slot & ~is_slot_author)
rules.add_perm("authoring.edit_slot", (edits_slot & ~is_slot_author) | supervises_slot | is_admin)
rules.add_perm("authoring.judge_originality", supervises_slot | is_admin)
# Who wrote it (and who reviewed it): never to a reviewer of the slot's panel (blind review).
rules.add_perm("authoring.see_author", (is_admin | supervises_slot) & ~reviews_in_slot_panel)


@rules.predicate
def owns_baseline(user: Any, item: Any) -> bool:
    return bool(user.is_authenticated and item is not None and item.expert.user_id == user.pk)


rules.add_perm("authoring.write_baseline", owns_baseline)
rules.add_perm("authoring.sample_baseline", is_admin | supervises_panel)
