"""The assets service's business rules, one module per concern; import them from here.

- `machines`: user-created machines and their events.
- `pooling`: machines, implements and operators found in converted files, pooled by identity.
- `keys`: the normalised identity keys both use.
"""

from .keys import name_key, serial_key, vin_key
from .machines import machine_check_writable, machine_create, machine_delete, machine_update, machines_existing
from .pooling import (
    AssetIdentityMissing,
    MachineIdentity,
    implement_pool_from_file,
    machine_pool_from_file,
    operator_pool_from_file,
)

__all__ = [
    "AssetIdentityMissing",
    "MachineIdentity",
    "implement_pool_from_file",
    "machine_check_writable",
    "machine_create",
    "machine_delete",
    "machine_pool_from_file",
    "machine_update",
    "machines_existing",
    "name_key",
    "operator_pool_from_file",
    "serial_key",
    "vin_key",
]
