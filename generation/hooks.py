"""Seams of generation, filled by the apps above it.

`run_finished`: callables given a generation run's id once the run has ended (done, or failed
with what it generated); an exception is logged, not raised. The submissions app scores a
closed version's submission this way once its endpoint has answered.

`frozen_texts`: callables given a configuration's model id and instruction ids, returning
{instruction id: text} for the instructions a published benchmark version froze for that model
(the submissions app: the version a submission answers). The prompt takes the frozen copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lib.registry import Registry

FrozenTexts = Callable[[int, Sequence[int]], dict[int, str]]

run_finished: Registry[Callable[[int], None]] = Registry("generation.hooks.run_finished")
frozen_texts: Registry[FrozenTexts] = Registry("generation.hooks.frozen_texts")
