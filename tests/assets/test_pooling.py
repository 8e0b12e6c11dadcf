"""The pooling services the conversion pipeline calls, tested directly."""

import uuid

import pytest
from django.db import connection

from assets.models import Implement, ImplementFile, Machine, MachineFile, Operator, OperatorFile, OriginType
from assets.services import (
    AssetIdentityMissing,
    MachineIdentity,
    implement_pool_from_file,
    machine_pool_from_file,
    operator_pool_from_file,
)
from tests.assets.helpers import BASE, machine_make, run_in_threads, ts
from tests.factories import CoreUserFactory


def pool(core_user, core_file_id=None, **identity):
    return machine_pool_from_file(
        core_user=core_user,
        identity=MachineIdentity(**identity),
        core_file_id=core_file_id or uuid.uuid4(),
    )


@pytest.mark.django_db
@pytest.mark.embedded
class TestMachinePooling:
    def test_a_new_serial_number_makes_a_file_pooled_machine_and_its_machine_file(self, core_user):
        file_id = uuid.uuid4()
        machine, machine_file = machine_pool_from_file(
            core_user=core_user,
            identity=MachineIdentity(serial_number=" 1RW8370R ", name="8R 370", make="Deere", model_year=2020),
            core_file_id=str(file_id),
            provider="Other",
            start_time=ts("2024-05-01T08:00:00"),
            end_time=ts("2024-05-01T09:00:00"),
            distance_value=4.2,
            distance_unit="mile",
            fuel_consumption_value=10.5,
            fuel_consumption_unit="US gal",
        )
        assert machine.origin_type == OriginType.FILE_POOLED
        assert (machine.serial_number, machine.name, machine.make, machine.model_year) == (
            "1RW8370R",
            "8R 370",
            "Deere",
            2020,
        )
        assert machine.provider == "Other"
        assert machine_file.core_file_id == file_id and machine_file.machine == machine
        assert (machine_file.distance_value, machine_file.distance_unit) == (4.2, "mile")
        assert (machine_file.fuel_consumption_value, machine_file.fuel_consumption_unit) == (10.5, "US gal")

    def test_the_same_serial_number_in_another_spelling_is_the_same_machine(self, core_user):
        first, _ = pool(core_user, serial_number="1RW-8370 r")
        second, _ = pool(core_user, serial_number="1rw8370R", name="Tractor")
        assert first == second
        assert Machine.objects.count() == 1 and MachineFile.objects.filter(machine=first).count() == 2

    def test_the_same_vin_is_the_same_machine_and_fills_a_missing_serial(self, core_user):
        first, _ = pool(core_user, vin="1HGCM82633A004352")
        second, _ = pool(core_user, vin="1hgcm82633a004352", serial_number="SN-9")
        assert first == second
        second.refresh_from_db()
        assert second.serial_number == "SN-9"
        third, _ = pool(core_user, serial_number="sn 9")
        assert third == first and Machine.objects.count() == 1

    def test_without_serial_or_vin_the_name_make_and_model_identify(self, core_user):
        first, _ = pool(core_user, name="Combine  1", make="Case", model="8250")
        second, _ = pool(core_user, name="combine 1", make="CASE", model="8250")
        third, _ = pool(core_user, name="Combine 1", make="Case", model="9250")
        assert first == second != third

    def test_a_serial_number_no_machine_has_makes_a_new_machine_whatever_its_name(self, core_user):
        """The name identifies only files that carry neither serial number nor VIN."""
        named, _ = pool(core_user, name="Combine 1", make="Case")
        by_serial, _ = pool(core_user, name="Combine 1", make="Case", serial_number="S2")
        by_vin, _ = pool(core_user, name="Combine 1", make="Case", vin="V2")
        assert len({named, by_serial, by_vin}) == 3
        named.refresh_from_db()
        assert (named.serial_number, named.vin) == (None, None)

    def test_a_user_created_machine_with_that_serial_is_matched_and_left_unchanged(self, api_client, core_user):
        created = api_client.post(
            f"{BASE}/{core_user.id}/machines", {"name": "Mine", "serialNumber": "ABC1"}, format="json"
        ).json()
        machine, machine_file = pool(core_user, serial_number="abc1", vin="VIN77", name="From file")
        assert str(machine.id) == created["id"] and machine.origin_type == OriginType.USER_CREATED
        machine.refresh_from_db()
        assert (machine.name, machine.vin) == ("Mine", None)
        files = api_client.get(f"{BASE}/{core_user.id}/machines/{machine.id}/files").json()
        assert [f["coreFileId"] for f in files] == [str(machine_file.core_file_id)]

    def test_the_same_file_twice_updates_its_machine_file(self, core_user):
        file_id = uuid.uuid4()
        machine, _ = machine_pool_from_file(
            core_user=core_user, identity=MachineIdentity(serial_number="S"), core_file_id=file_id, distance_value=1.0
        )
        machine_pool_from_file(
            core_user=core_user, identity=MachineIdentity(serial_number="S"), core_file_id=file_id, distance_value=2.0
        )
        assert list(MachineFile.objects.values_list("distance_value", flat=True)) == [2.0]

    def test_core_users_do_not_share_machines(self, core_user):
        sibling = CoreUserFactory(owner=core_user.owner)
        mine, _ = pool(core_user, serial_number="S1")
        theirs, _ = pool(sibling, serial_number="S1")
        assert mine != theirs

    def test_a_serial_another_machine_has_is_not_copied_onto_a_vin_match(self, core_user):
        by_serial, _ = pool(core_user, serial_number="S1")
        by_vin, _ = pool(core_user, vin="V1")
        # Serial number wins over VIN, and the VIN is not moved to the serial's machine.
        machine, _ = pool(core_user, serial_number="S1", vin="V1")
        assert machine == by_serial
        by_serial.refresh_from_db()
        assert by_serial.vin is None and Machine.objects.count() == 2
        assert pool(core_user, vin="V1")[0] == by_vin

    def test_another_users_machine_of_the_same_serial_or_vin_does_not_keep_it_from_this_one(
        self, core_user, other_owner
    ):
        """Only this user's machines hold a serial number or VIN apart: another core user's (of this owner or
        another) are theirs, and this user's machine still takes its serial and VIN from its file."""
        for stranger in (CoreUserFactory(owner=core_user.owner), CoreUserFactory(owner=other_owner)):
            pool(stranger, serial_number="S1", vin="V1")
        machine, _ = pool(core_user, vin="V1")
        assert pool(core_user, serial_number="S1", vin="V1")[0] == machine  # (found by its VIN, given the serial)
        machine.refresh_from_db()
        assert (machine.serial_number, machine.vin) == ("S1", "V1")

    def test_an_identity_with_nothing_to_match_on_is_refused(self, core_user):
        with pytest.raises(AssetIdentityMissing):
            pool(core_user, serial_number="  ", category="TRACTOR")

    def test_a_make_or_model_alone_names_no_machine(self, core_user):
        """They were pooled: every later file naming only "John Deere" joined one nameless machine."""
        for identity in ({"make": "John Deere"}, {"make": "John Deere", "model": "8R 370"}):
            with pytest.raises(AssetIdentityMissing):
                pool(core_user, **identity)
        with pytest.raises(AssetIdentityMissing):
            implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), make="Kinze", model="3600")
        assert not Machine.objects.exists() and not Implement.objects.exists()

    def test_details_a_file_adds_never_change_the_identity_a_machine_is_found_by(self, core_user):
        """Filling the make recomputed the name key ("deere deere 8r"): the next file of the same identity made a
        second machine, and a machine already holding that key made the save fail the whole file."""
        first, _ = pool(core_user, name="Deere 8R")
        second, _ = pool(core_user, make="Deere", name="8R")
        assert second == first and (second.make, second.name) == ("Deere", "Deere 8R")
        assert pool(core_user, make="Deere", name="8R")[0] == first
        assert pool(core_user, name="Deere 8R")[0] == first
        # And another machine whose own key is what the filled-in one would have been is pooled apart, without error
        other, _ = pool(core_user, make="Deere", name="Deere 8R")
        assert other != first and pool(core_user, make="Deere", name="8R")[0] == first
        assert Machine.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.embedded
