"""Who may run answer generation: admins only (they import and generate the material).
Experts never see generation pages: a configuration names the model, and scoring is blind."""

from __future__ import annotations

import rules

from panels.rules import is_admin

rules.add_perm("generation.view_runs", is_admin)
rules.add_perm("generation.manage_runs", is_admin)
