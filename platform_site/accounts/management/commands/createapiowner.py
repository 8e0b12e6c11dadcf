"""`manage.py createapiowner USERNAME --password P`: create an API owner, or set its password."""

from django.core.management.base import BaseCommand, CommandError

from platform_site.accounts.services import owner_ensure


class Command(BaseCommand):
    help = "Create an API owner (idempotent: updates the password when the owner exists)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--staff", action="store_true", help="also allow the Django admin")

    def handle(self, *args, username, password, staff, **options):
        try:
            _, created = owner_ensure(username=username, password=password, is_staff=staff)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"API owner '{username}' {'created' if created else 'updated'}.")
