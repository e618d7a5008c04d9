"""Judge backends: "transformers" (local, :mod:`.hf`) and "openai" (HTTP, :mod:`.openai_compat`).

Submodules are imported on demand: the openai backend must work where torch is not installed.
"""

from __future__ import annotations
