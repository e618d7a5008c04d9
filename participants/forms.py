"""The login form: a participant whose account awaits approval is told so."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.utils.translation import gettext_lazy as _

from participants.rules import is_pending_participant


class LoginForm(AuthenticationForm):
    """Django's login form, with one more refusal: a participant not approved yet, or revoked,
    is told that the account awaits approval (with the right password only, so the message
    tells a stranger nothing), not that the user name or password is wrong. Such an account
    never logs in: it reads the public pages as a visitor does (participants.rules)."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": _("Wrong username or password."),
        "pending": _("This account awaits approval by an administrator."),
    }

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except forms.ValidationError:
            # A self-registered account is inactive until approved: Django refuses it as if the
            # password were wrong. With the right password, say why instead.
            if self._pending_with_password() is not None:
                raise forms.ValidationError(
                    self.error_messages["pending"], code="pending"
                ) from None
            raise

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if is_pending_participant(user):
            raise forms.ValidationError(self.error_messages["pending"], code="pending")

    def _pending_with_password(self) -> Any:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if not username or not password:
            return None
        model = get_user_model()
        user = model._default_manager.filter(**{model.USERNAME_FIELD: username}).first()
        if user is None or not user.check_password(password):
            return None
        return user if is_pending_participant(user) else None
