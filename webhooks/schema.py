"""The deliveries in the OpenAPI document (3.1 `webhooks`): one webhook per event the platform sends, its body as a
component (`FieldCreatedEvent`...), its headers and the answers a receiver gives, so that a client can generate and
validate its receiver from `/api/schema/`.

`WEBHOOKS` is `SPECTACULAR_SETTINGS["WEBHOOKS"]`; `postprocess_webhook_components` adds the bodies' components. The
bodies are those `event_emit` writes: `{type, timestamp, coreUserId, **payload, deliveryId}`, with the payload each
emitter gives (README "Webhooks")."""

from drf_spectacular.utils import OpenApiWebhook

from .models import EventType
from .services import DELIVERY_HEADER, SIGNATURE_HEADER

# Registered but not sent yet (README "Webhooks"): nothing in the platform does what they announce (no provider sync,
# no satellite imagery). They have no webhook in the document until they are sent.
NOT_SENT = frozenset(
    {
        EventType.PROVIDER_FILE_PROCESSING_FINISHED,
        EventType.PROVIDER_FILE_PROCESSING_FAILED,
        EventType.NEW_SATELLITE_IMAGE,
    }
)

_UUID = {"type": "string", "format": "uuid"}
_FIELD_ID = {"type": "string", "description": "The field's `id` in the API (the client's, or generated)."}
_FAILURE = {"type": "string", "description": "Why it failed."}
_PROVIDER = {"$ref": "#/components/schemas/ConnectableProviderEnum"}

# Each event: what it announces, its keys besides the common ones (`type`, `timestamp`, `coreUserId`,
# `deliveryId`), and which of them every body has.
_FIELD = ({"fieldId": _FIELD_ID}, ["fieldId"])
_BOUNDARY = ({"fieldId": _FIELD_ID, "boundaryId": {**_UUID, "description": "The field's new boundary."}}, None)
_MERGED_FIELD = (
    {
        "fieldId": {**_FIELD_ID, "description": "The merged field's `id`."},
        "boundaryId": {"type": ["string", "null"], "format": "uuid", "description": "Null when it has none."},
        "sources": {"type": "array", "items": _FIELD_ID, "description": "The `id`s of the fields it merges."},
    },
    None,
)
_UPLOADED = {"coreFileId": {**_UUID, "description": "The file."}, "batchId": {**_UUID, "description": "Its upload."}}
_FILE = {"coreFileId": {**_UUID, "description": "The file."}}


def _failed(keys: dict) -> tuple[dict, list[str]]:
    """A failed file's event: `keys` (all required) and the optional `message` saying why."""
    return {**keys, "message": _FAILURE}, list(keys)


_OPERATION = {"operationId": _UUID, "coreFileId": {**_UUID, "description": "The operation's automerged file."}}
_OPERATION_CHANGE = {**_OPERATION, "sourceFileId": {**_UUID, "description": "The file that joined the operation."}}
_MACHINE = ({"machineId": _UUID}, None)
_IMPLEMENT = ({"implementId": _UUID}, None)
_CREDENTIALS = ({"provider": _PROVIDER, "message": {"type": "string"}}, None)

EVENTS: dict[str, tuple[str, tuple[dict, list[str] | None]]] = {
    EventType.FIELD_CREATED: ("A field was created (through the API or from a provider).", _FIELD),
    EventType.FIELD_UPDATED: (
        "A field changed: its name, farm or grower, its boundary, or the merged field it belongs to.",
        _FIELD,
    ),
    EventType.MERGED_FIELD_CREATED: ("Overlapping fields were merged into a new merged field.", _MERGED_FIELD),
    EventType.MERGED_FIELD_UPDATED: ("A merged field's sources or boundary changed.", _MERGED_FIELD),
    EventType.FIELD_BOUNDARY_CREATED: ("A new field's first boundary.", _BOUNDARY),
    EventType.FIELD_BOUNDARY_UPDATED: ("A field has a new boundary (the old one stays, inactive).", _BOUNDARY),
    EventType.BATCH_UPLOAD_PROCESSING_FINISHED: (
        "Every file of an upload was processed: `status` says whether any of them was read.",
        (
            {
                "batchId": _UUID,
                "status": {"type": "string", "enum": ["PROCESSED", "FAILED"]},
                "message": {"type": "string", "description": "Why the upload failed (FAILED only)."},
            },
            ["batchId", "status"],
        ),
    ),
    EventType.UPLOADED_FILE_PROCESSING_FINISHED: ("A file of an upload was converted.", (_UPLOADED, None)),
    EventType.UPLOADED_FILE_PROCESSING_FAILED: (
        "A file of an upload could not be converted.",
        _failed(_UPLOADED),
    ),
    EventType.MERGED_FILE_PROCESSING_FINISHED: ("A merged file (`POST /files/merge`) was built.", (_FILE, None)),
    EventType.MERGED_FILE_PROCESSING_FAILED: (
        "A merged file (`POST /files/merge`) could not be built.",
        _failed(_FILE),
    ),
    EventType.AUTOMERGED_FILE_PROCESSING_FINISHED: ("An operation's automerged file was built.", (_FILE, None)),
    EventType.AUTOMERGED_FILE_PROCESSING_FAILED: (
        "An operation's automerged file could not be built.",
        _failed(_FILE),
    ),
    EventType.OPERATION_CREATED: ("A processed file began a new operation.", (_OPERATION_CHANGE, None)),
    EventType.OPERATION_UPDATED: ("A processed file joined an operation.", (_OPERATION_CHANGE, None)),
    EventType.OPERATION_PROCESSING_FINISHED: ("An operation was built from its files.", (_OPERATION, None)),
    EventType.MACHINE_CREATED: ("A machine was created (through the API or pooled from a file).", _MACHINE),
    EventType.MACHINE_UPDATED: ("A machine changed.", _MACHINE),
    EventType.MACHINE_DELETED: ("A machine was deleted.", _MACHINE),
    EventType.IMPLEMENT_CREATED: ("An implement was pooled from a file.", _IMPLEMENT),
    EventType.IMPLEMENT_UPDATED: ("A pooled implement learnt more from a file.", _IMPLEMENT),
    EventType.CREDENTIALS_UNAUTHENTICATED: (
        "A provider refused the end user's tokens: the user must connect again (a provider magic link).",
        _CREDENTIALS,
    ),
    EventType.CREDENTIALS_LIMITED_PERMISSION: (
        "The end user connected a provider without granting every scope asked for (`message` names those missing).",
        _CREDENTIALS,
    ),
}

