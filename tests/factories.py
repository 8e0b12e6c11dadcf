"""Factories for the models every test needs."""

import factory
from django.contrib.auth import get_user_model

from platform_site.accounts.models import CoreUser

PASSWORD = "correct-horse-battery"


class OwnerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"owner{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class CoreUserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CoreUser

    owner = factory.SubFactory(OwnerFactory)
    name = factory.Sequence(lambda n: f"Grower {n}")
    email = factory.Sequence(lambda n: f"grower{n}@example.com")
