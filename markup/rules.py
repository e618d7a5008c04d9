"""Who may see span markups (django-rules).

The markup pages (the texts, two markups side by side) are for admins and supervisors who are
not experts: the markups name their experts and show one expert's fragments beside another's,
which an expert marking the same texts must not see (the same reason comparison.rules keeps
experts off the rankings).

What each of them sees there is scoped as the data browser scopes answers (docs/spans.md,
"Who sees which markup"): a markup belongs to the panel that asked for it (`Markup.panel`,
set by markup.work's assignment); a text belongs to the panels that were asked to mark it.

- An admin sees every text and every submitted markup (imported ones and participants'
  systems' included: they belong to no panel).
- A supervisor sees the texts assigned to the panels he supervises and, on them, the submitted
  markups of those panels only: not another panel's experts', not an imported markup, not a
  participant's system's.
- A draft is its author's alone (his markup work page): nobody else's page shows it.
"""

from __future__ import annotations

from typing import Any

import rules
from django.db.models import Exists, OuterRef, QuerySet

from markup.models import Markup, MarkupStatus, MarkupText
from panels.rules import is_admin, is_expert, is_supervisor
from participants.rules import is_participant

views_markups = is_admin | (is_supervisor & ~is_expert)
rules.add_perm("markup.view_markups", views_markups)


def visible_markups(user: Any) -> QuerySet[Markup]:
    """The markups `user` may read on the markup pages (the module's rule, as a query)."""
    submitted = Markup.objects.filter(status=MarkupStatus.SUBMITTED)
    if is_admin(user):
        return submitted
    if views_markups(user):
        return submitted.filter(panel__supervisors=user.pk)
    return Markup.objects.none()


def visible_texts(user: Any) -> QuerySet[MarkupText]:
    """The texts `user` may open on the markup pages: an admin every text, a supervisor those
    assigned to a panel he supervises (a markup of that panel, a draft included)."""
    if is_admin(user):
        return MarkupText.objects.all()
    if views_markups(user):
        assigned = Markup.objects.filter(text=OuterRef("pk"), panel__supervisors=user.pk)
        return MarkupText.objects.filter(Exists(assigned))
    return MarkupText.objects.none()


@rules.predicate
def sees_text(user: Any, text: Any) -> bool:
    return text is not None and visible_texts(user).filter(pk=text.pk).exists()


@rules.predicate
def sees_markup(user: Any, markup: Any) -> bool:
    return markup is not None and visible_markups(user).filter(pk=markup.pk).exists()


rules.add_perm("markup.view_text", views_markups & sees_text)
rules.add_perm("markup.view_markup", views_markups & sees_markup)


@rules.predicate
def marks_own_text(user: Any, markup: Any) -> bool:
    """The markup was assigned to this expert by a panel he still works in (not paused)."""
    expert = getattr(user, "expert", None) if user.is_authenticated else None
    if expert is None or markup is None or markup.panel_id is None:
        return False
    if markup.expert_id != expert.pk:
        return False
    return bool(expert.memberships.filter(panel_id=markup.panel_id, is_paused=False).exists())


# An expert's own markup work: his assigned texts only, blind to who else marks them.
rules.add_perm("markup.do_markup", is_expert)
rules.add_perm("markup.mark_text", marks_own_text)


@rules.predicate
def owns_run(user: Any, run: Any) -> bool:
    """The run is this participant's own."""
    return bool(run is not None and user.is_authenticated and run.participant.user_id == user.pk)


# Participants' systems (markup.contest): their own runs only; the leaderboard shows scores and
# system names, never a markup, to staff and participants (experts stay off it, as above).
rules.add_perm("markup.participate", is_participant)
rules.add_perm("markup.use_run", is_participant & owns_run)
rules.add_perm("markup.view_leaderboard", is_admin | (is_supervisor & ~is_expert) | is_participant)

# Markup files in and out (markup.files): an admin's, as the material import and the dataset
# export are; the export names each markup's author.
rules.add_perm("markup.import_markups", is_admin)
rules.add_perm("markup.export_markups", is_admin)
