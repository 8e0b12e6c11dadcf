"""Provider secrets at rest: Fernet with `PROVIDER_SECRETS_KEYS` (the first key encrypts, every key decrypts), so a
key is rotated by putting the new one first."""

import pytest
from cryptography.fernet import Fernet

from platform_site.accounts.crypto import LEGACY_DEFAULT_SECRET_KEY, secret_decrypt, secret_encrypt, secret_unreadable

pytestmark = pytest.mark.embedded


def test_the_first_key_encrypts_and_every_key_decrypts(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.PROVIDER_SECRETS_KEYS = old
    stored_before = secret_encrypt("client-secret-1")
    assert Fernet(old.encode()).decrypt(stored_before.encode()) == b"client-secret-1"

    # rotation: the new key first, the old one kept to read what it encrypted
    settings.PROVIDER_SECRETS_KEYS = f"{new}, {old}"
    stored_after = secret_encrypt("client-secret-2")
    assert Fernet(new.encode()).decrypt(stored_after.encode()) == b"client-secret-2"
    assert secret_decrypt(stored_before) == "client-secret-1"
    assert secret_decrypt(stored_after) == "client-secret-2"

    # once the old key is dropped, what only it encrypted is said to be unreadable (no garbage, no 500 text)
    settings.PROVIDER_SECRETS_KEYS = new
    assert secret_decrypt(stored_after) == "client-secret-2"
    assert secret_unreadable(secret_decrypt(stored_before)) and secret_decrypt(stored_before) == ""


def test_without_keys_a_key_derived_from_the_secret_key_is_used(settings):
    settings.PROVIDER_SECRETS_KEYS = ""
    stored = secret_encrypt("client-secret")
    assert secret_decrypt(stored) == "client-secret"
    settings.SECRET_KEY = settings.SECRET_KEY + "-changed"
    assert secret_unreadable(secret_decrypt(stored))


def test_secrets_stored_under_the_old_embedded_default_key_are_still_read(settings):
    """Until 2026-11-27 an installation without SECRET_KEY ran on a fixed one; since, it makes its own, which could
    not read the provider secrets stored before: every answer about a provider application was a 500."""
    settings.PROVIDER_SECRETS_KEYS = ""
    settings.SECRET_KEY = LEGACY_DEFAULT_SECRET_KEY
    stored = secret_encrypt("client-secret")
    settings.SECRET_KEY = "this-installations-own-key"
    assert secret_decrypt(stored) == "client-secret"
    assert secret_decrypt(secret_encrypt("new")) == "new"
    settings.SECRET_KEY = LEGACY_DEFAULT_SECRET_KEY + "-not"
    assert secret_decrypt(secret_encrypt("written under the key in use, never the old one")) != ""
    # With keys of its own the installation reads only with them
    settings.PROVIDER_SECRETS_KEYS = Fernet.generate_key().decode()
    assert secret_unreadable(secret_decrypt(stored))
