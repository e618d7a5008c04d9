"""Rules of the console's own pages (the panel rules are in panels/rules.py)."""

from __future__ import annotations

import rules

from panels.rules import is_admin

# Which model wrote an answer: staff only in the data browser and the pickers. Supervisors read
# answers and verdicts there, not model identities (the rankings page is where models are
# compared); every field that can name the model (material.identity) is hidden with it.
rules.add_perm("console.view_answer_model", is_admin)
# Every panel's material in the browser at once (a supervisor browses his panels only).
rules.add_perm("console.browse_all_panels", is_admin)