class TestImplementAndOperatorPooling:
    def test_implements_pool_by_serial_then_by_name(self, core_user):
        a = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), serial_number="IMP 1")
        b = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), serial_number="imp1", make="X")
        c = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="Header 40ft")
        d = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="HEADER  40FT!")
        assert a == b and c != a
        assert c == d and c.name == "Header 40ft"
        assert Implement.objects.count() == 2 and ImplementFile.objects.filter(implement=a).count() == 2
        a.refresh_from_db()
        assert a.make == "X" and a.origin_type == OriginType.FILE_POOLED

    def test_operators_pool_by_normalised_name(self, core_user):
        file_id = uuid.uuid4()
        first = operator_pool_from_file(core_user=core_user, core_file_id=file_id, name="José  Díaz")
        again = operator_pool_from_file(core_user=core_user, core_file_id=file_id, name="jose diaz", license="L-1")
        assert first == again and Operator.objects.count() == 1 and OperatorFile.objects.count() == 1
        again.refresh_from_db()
        assert (again.name, again.license, again.status) == ("José  Díaz", "L-1", "ACTIVE")
        with pytest.raises(AssetIdentityMissing):
            operator_pool_from_file(core_user=core_user, core_file_id=file_id, name=" -- ")

    def test_identities_that_lengthen_when_normalised_still_fit_and_match(self, api_client, core_user):
        """'ß' upper-cases to 'SS' and the ligature U+FDFA decomposes into 18 letters: keys of names, serial numbers
        and VINs that fit their own columns outgrew the key columns (a database error on PostgreSQL). A long key
        keeps its start and a digest of the whole, so the same identity still finds its asset."""
        long = {"serialNumber": "ß" * 255, "vin": "ß" * 64, "name": "\ufdfa" * 255, "make": "ß" * 255, "model": "m"}
        response = api_client.post(f"{BASE}/{core_user.id}/machines", long, format="json")
        assert response.status_code == 201, response.content
        created = Machine.objects.get(pk=response.json()["id"])
        again, _ = pool(core_user, serial_number="ß" * 255)  # the same serial number, found by its long key
        assert again == created
        by_vin, _ = pool(core_user, vin="ß" * 64)
        assert by_vin == created
        cut, _ = pool(core_user, serial_number="x" * 300)  # longer than its column in the file: its start is kept
        assert cut.serial_number == "x" * 255 and pool(core_user, serial_number="x" * 255)[0] == cut
        by_name, _ = pool(core_user, name="\ufdfa" * 300)
        assert by_name != created and by_name == pool(core_user, name="\ufdfa" * 300)[0]
        operator = operator_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="\ufdfa" * 255)
        assert operator == operator_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="\ufdfa" * 255)
        implement = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), serial_number="ß" * 255)
        for record in (created, by_name, cut, operator, implement):
            record.refresh_from_db()
            for key in ("serial_key", "vin_key", "name_key"):
                if hasattr(record, key):
                    assert len(getattr(record, key)) <= type(record)._meta.get_field(key).max_length, (record, key)

    def test_pooled_assets_are_listed_read_only(self, api_client, core_user):
        implement = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="Disc")
        operator = operator_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="Pat")
        assert api_client.get(f"{BASE}/{core_user.id}/implements/{implement.id}").json()["originType"] == "FILE_POOLED"
        assert api_client.get(f"{BASE}/{core_user.id}/operators/{operator.id}").json()["originType"] == "FILE_POOLED"


