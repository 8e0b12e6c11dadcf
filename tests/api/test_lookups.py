"""`row_get` and `row_get_with_child`: the per-request lookups build the same instances as the ORM, on both
databases."""

import uuid

import pytest
from django.contrib.auth import get_user_model

from platform_site.accounts.models import CoreUser
from platform_site.api.lookups import row_get, row_get_with_child
from tests.factories import CoreUserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def _values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_instance_equals_the_orm_one_value_for_value(owner):
    core_user = CoreUserFactory(owner=owner, external_id="ext-1")
    found = row_get(CoreUser, id=str(core_user.id), owner=owner.pk)
    assert _values(found) == _values(CoreUser.objects.get(pk=core_user.id))
    assert isinstance(found.id, uuid.UUID) and found.created_at.tzinfo is not None
    assert not found._state.adding and found._state.db == "default"
    user = row_get(get_user_model(), id=str(owner.pk))
    assert _values(user) == _values(get_user_model().objects.get(pk=owner.pk))
    assert user.is_active is True


def test_another_owners_row_a_missing_one_and_malformed_values_are_none(owner, other_owner):
    core_user = CoreUserFactory(owner=owner)
    assert row_get(CoreUser, id=core_user.id, owner=other_owner.pk) is None
    assert row_get(CoreUser, id=uuid.uuid4(), owner=owner.pk) is None
    assert row_get(CoreUser, id="not-a-uuid", owner=owner.pk) is None
    assert row_get(get_user_model(), id="12abc") is None


def test_a_parent_and_its_child_in_one_query_equal_the_orm_ones(owner, django_assert_num_queries):
    core_user = CoreUserFactory(owner=owner, external_id="ext-2")
    with django_assert_num_queries(1):
        found_owner, found_core_user = row_get_with_child(
            get_user_model(), str(owner.pk), CoreUser, "owner", str(core_user.id)
        )
    assert _values(found_owner) == _values(get_user_model().objects.get(pk=owner.pk))
    assert _values(found_core_user) == _values(CoreUser.objects.get(pk=core_user.id))
    assert isinstance(found_core_user.id, uuid.UUID) and found_core_user.created_at.tzinfo is not None


def test_a_child_of_another_parent_a_missing_or_malformed_one_is_none_beside_the_parent(owner, other_owner):
    User = get_user_model()
    theirs = CoreUserFactory(owner=other_owner)
    for child_id in (theirs.id, uuid.uuid4(), "not-a-uuid"):
        found_owner, found_core_user = row_get_with_child(User, owner.pk, CoreUser, "owner", child_id)
        assert found_owner.pk == owner.pk and found_core_user is None
    mine = CoreUserFactory(owner=owner)
    assert row_get_with_child(User, 99_999_999, CoreUser, "owner", mine.id) == (None, None)
    assert row_get_with_child(User, "12abc", CoreUser, "owner", mine.id) == (None, None)


@pytest.mark.parametrize("pk", ["9" * 40, 2**63, -(2**63) - 1, "-" + "9" * 30])
def test_an_id_out_of_the_columns_range_is_none_as_a_missing_one(owner, pk):
    """The ORM finds no row for it; given to the driver as it was, SQLite raised OverflowError (a 500)."""
    User = get_user_model()
    mine = CoreUserFactory(owner=owner)
    assert not User.objects.filter(pk=int(pk)).exists()
    assert row_get(User, id=pk) is None
    assert row_get(CoreUser, id=mine.id, owner=pk) is None
    assert row_get_with_child(User, pk, CoreUser, "owner", mine.id) == (None, None)
    assert row_get_with_child(User, pk, CoreUser, "owner", "not-a-uuid") == (None, None)
