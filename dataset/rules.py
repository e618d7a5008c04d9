"""Who may export the dataset (django-rules): admins only."""

from __future__ import annotations

import rules

from panels.rules import is_admin

rules.add_perm("dataset.export_dataset", is_admin)