@pytest.mark.django_db(transaction=True)
@pytest.mark.embedded
def test_machine_and_implement_events(api_client, owner, core_user, webhook_receiver, subscribe):
    events = ["machineCreated", "machineUpdated", "machineDeleted", "implementCreated", "implementUpdated"]
    subscribe(owner, webhook_receiver, events)
    machines = f"{BASE}/{core_user.id}/machines"
    machine_id = api_client.post(machines, {"name": "Mine"}, format="json").json()["id"]
    api_client.patch(f"{machines}/{machine_id}", {"name": "Renamed"}, format="json")
    api_client.delete(f"{machines}/{machine_id}")
    pooled, _ = pool(core_user, serial_number="S1")
    pool(core_user, serial_number="S1")  # nothing new: no event
    pool(core_user, serial_number="S1", vin="V1")  # the file adds a VIN: updated
    implement = implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), serial_number="I1")
    implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), serial_number="I1", model="M")

    webhook_receiver.wait_for(7)
    got = sorted((e["type"], e.get("machineId") or e.get("implementId")) for e in webhook_receiver.events())
    assert got == sorted(
        [
            ("machineCreated", machine_id),
            ("machineUpdated", machine_id),
            ("machineDeleted", machine_id),
            ("machineCreated", str(pooled.id)),
            ("machineUpdated", str(pooled.id)),
            ("implementCreated", str(implement.id)),
            ("implementUpdated", str(implement.id)),
        ]
    )
    assert {e["coreUserId"] for e in webhook_receiver.events()} == {str(core_user.id)}


@pytest.mark.django_db(transaction=True)
@pytest.mark.embedded
def test_a_patch_that_changes_nothing_emits_nothing(api_client, owner, core_user, webhook_receiver, subscribe):
    """The values the machine already has (or none at all): 200 with the machine as it is, no machineUpdated."""
    subscribe(owner, webhook_receiver, ["machineUpdated"])
    machines = f"{BASE}/{core_user.id}/machines"
    machine = api_client.post(machines, {"name": "Mine", "vin": "V1", "modelYear": 2020}, format="json").json()
    for body in ({}, {"name": "Mine"}, {"name": " Mine ", "vin": "V1", "modelYear": 2020}):
        again = api_client.patch(f"{machines}/{machine['id']}", body, format="json")
        assert again.status_code == 200 and again.json() == machine
    api_client.patch(f"{machines}/{machine['id']}", {"vin": "V2"}, format="json")  # a real change, last
    webhook_receiver.wait_for(2, timeout=1)  # (one is due: a second would be a no-op's)
    assert [(e["type"], e["machineId"]) for e in webhook_receiver.events()] == [("machineUpdated", machine["id"])]