DELIVERY_DESCRIPTION = (
    "A `POST` of compact JSON to the webhook's `url`, signed with its `secret`. Verify `X-Core-Signature` over the "
    "raw body bytes before parsing them. Drop a repeat by the body's `deliveryId` (signed, unlike the header): an "
    "attempt whose answer was lost is sent again byte for byte. Deliveries may arrive out of order: order them by "
    "`timestamp`."
)
HEADER_PARAMETERS = [
    {
        "name": SIGNATURE_HEADER,
        "in": "header",
        "required": True,
        "description": "base64 of the HMAC-SHA256 of the exact body bytes, keyed with the webhook's `secret`.",
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9+/]{43}=$"},
    },
    {
        "name": DELIVERY_HEADER,
        "in": "header",
        "required": True,
        "description": "The delivery's id, the body's `deliveryId`; the same on every attempt (not signed).",
        "schema": _UUID,
    },
]
RESPONSES = {
    "2XX": {"description": "Any 2xx acknowledges the delivery; its body is not read."},
    "default": {
        "description": "Any other answer, a redirect, or no answer within `WEBHOOK_TIMEOUT_SECONDS` (5 s) is a failed "
        "attempt, listed in `GET /webhooks/failed-calls` and retried after `WEBHOOK_RETRY_SCHEDULE` (about 1, 30, 60 "
        "and 240 minutes)."
    },
}


def event_component(event: str) -> str:
    """The name of the body's component: `fieldCreated` -> `FieldCreatedEvent`."""
    return f"{event[0].upper()}{event[1:]}Event"


def event_schema(event: str) -> dict:
    """The JSON Schema of `event`'s body: the common keys, then its own (`EVENTS`)."""
    description, (properties, required) = EVENTS[event]
    schema = {
        "type": "object",
        "description": description,
        "properties": {
            "type": {"type": "string", "const": str(event)},
            "timestamp": {
                "type": "string",
                "format": "date-time",
                "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
                "description": "When the change happened, in UTC with milliseconds (a retry keeps it).",
            },
            "coreUserId": {**_UUID, "description": "The core user whose data changed."},
            **properties,
            "deliveryId": {**_UUID, "description": "The delivery's id, as `X-Core-Delivery`: the key to drop repeats."},
        },
        "required": ["type", "timestamp", "coreUserId", *(list(properties) if required is None else required)],
        "additionalProperties": False,
    }
    schema["required"].append("deliveryId")
    if event == EventType.BATCH_UPLOAD_PROCESSING_FINISHED:
        # `message` says why a failed upload failed, and only then.
        schema["if"] = {"properties": {"status": {"const": "FAILED"}}}
        schema["then"] = {"required": ["message"]}
        schema["else"] = {"not": {"required": ["message"]}}
    return schema


def _webhook(event: str) -> OpenApiWebhook:
    operation = {
        "operationId": f"{event}Delivery",
        "summary": EVENTS[event][0],
        "description": DELIVERY_DESCRIPTION,
        "tags": ["webhook deliveries"],
        "parameters": HEADER_PARAMETERS,
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{event_component(event)}"}}},
        },
        "responses": RESPONSES,
    }
    return OpenApiWebhook(name=str(event), decorator={"post": operation})


WEBHOOKS = [_webhook(event) for event in EVENTS]


def postprocess_webhook_components(result, generator, request, public):
    """The body of each webhook (`WEBHOOKS`) as its component, which its request body names."""
    if "webhooks" in result:
        result.setdefault("components", {}).setdefault("schemas", {}).update(
            {event_component(event): event_schema(event) for event in EVENTS}
        )
    return result
