"""One registry class for every extension point (lib.registry)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from lib.registry import Registry


def _one() -> int:
    return 1


def test_a_value_is_registered_once_by_key_or_by_its_qualified_name() -> None:
    registry: Registry[object] = Registry("scratch")
    registry.register(_one)
    registry.register(_one)
    assert list(registry) == [_one]
    assert registry.keys() == [f"{__name__}._one"]
    registry.register(_one, key="exam")
    assert registry.get("exam") is _one and registry.get("control") is None
    with pytest.raises(ImproperlyConfigured, match="registered twice"):
        registry.register(len, key="exam")
    with pytest.raises(ImproperlyConfigured, match="nothing is registered"):
        registry["control"]
