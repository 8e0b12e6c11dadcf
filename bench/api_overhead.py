"""Request overhead of the API: authentication, tenancy, paging, sorting and serialisation of a
list of 20 core users and of a configuration read, through Django's request handling in-process."""

import time

from _django import percentile, scratch_database

REQUESTS = 500


def main() -> None:
    with scratch_database():
        from rest_framework.test import APIClient

        from platform_site.accounts.models import CoreUser
        from platform_site.accounts.services import owner_ensure
        from platform_site.api.authentication import token_issue

        owner, _ = owner_ensure(username="bench", password="bench-password")
        CoreUser.objects.bulk_create([CoreUser(owner=owner, name=f"user {i}") for i in range(200)])
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(owner)}")
        for label, url in (
            ("GET users page of 20", "/services/usermanagement/api/users?sort=name,desc"),
            ("GET owner configuration", "/services/config/api/configs"),
        ):
            client.get(url)
            timings = []
            for _ in range(REQUESTS):
                started = time.perf_counter()
                assert client.get(url).status_code == 200
                timings.append((time.perf_counter() - started) * 1000)
            print(
                f"{label:28s} p50 {percentile(timings, 50):6.2f} ms  p95 {percentile(timings, 95):6.2f} ms  "
                f"{REQUESTS / (sum(timings) / 1000):7.0f} req/s (one thread)"
            )


if __name__ == "__main__":
    main()