@pytest.mark.django_db(transaction=True)
def test_a_read_only_attempt_emits_nothing(api_client, owner, core_user, webhook_receiver, subscribe):
    subscribe(owner, webhook_receiver, ["machineUpdated", "machineDeleted"])
    machine = machine_make(core_user, origin_type=OriginType.PROVIDER_POOLED)
    assert (
        api_client.patch(f"{BASE}/{core_user.id}/machines/{machine.id}", {"name": "x"}, format="json").status_code
        == 403
    )
    assert api_client.delete(f"{BASE}/{core_user.id}/machines/{machine.id}").status_code == 403
    assert webhook_receiver.wait_for(1, timeout=0.5) == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_pooling_never_duplicates(core_user):
    if connection.vendor != "postgresql":
        pytest.skip("concurrency is proven on PostgreSQL")
    count = 8
    # The same serial number (in several spellings) and the same VIN seen in 8 files at once.
    results = run_in_threads(
        count,
        lambda i: pool(core_user, serial_number=["SN-1", "sn1", "Sn 1"][i % 3], vin="VIN-1" if i % 2 else None),
    )
    assert len({machine.id for machine, _ in results}) == 1
    assert Machine.objects.count() == 1 and MachineFile.objects.count() == count

    by_name = run_in_threads(count, lambda i: pool(core_user, name="Old Combine", make="Case")[0].id)
    assert len(set(by_name)) == 1
    implements = run_in_threads(
        count, lambda i: implement_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), serial_number="I1").id
    )
    operators = run_in_threads(
        count, lambda i: operator_pool_from_file(core_user=core_user, core_file_id=uuid.uuid4(), name="Pat").id
    )
    assert len(set(implements)) == 1 and len(set(operators)) == 1
    assert Implement.objects.count() == 1 and Operator.objects.count() == 1 and ImplementFile.objects.count() == count


@pytest.mark.django_db(transaction=True)
def test_a_file_pooled_while_the_user_created_machine_it_names_is_being_deleted_makes_its_own(core_user):
    """The file was linked to the machine being deleted: at commit the foreign key failed the file."""
    from django.db import transaction

    from assets.services import machine_create, machine_delete
    from tests.concurrency import needs_postgresql, run_meanwhile

    needs_postgresql()
    made = machine_create(core_user=core_user, name="Combine", serial_number="SN-7")
    with transaction.atomic():
        machine_delete(machine=Machine.objects.get(pk=made.pk))
        pooled = run_meanwhile(lambda: pool(core_user, serial_number="SN-7"))
    machine, machine_file = pooled()
    assert machine.pk != made.pk and machine.origin_type == OriginType.FILE_POOLED
    assert list(Machine.objects.values_list("pk", flat=True)) == [machine.pk]
    assert MachineFile.objects.get().machine_id == machine.pk


@pytest.mark.django_db(transaction=True)
def test_a_machine_deleted_as_a_file_is_pooled_into_it_takes_turns_with_the_pooling(core_user, monkeypatch):
    """A machine's deletion takes nothing before its core user, as pooling takes the user, then the machine: the
    machine locked first, a pooling arriving then deadlocked with it (a 503, or a failed conversion)."""
    from django.db import transaction

    from assets.services import machine_create, machine_delete
    from assets.services import machines as machines_module
    from tests.concurrency import needs_postgresql, run_meanwhile

    needs_postgresql()
    made = machine_create(core_user=core_user, name="Combine", serial_number="SN-7")
    lock, seen = machines_module.core_user_lock, {}

    def pooling_first(core_user_id):
        if "pooled" not in seen:
            seen["pooled"] = run_meanwhile(lambda: pool(core_user, serial_number="SN-7"))
        return lock(core_user_id)

    monkeypatch.setattr(machines_module, "core_user_lock", pooling_first)
    with transaction.atomic():
        assert machine_delete(machine=Machine.objects.get(pk=made.pk)) is True
    machine, machine_file = seen["pooled"]()  # (raised a deadlock on either side)
    # Pooled into it first (the deletion had locked nothing yet), then deleted with it
    assert machine.pk == machine_file.machine_id == made.pk
    assert not Machine.objects.exists() and not MachineFile.objects.exists()
