"""Magic link tasks: thin, idempotent, ids only."""

from platform_site.accounts.models import ProviderCredential
from platform_site.celery import app

from . import services


@app.task(acks_late=True, ignore_result=True)
def magiclinks_credential_refresh(credential_id: str) -> None:
    """Refresh one core user's provider tokens; a refusal emits `credentialsUnauthenticated`."""
    credential = ProviderCredential.objects.select_related("core_user").filter(pk=credential_id).first()
    if credential is None or credential.status != ProviderCredential.Status.AUTHENTICATED:
        return
    services.credential_refresh(credential=credential)
