"""Magic link tasks: thin, idempotent, ids only."""

from platform_site.accounts.models import ProviderCredential
from platform_site.celery import app

from . import services


@app.task(acks_late=True, ignore_result=True)
def magiclinks_credential_refresh(credential_id: str, only_if_due: bool = False) -> None:
    """Refresh one core user's provider tokens (with `only_if_due`, only when they are about to expire); a refusal
    emits `credentialsUnauthenticated`."""
    credential = ProviderCredential.objects.select_related("core_user").filter(pk=credential_id).first()
    if credential is None or credential.status != ProviderCredential.Status.AUTHENTICATED:
        return
    if only_if_due and not services.credential_refresh_due(credential):
        return
    services.credential_refresh(credential=credential)


@app.task(ignore_result=True)
def magiclinks_credentials_refresh_sweep() -> None:
    """Periodic (beat): refresh the provider credentials about to expire."""
    services.credentials_refresh_sweep()


@app.task(ignore_result=True)
def magiclinks_sweep() -> None:
    """Periodic (beat): forget the sign-ins past their lifetime, and the deleted links kept past their time."""
    services.link_authorizations_sweep()
    services.link_tombstones_sweep()
