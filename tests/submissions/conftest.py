"""The submissions tests' shared fixture: the bench (a board taking submissions, its judge on
the fake OpenAI-compatible server, an approved participant)."""

from __future__ import annotations

from tests.submissions.test_submissions import bench  # noqa: F401 (a fixture, found by name)
