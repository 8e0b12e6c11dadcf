"""Factories for the models every test needs."""

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher, make_password

from platform_site.accounts.models import CoreUser

PASSWORD = "correct-horse-battery"


class QuickPBKDF2Hasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 at 1,000 iterations. Its hashes are PBKDF2 hashes like any other (the count is written in the
    hash), which every process of the platform checks at login, the servers tests start too; made in a millisecond
    instead of the 0.4 s of Django's million iterations, which each test creating an owner paid (about a third of
    `make test`)."""

    iterations = 1_000


QUICK_HASHER = QuickPBKDF2Hasher()


class OwnerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"owner{n}")
    password = factory.LazyFunction(lambda: make_password(PASSWORD, hasher=QUICK_HASHER))


class CoreUserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CoreUser

    owner = factory.SubFactory(OwnerFactory)
    name = factory.Sequence(lambda n: f"Grower {n}")
    email = factory.Sequence(lambda n: f"grower{n}@example.com")
