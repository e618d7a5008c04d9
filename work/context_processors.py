"""The scoring page's notice of a supervisor's return (work.review), outside its template.

The page's own template and view are the scoring flow's; the notice rides on the context of
the one URL it belongs to and is drawn by the base template, so neither needs to know of it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from work.review import returned_for


def review_returns(request: HttpRequest) -> dict[str, Any]:
    """`review_returns`: the returned criteria of the user's assignment on its scoring page (one
    query there, none on any other page; another user's assignment gives nothing)."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.url_name != "assignment" or not request.user.is_authenticated:
        return {}
    return {"review_returns": returned_for(int(match.kwargs["pk"]), int(request.user.pk or 0))}
