"""Who may import material and import or make answer pairs (django-rules): admins only."""

from __future__ import annotations

import rules

from panels.rules import is_admin

rules.add_perm("material.import_material", is_admin)
rules.add_perm("material.manage_pairs", is_admin)
