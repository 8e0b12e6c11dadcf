"""Secrets at rest: provider client secrets and provider tokens are Fernet-encrypted in the database.

Keys come from `PROVIDER_SECRETS_KEYS` (Fernet keys; the first encrypts, every one decrypts, so a key
can be rotated by putting the new one first). Without it a key is derived from SECRET_KEY (the installation's
own random one when none is set: `platform_site.secret_key`), which ties the stored secrets to SECRET_KEY.
"""

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models


def _fernet() -> MultiFernet:
    keys = getattr(settings, "PROVIDER_SECRETS_KEYS", None) or []
    if isinstance(keys, str):
        keys = [k for k in keys.split(",") if k.strip()]
    if not keys:
        digest = hashlib.sha256(b"provider-secrets:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest)]
    return MultiFernet([Fernet(k.strip() if isinstance(k, str) else k) for k in keys])


def secret_encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def secret_decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise ImproperlyConfigured(
            "A stored provider secret cannot be decrypted: PROVIDER_SECRETS_KEYS (or SECRET_KEY) changed."
        ) from None


class EncryptedTextField(models.TextField):
    """Text stored encrypted and read back in clear. It cannot be filtered on (every encryption differs)."""

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return secret_decrypt(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return secret_encrypt(value)
