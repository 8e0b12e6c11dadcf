"""What the magic links app does when the apps below it say so."""

from django.dispatch import receiver

from platform_site.accounts.signals import core_user_deleting

from . import services


@receiver(core_user_deleting, dispatch_uid="magiclinks.core_user_links")
def _core_user_deleting(sender, core_user, **kwargs) -> None:
    """The user's links go with it by cascade; their holders are told so (410) for a while."""
    services.core_user_links_bury(core_user=core_user)
