"""Secrets at rest: provider client secrets and provider tokens are Fernet-encrypted in the database.

Keys come from `PROVIDER_SECRETS_KEYS` (Fernet keys; the first encrypts, every one decrypts, so a key
can be rotated by putting the new one first). Without it a key is derived from SECRET_KEY (the installation's
own random one when none is set: `platform_site.secret_key`), which ties the stored secrets to SECRET_KEY.
"""

import base64
import hashlib
import logging

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

# The fixed SECRET_KEY of the embedded default until 2026-11-27 (no key is written in the code since: each
# installation makes its own, `platform_site.secret_key`). An installation that ran on it stored its provider secrets
# under a key derived from it: they are still read with it (never written), and migration accounts.0010 wrote them
# again under the installation's own key. Reading them exposes nothing new: anyone who had the database and the code
# could read them already.
LEGACY_DEFAULT_SECRET_KEY = "insecure-embedded-default-change-me"

log = logging.getLogger(__name__)


def _derived_key(secret_key: str) -> bytes:
    return base64.urlsafe_b64encode(hashlib.sha256(b"provider-secrets:" + secret_key.encode()).digest())


def _keys() -> list:
    keys = getattr(settings, "PROVIDER_SECRETS_KEYS", None) or []
    if isinstance(keys, str):
        keys = [k for k in keys.split(",") if k.strip()]
    return [k.strip() if isinstance(k, str) else k for k in keys] or [_derived_key(settings.SECRET_KEY)]


def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(k) for k in _keys()])


def _reader() -> MultiFernet:
    """Every key that decrypts: the configured ones, then (keys derived from SECRET_KEY only) the legacy default's."""
    keys = _keys()
    if not getattr(settings, "PROVIDER_SECRETS_KEYS", None):
        keys = [*keys, _derived_key(LEGACY_DEFAULT_SECRET_KEY)]
    return MultiFernet([Fernet(k) for k in keys])


class UnreadableSecret(str):
    """A stored secret no key of this installation decrypts (PROVIDER_SECRETS_KEYS or SECRET_KEY changed): empty
    text, so its row is still read (every answer about the row was a 500, its PUT and DELETE too), carrying the
    stored ciphertext, which is written back as it was (the right key, restored, reads it again). Whoever needs the
    secret says it must be given again (`secret_unreadable`)."""

    ciphertext: str

    def __new__(cls, ciphertext: str):
        secret = super().__new__(cls, "")
        secret.ciphertext = ciphertext
        return secret


def secret_unreadable(value) -> bool:
    return isinstance(value, UnreadableSecret)


def secret_encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def secret_decrypt(token: str) -> str:
    """The secret `token` holds, or an `UnreadableSecret` when no key decrypts it."""
    try:
        return _reader().decrypt(token.encode()).decode()
    except InvalidToken:
        log.warning("a stored provider secret cannot be decrypted: PROVIDER_SECRETS_KEYS (or SECRET_KEY) changed")
        return UnreadableSecret(token)


class EncryptedTextField(models.TextField):
    """Text stored encrypted and read back in clear. It cannot be filtered on (every encryption differs)."""

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return secret_decrypt(value)

    def get_prep_value(self, value):
        if isinstance(value, UnreadableSecret):
            return value.ciphertext
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return secret_encrypt(value)
