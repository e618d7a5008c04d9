"""Endpoint keys at rest: encrypted with Fernet (AES-128-CBC with HMAC-SHA256, `cryptography`).

The encryption key is derived from ENDPOINT_KEY_SECRET (SECRET_KEY when it is not set) under a
label of its own, so the key of a stored token is never the session-signing key itself. A key
is written when a participant submits an endpoint, read by the worker building the backend, and
deleted when the run ends; nothing else reads it, and no page, log line or export shows it.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from runs.models import EndpointKey, RunConfig


def _fernet() -> Fernet:
    secret = getattr(settings, "ENDPOINT_KEY_SECRET", "") or settings.SECRET_KEY
    digest = hashlib.sha256(b"pollux-studio endpoint keys\0" + secret.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def key_store(config: RunConfig, api_key: str) -> None:
    """Keep the configuration's endpoint key, encrypted (an empty key stores nothing)."""
    if not api_key:
        return
    token = _fernet().encrypt(api_key.encode()).decode()
    EndpointKey.objects.update_or_create(config=config, defaults={"token": token})


def key_read(config: RunConfig) -> str:
    """The key in clear, for the worker building the backend; "" when none is kept (never
    stored, deleted at the run's end, or sealed under another secret)."""
    token = EndpointKey.objects.filter(config=config).values_list("token", flat=True).first()
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""


def key_delete(config_id: int) -> int:
    """Forget the configuration's key; returns how many were deleted (0 or 1)."""
    deleted, _by_model = EndpointKey.objects.filter(config_id=config_id).delete()
    return deleted
