"""`manage.py createapiowner USERNAME --password P [--activate]`: create an API owner, or set its password."""

from django.core.management.base import BaseCommand, CommandError

from platform_site.accounts.services import owner_ensure


class Command(BaseCommand):
    help = (
        "Create an API owner (idempotent: updates the password when the owner exists). A deactivated owner stays "
        "deactivated unless --activate is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument(
            "--staff",
            action="store_true",
            help="also make it a Django superuser, for /admin/, which shows and changes EVERY owner's data: for the "
            "platform's own operators, never for a tenant on a shared server",
        )
        parser.add_argument(
            "--activate",
            action="store_true",
            help="reactivate a deactivated owner (its unexpired tokens work again unless the password changes)",
        )

    def handle(self, *args, username, password, staff, activate, **options):
        try:
            owner, created = owner_ensure(username=username, password=password, is_staff=staff, activate=activate)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"API owner '{username}' {'created' if created else 'updated'}.")
        if staff:
            self.stdout.write(
                f"API owner '{username}' is a Django superuser: /admin/ shows and changes every owner's data to it."
            )
        if not owner.is_active:
            self.stdout.write(
                f"API owner '{username}' is deactivated and stays so: its tokens and logins are refused "
                "(--activate to reactivate it)."
            )
