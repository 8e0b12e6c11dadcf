"""`manage.py ensuredemoowner`: make sure the embedded default has an API owner to try things with.

The password is generated once and kept in `var/demo-owner.json` (or taken from
DEMO_OWNER_PASSWORD), so every `make run` prints the same working credentials.
"""

import json
import os
import secrets
import tempfile

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from platform_site.accounts.services import owner_ensure


class Command(BaseCommand):
    help = "Ensure the demo API owner exists and print its username and password."

    def handle(self, *args, **options):
        path = settings.VAR_DIR / "demo-owner.json"
        username = os.environ.get("DEMO_OWNER_USERNAME", "demo")
        password = os.environ.get("DEMO_OWNER_PASSWORD")
        if not password and path.exists():
            stored = json.loads(path.read_text())
            if stored.get("username") == username:
                password = stored["password"]
        password = password or secrets.token_urlsafe(12)
        try:
            owner, _ = owner_ensure(username=username, password=password, is_staff=True)
        except ValueError as exc:  # DEMO_OWNER_USERNAME / DEMO_OWNER_PASSWORD out of bounds
            raise CommandError(str(exc)) from None
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written to a file of this user's only (mkstemp's mode 0600), then put in place: written in place, the new
        # file was readable by anyone with the password in it until a chmod after.
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".demo-owner-")
        with os.fdopen(descriptor, "w") as file:
            json.dump({"username": username, "password": password}, file)
        os.replace(draft, path)
        self.stdout.write(f"Demo API owner: username '{username}', password '{password}' (also for /admin/)")
        if not owner.is_active:
            # (deactivated on purpose: `make run` does not undo it)
            self.stdout.write(
                f"The demo owner is deactivated and stays so; reactivate it with "
                f"`manage.py createapiowner {username} --password ... --activate`."
            )
