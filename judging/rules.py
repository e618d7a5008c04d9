"""Who may start, cancel and see judge runs (django-rules).

Admins: every run. Supervisors: runs whose scope is one of the panels they supervise (a run over
a model, a task or everything spans panels they do not supervise, so it stays admin-only).
Experts never see judge results: they would unblind the models and the other scores.
"""

from __future__ import annotations

from typing import Any

import rules

from panels.rules import is_admin, is_expert, is_supervisor


@rules.predicate
def supervises_run_panel(user: Any, run: Any) -> bool:
    if run is None or not user.is_authenticated:
        return False
    panel_id = (run.scope or {}).get("panel")
    if not panel_id:
        return False
    return bool(user.supervised_panels.filter(pk=panel_id).exists())


# An expert who also supervises still never sees judge results: scoring must stay blind.
supervisor_not_expert = is_supervisor & ~is_expert
rules.add_perm("judging.view_runs", is_admin | supervisor_not_expert)
rules.add_perm("judging.start_run", is_admin | supervisor_not_expert)
rules.add_perm("judging.view_run", is_admin | (supervisor_not_expert & supervises_run_panel))
rules.add_perm("judging.manage_run", is_admin | (supervisor_not_expert & supervises_run_panel))
