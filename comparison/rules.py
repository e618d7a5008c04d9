"""Who may see and recompute model rankings (django-rules).

Admins and supervisors see them; experts never (an expert who also supervises included): the
rankings name the models, and scoring must stay blind. Only admins start a recomputation.
"""

from __future__ import annotations

import rules

from panels.rules import is_admin, is_expert, is_supervisor, supervises_panel

supervisor_not_expert = is_supervisor & ~is_expert
rules.add_perm("comparison.view_rankings", is_admin | supervisor_not_expert)
rules.add_perm("comparison.compute_rankings", is_admin)

# The downloads carry the experts' agreement per panel: a supervisor gets the panels he
# supervises, an admin every panel (an expert never reaches them: view_rankings refuses him).
rules.add_perm("comparison.view_panel_agreement", is_admin | (supervises_panel & ~is_expert))
