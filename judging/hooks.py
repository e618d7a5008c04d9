"""Seams of judging, filled by the apps above it.

`run_finished`: callables given a judge run's id once the run has finished (done or failed with
what it judged), right after its end is written; an exception is logged, not raised. The
submissions app finishes a participant's submission this way when the run scoring it ends.

`frozen_instructions`: callables given (answer id, model id, instruction id) of the triples a
judge prompt is built for, returning {answer id: (instruction text, reference answer)} for the
answers whose instruction a published benchmark version froze (the submissions app, from the
version its submission answers). The prompt takes the frozen copy: a later edit of the
instruction or its reference never changes how a version's submissions are judged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lib.registry import Registry

FrozenInstructions = Callable[[Sequence[tuple[int, int, int]]], dict[int, tuple[str, str]]]

run_finished: Registry[Callable[[int], None]] = Registry("judging.hooks.run_finished")
frozen_instructions: Registry[FrozenInstructions] = Registry("judging.hooks.frozen_instructions")
