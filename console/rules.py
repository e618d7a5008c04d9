"""Rules of the console's own pages (the panel rules are in panels/rules.py)."""

from __future__ import annotations

from typing import Any

import rules

from panels.rules import is_admin, supervises_panel

# Which model wrote an answer: staff only in the data browser and the pickers. Supervisors read
# answers and verdicts there, not model identities (the rankings page is where models are
# compared); every field that can name the model (material.identity) is hidden with it.
rules.add_perm("console.view_answer_model", is_admin)
# Every panel's material in the browser at once (a supervisor browses his panels only).
rules.add_perm("console.browse_all_panels", is_admin)


@rules.predicate
def supervises_work_panel(user: Any, assignment: Any) -> bool:
    """The user supervises the panel an assignment belongs to."""
    return assignment is not None and bool(supervises_panel(user, assignment.panel))


# The data browser's bulk actions on work (console.bulk): each selected assignment must be of a
# panel the user supervises; an admin acts on any.
rules.add_perm("console.act_on_work", is_admin | supervises_work_panel)
