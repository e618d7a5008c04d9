"""Every URL pattern of the project and every operation of its OpenAPI schema.

Both walks read the live configuration (the root URLconf and drf-spectacular's generator), so a
view added anywhere shows up here without anyone listing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    key: str  # "namespace:name", or the route text for an unnamed pattern
    route: str  # the full route, for messages
    kwargs: tuple[str, ...]  # captured parameters, including those of enclosing includes


def _walk(
    patterns: list[object], prefix: str, namespace: str, kwargs: tuple[str, ...]
) -> list[Route]:
    found: list[Route] = []
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = namespace
            if p.namespace:
                ns = f"{namespace}:{p.namespace}" if namespace else p.namespace
            inner = kwargs + tuple(p.pattern.regex.groupindex)
            found += _walk(list(p.url_patterns), prefix + str(p.pattern), ns, inner)
        elif isinstance(p, URLPattern):
            route = prefix + str(p.pattern)
            name = f"{namespace}:{p.name}" if namespace and p.name else (p.name or route)
            found.append(Route(name, route, kwargs + tuple(p.pattern.regex.groupindex)))
    return found


def url_routes() -> list[Route]:
    """Every URL pattern, nested includes and namespaces resolved."""
    return _walk(list(get_resolver().url_patterns), "", "", ())


def api_operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every operation in the OpenAPI schema the project serves."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    ops = []
    for path, item in schema["paths"].items():
        for method in item:
            if method in {"get", "post", "put", "patch", "delete"}:
                ops.append((method.upper(), path))
    return sorted(ops)
