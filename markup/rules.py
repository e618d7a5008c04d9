"""Who may see span markups (django-rules).

For now admins and supervisors who are not experts: the markups name their experts and show
one expert's fragments beside another's, which an expert marking the same texts must not see
(the same reason comparison.rules keeps experts off the rankings)."""

from __future__ import annotations

from typing import Any

import rules

from panels.rules import is_admin, is_expert, is_supervisor
from participants.rules import is_participant

rules.add_perm("markup.view_markups", is_admin | (is_supervisor & ~is_expert))


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
