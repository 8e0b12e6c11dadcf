import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogs.models import Product, ProductFile, Variety
from catalogs.normalize import normalize_name
from catalogs.services import CatalogNameEmpty, product_record, variety_record
from tests.assets.helpers import run_in_threads
from tests.factories import CoreUserFactory
from tests.tenancy import assert_cross_tenant_404, assert_problem

BASE = "/services/beta/api"
embedded = [pytest.mark.django_db, pytest.mark.embedded]
F1, F2, F3 = (uuid.UUID(f"{n:08d}-0000-4000-8000-000000000000") for n in (1, 2, 3))


def products_url(core_user, *parts) -> str:
    return "/".join([f"{BASE}/users/{core_user.id}/products", *parts])


@pytest.mark.embedded
@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("Roundup PowerMAX ", "roundup powermax"),
        ("roundup  powermax", "roundup powermax"),
        ("ROUNDUP POWERMAX®", "roundup powermax"),
        ("Roundup-PowerMax!", "roundup powermax"),
        ("Prowl\tH2O", "prowl h2o"),
        ("Éclair 2,4-D", "eclair 2 4 d"),
        (" --- ", ""),
        ("SÄURE", "saure"),
        ("Άλφα", "αλφα"),
        # Other scripts' marks make another letter or syllable: kept, composed again (NFC)
        ("ガス", "ガス"),
        ("ｶﾞｽ", "ガス"),
        ("कीट", "कीट"),
        ("Йод", "йод"),
        ("한국", "한국"),
    ],
)
def test_normalize_name(raw, normalized):
    assert normalize_name(raw) == normalized


class TestRecords:
    pytestmark = embedded

    def test_spellings_of_one_product_are_one_record_with_their_files(self, core_user):
        first = product_record(core_user=core_user, name="Roundup PowerMAX ", core_file_id=F1)
        second = product_record(core_user=core_user, name="roundup powermax", core_file_id=str(F2))
        again = product_record(core_user=core_user, name="ROUNDUP  POWERMAX®", core_file_id=F2)
        assert first == second == again
        assert first.name == "Roundup PowerMAX" and first.normalized_name == "roundup powermax"
        assert set(ProductFile.objects.values_list("core_file_id", flat=True)) == {F1, F2}

    def test_records_belong_to_one_core_user(self, core_user):
        sibling = CoreUserFactory(owner=core_user.owner)
        assert product_record(core_user=core_user, name="Atrazine") != product_record(
            core_user=sibling, name="atrazine"
        )

    def test_a_name_without_letters_or_digits_is_refused(self, core_user):
        with pytest.raises(CatalogNameEmpty):
            product_record(core_user=core_user, name=" ** ")
        with pytest.raises(CatalogNameEmpty):
            variety_record(core_user=core_user, name="")

    def test_latin_accents_and_case_fold_other_scripts_marks_do_not(self, api_client, core_user):
        """NFKD with every combining mark dropped made "ガス" and "カス" one product (`カス`), "किट" and "कीट" another
        (`क ट`: a vowel sign is no `\\w`), and a search found each under the other's name."""
        for name in ("ガス", "カス", "किट", "कीट", "Säure", "SAURE", "saure"):
            product_record(core_user=core_user, name=name, core_file_id=uuid.uuid4())
        # (compared unordered: PostgreSQL sorts other scripts by its collation)
        assert sorted(names(api_client.get(products_url(core_user)))) == ["Säure", "किट", "कीट", "カス", "ガス"]
        summary = api_client.get(f"{BASE}/users/products").json()
        assert sorted(summary, key=lambda row: row["normalizedName"]) == [
            {"normalizedName": "saure", "fileCount": 3},
            {"normalizedName": "किट", "fileCount": 1},
            {"normalizedName": "कीट", "fileCount": 1},
            {"normalizedName": "カス", "fileCount": 1},
            {"normalizedName": "ガス", "fileCount": 1},
        ]
        for term in ("ガス", "カス", "किट", "कीट"):
            assert names(api_client.get(products_url(core_user, "search"), {"search": term})) == [term]

    def test_varieties_collect_their_crops(self, core_user):
        variety = variety_record(core_user=core_user, name="P1197AM", crop="Corn", core_file_id=F1)
        assert variety_record(core_user=core_user, name="p1197am ", crop="corn", core_file_id=F2) == variety
        assert set(variety.files.values_list("crop", flat=True)) == {"corn"}


@pytest.fixture
def catalog(core_user):
    """Products and varieties of `core_user`, and one shared product name with a sibling core user."""
    product_record(core_user=core_user, name="Roundup PowerMAX", core_file_id=F1)
    product_record(core_user=core_user, name="roundup powermax", core_file_id=F2)
    product_record(core_user=core_user, name="Atrazine 4L", core_file_id=F2)
    product_record(core_user=core_user, name="Liberty 280", core_file_id=F3)
    product_record(core_user=core_user, name="Power Boost")
    sibling = CoreUserFactory(owner=core_user.owner)
    product_record(core_user=sibling, name="ROUNDUP POWERMAX", core_file_id=uuid.uuid4())
    variety_record(core_user=core_user, name="P1197AM", crop="corn", core_file_id=F1)
    variety_record(core_user=core_user, name="AG36X6", crop="soybeans", core_file_id=F2)
    variety_record(core_user=core_user, name="AG36X6", crop="Soybeans", core_file_id=F3)
    variety_record(core_user=core_user, name="WB4303", crop="wheat", core_file_id=F3)
    variety_record(core_user=sibling, name="p1197am", crop="corn", core_file_id=uuid.uuid4())
    return sibling


def names(response, key="name") -> list[str]:
    assert response.status_code == 200, response.content
    return [item[key] for item in response.json()]


class TestProductEndpoints:
    pytestmark = embedded

    def test_a_product_record_has_its_files(self, api_client, core_user, catalog):
        [record] = api_client.get(products_url(core_user), {"name": "roundup"}).json()
        assert record["name"] == "Roundup PowerMAX" and record["normalizedName"] == "roundup powermax"
        assert record["coreUserId"] == str(core_user.id)
        assert record["files"] == sorted([str(F1), str(F2)])
        assert record["createdTime"].endswith("Z") and record["updatedTime"].endswith("Z")

    @pytest.mark.parametrize(
        "params, expected",
        [
            ({}, ["Atrazine 4L", "Liberty 280", "Power Boost", "Roundup PowerMAX"]),
            ({"name": "POWER"}, ["Power Boost", "Roundup PowerMAX"]),
            ({"name": "roundup-powermax"}, ["Roundup PowerMAX"]),
            ({"name": "nothing"}, []),
            ({"name": "®!-"}, []),  # nothing left to compare: matches no name (it matched every one)
            ({"sort": "name,desc"}, ["Roundup PowerMAX", "Power Boost", "Liberty 280", "Atrazine 4L"]),
            ({"sort": "normalizedName"}, ["Atrazine 4L", "Liberty 280", "Power Boost", "Roundup PowerMAX"]),
            ({"size": 2, "page": 1}, ["Power Boost", "Roundup PowerMAX"]),
        ],
    )
    def test_list_filters_sorts_and_pages(self, api_client, core_user, catalog, params, expected):
        assert names(api_client.get(products_url(core_user), params)) == expected

    @pytest.mark.parametrize("prop", ["id", "coreUserId", "name", "normalizedName", "createdTime", "updatedTime"])
    def test_every_record_sort_value_is_accepted(self, api_client, core_user, catalog, prop):
        assert len(names(api_client.get(products_url(core_user), {"sort": f"{prop},desc"}))) == 4

    def test_list_headers_and_bad_parameters(self, api_client, core_user, catalog):
        response = api_client.get(products_url(core_user), {"size": 500})
        assert response["X-Total-Count"] == "4" and len(response.json()) == 4
        assert_problem(api_client.get(products_url(core_user), {"sort": "fileCount"}), 400, "validation")
        assert_problem(api_client.get(products_url(core_user), {"page": "x"}), 400, "validation")

    def test_owner_wide_products_are_unique_normalized_names_with_file_counts(self, api_client, core_user, catalog):
        response = api_client.get(f"{BASE}/users/products")
        assert response.status_code == 200 and response["X-Total-Count"] == "4"
        assert response.json() == [
            {"normalizedName": "atrazine 4l", "fileCount": 1},
            {"normalizedName": "liberty 280", "fileCount": 1},
            {"normalizedName": "power boost", "fileCount": 0},
            {"normalizedName": "roundup powermax", "fileCount": 3},
        ]

    @pytest.mark.parametrize(
        "params, expected",
        [
            ({"normalizedName": "ROUND"}, ["roundup powermax"]),
            ({"normalizedName": "power"}, ["power boost", "roundup powermax"]),
            ({"coreFileId": str(F2)}, ["atrazine 4l", "roundup powermax"]),
            ({"coreFileId": str(uuid.uuid4())}, []),
            ({"sort": "fileCount,desc"}, ["roundup powermax", "atrazine 4l", "liberty 280", "power boost"]),
            ({"sort": "normalizedName,desc", "size": 1}, ["roundup powermax"]),
        ],
    )
    def test_owner_wide_product_filters(self, api_client, core_user, catalog, params, expected):
        assert names(api_client.get(f"{BASE}/users/products", params), "normalizedName") == expected

    def test_owner_wide_bad_parameters_and_isolation(self, api_client, other_client, core_user, catalog):
        assert_problem(api_client.get(f"{BASE}/users/products", {"coreFileId": "f1"}), 400, "validation")
        assert_problem(api_client.get(f"{BASE}/users/products", {"sort": "name"}), 400, "validation")
        assert other_client.get(f"{BASE}/users/products").json() == []
        assert other_client.get(f"{BASE}/users/varieties").json() == []

    def test_owner_wide_counts_are_of_the_owners_files_only(self, api_client, other_owner, core_user, catalog):
        """Another owner's products and varieties of the same names are theirs: neither their files nor their
        number show in this owner's summaries."""
        stranger = CoreUserFactory(owner=other_owner)
        for _ in range(3):
            product_record(core_user=stranger, name="Roundup PowerMAX", core_file_id=uuid.uuid4())
            variety_record(core_user=stranger, name="P1197AM", crop="corn", core_file_id=uuid.uuid4())
        products = api_client.get(f"{BASE}/users/products", {"normalizedName": "roundup"}).json()
        assert [(p["normalizedName"], p["fileCount"]) for p in products] == [("roundup powermax", 3)]
        varieties = {v["normalizedName"]: v["fileCount"] for v in api_client.get(f"{BASE}/users/varieties").json()}
        assert varieties["p1197am"] == 2  # this core user's file and its sibling's

    @pytest.mark.parametrize(
        "params, expected",
        [
            ({"search": "power"}, ["Power Boost", "Roundup PowerMAX"]),
            ({"search": " !!! "}, []),
            ({"search": "r"}, ["Roundup PowerMAX", "Atrazine 4L", "Liberty 280", "Power Boost"]),
            ({"search": "r", "maxResults": "2"}, ["Roundup PowerMAX", "Atrazine 4L"]),
            ({"search": "r", "coreFileId": str(F2)}, ["Roundup PowerMAX", "Atrazine 4L"]),
            ({"maxResults": "20"}, ["Atrazine 4L", "Liberty 280", "Power Boost", "Roundup PowerMAX"]),
        ],
    )
    def test_search(self, api_client, core_user, catalog, params, expected):
        assert names(api_client.get(products_url(core_user, "search"), params)) == expected
        # The `/beta/products/search` spelling: the same search with the core user in the query.
        alias = api_client.get(f"{BASE}/products/search", {**params, "coreUserId": str(core_user.id)})
        assert names(alias) == expected

    def test_search_reads_only_the_products_it_answers(self, api_client, core_user):
        """Every match was read with all its file links, then sorted and cut in Python (1.3 s for 10,000)."""
        for index in range(30):
            product_record(core_user=core_user, name=f"Mix {index:02d} rare", core_file_id=F1)
        product_record(core_user=core_user, name="Rare Earth", core_file_id=F2)
        with CaptureQueriesContext(connection) as queries:
            found = names(api_client.get(products_url(core_user, "search"), {"search": "rare", "maxResults": "2"}))
        assert found == ["Rare Earth", "Mix 00 rare"]
        table = connection.ops.quote_name(ProductFile._meta.db_table)
        links = [q["sql"] for q in queries.captured_queries if f"FROM {table}" in q["sql"]]
        wanted = set(Product.objects.filter(name__in=found).values_list("pk", flat=True))
        named = {p.pk for p in Product.objects.all() if any(str(p.pk) in sql or p.pk.hex in sql for sql in links)}
        assert len(links) == 1 and named == wanted

    @pytest.mark.parametrize("params", [{"maxResults": m} for m in ("21", "0", "x", "1_0", "\u0663", "2.0")])
    def test_search_max_results_is_at_most_20(self, api_client, core_user, catalog, params):
        problem = assert_problem(api_client.get(products_url(core_user, "search"), params), 400, "validation")
        assert problem["fieldErrors"][0]["field"] == "maxResults"

    def test_every_error_of_a_query_is_answered_at_once(self, api_client, core_user, catalog):
        search = assert_problem(
            api_client.get(products_url(core_user, "search"), {"coreFileId": "x", "maxResults": "0"}), 400
        )
        assert sorted(e["field"] for e in search["fieldErrors"]) == ["coreFileId", "maxResults"]
        summary = assert_problem(
            api_client.get(f"{BASE}/users/products", {"coreFileId": "f1", "sort": "name", "page": "-1"}), 400
        )
        assert sorted(e["field"] for e in summary["fieldErrors"]) == ["coreFileId", "page", "sort"]

    def test_search_bad_file_and_alias_without_user(self, api_client, core_user, catalog):
        assert_problem(api_client.get(products_url(core_user, "search"), {"coreFileId": "x"}), 400, "validation")
        assert_problem(api_client.get(f"{BASE}/products/search"), 400, "validation")

    def test_alias_core_user_that_is_no_uuid_is_a_400_as_in_filters(self, api_client, core_user, catalog):
        """Worded as the `coreUserId` filter of every list words it (it was a 404, as for a path it is not)."""
        problem = assert_problem(api_client.get(f"{BASE}/products/search", {"coreUserId": "bad"}), 400, "validation")
        assert problem["fieldErrors"] == [{"field": "coreUserId", "message": "Must be a UUID."}]
        listed = assert_problem(api_client.get("/services/fields/api/fields", {"coreUserId": "bad"}), 400)
        assert listed["fieldErrors"] == problem["fieldErrors"]
        unknown = {"coreUserId": "6f1c5f4e-1111-4111-8111-111111111111"}
        assert_problem(api_client.get(f"{BASE}/products/search", unknown), 404, "notFound")
        # With the query's other errors, in one 400, as the path's search answers them
        query = {"coreUserId": "bad", "maxResults": "0", "coreFileId": "x"}
        together = assert_problem(api_client.get(f"{BASE}/products/search", query), 400, "validation")
        assert sorted(e["field"] for e in together["fieldErrors"]) == ["coreFileId", "coreUserId", "maxResults"]
        alone = assert_problem(api_client.get(f"{BASE}/products/search", {"maxResults": "0"}), 400, "validation")
        assert sorted(e["field"] for e in alone["fieldErrors"]) == ["coreUserId", "maxResults"]

    def test_alias_core_user_in_any_spelling_of_a_uuid_as_the_lists_filter_reads_it(
        self, api_client, core_user, catalog
    ):
        """`{...}`, `urn:uuid:`, 32 hex digits, upper case, spaces around: the lists' `coreUserId` filter reads them
        all as the core user, and the alias answered 404 for the owner's own core user."""
        expected = names(api_client.get(products_url(core_user, "search"), {"search": "r"}))
        for spelling in (f"{{{core_user.id}}}", f"urn:uuid:{core_user.id}", core_user.id.hex, str(core_user.id).upper(),
                         f" {core_user.id} "):  # fmt: skip
            found = api_client.get(f"{BASE}/products/search", {"search": "r", "coreUserId": spelling})
            assert names(found) == expected, (spelling, found.json())

    def test_a_method_a_route_has_not_is_405_whatever_the_core_user(self, api_client, other_client, core_user):
        """It was a 400 about the missing `coreUserId` (or a 404 for another owner's) before the method was looked at;
        OPTIONS describes the route."""
        for url in (f"{BASE}/products/search", products_url(core_user, "search")):
            for client in (api_client, other_client):
                assert_problem(client.post(url), 405, "methodNotAllowed")
                assert_problem(client.delete(url), 405, "methodNotAllowed")
        assert api_client.options(f"{BASE}/products/search").status_code == 200

    def test_another_owner_gets_404(self, api_client, other_client, core_user, catalog):
        product_id = Product.objects.filter(core_user=core_user).first().id
        for url in (
            products_url(core_user),
            products_url(core_user, "search"),
            f"{BASE}/users/{core_user.id}/varieties",
        ):
            assert_cross_tenant_404(
                owner_client=api_client,
                other_client=other_client,
                detail_url=url,
                resource_id=product_id,
                delete=False,
                core_user=core_user,
            )
        assert_problem(other_client.get(f"{BASE}/products/search", {"coreUserId": str(core_user.id)}), 404, "notFound")


class TestVarietyEndpoints:
    pytestmark = embedded

    def url(self, core_user):
        return f"{BASE}/users/{core_user.id}/varieties"

    def test_a_variety_has_its_crops_and_files(self, api_client, core_user, catalog):
        [record] = api_client.get(self.url(core_user), {"name": "ag36"}).json()
        assert record["name"] == "AG36X6" and record["crops"] == ["soybeans"]
        assert record["files"] == sorted([str(F2), str(F3)]) and record["coreUserId"] == str(core_user.id)

    @pytest.mark.parametrize(
        "params, expected",
        [
            ({}, ["AG36X6", "P1197AM", "WB4303"]),
            ({"name": "p11"}, ["P1197AM"]),
            ({"crops": "Corn"}, ["P1197AM"]),
            ({"crops": "corn,wheat"}, ["P1197AM", "WB4303"]),
            ({"crops": "rice"}, []),
            ({"name": "a", "crops": "soybeans"}, ["AG36X6"]),
            ({"sort": "name,desc", "size": 2}, ["WB4303", "P1197AM"]),
        ],
    )
    def test_filters_sorts_and_pages(self, api_client, core_user, catalog, params, expected):
        assert names(api_client.get(self.url(core_user), params)) == expected

    def test_bad_sort_is_400(self, api_client, core_user, catalog):
        assert_problem(api_client.get(self.url(core_user), {"sort": "crops"}), 400, "validation")

    def test_a_crop_name_longer_than_is_kept_finds_its_varieties(self, api_client, core_user):
        """A crop's name is kept to its first 100 characters; the filter compared the whole name with them."""
        crop = "Winter wheat " + "x" * 120
        variety_record(core_user=core_user, name="Long One", crop=crop, core_file_id=uuid.uuid4())
        [record] = api_client.get(self.url(core_user), {"crops": crop.upper()}).json()
        assert record["name"] == "Long One" and record["crops"] == [crop.lower()[:100]]
        assert names(api_client.get(self.url(core_user), {"crops": "winter wheat"})) == []
        # A name cut on a space is kept, and found, as shown: without the space
        variety_record(core_user=core_user, name="Spaced", crop="a" * 99 + " b", core_file_id=uuid.uuid4())
        [spaced] = api_client.get(self.url(core_user), {"name": "spaced"}).json()
        assert spaced["crops"] == ["a" * 99]
        assert names(api_client.get(self.url(core_user), {"crops": spaced["crops"][0]})) == ["Spaced"]

    def test_owner_wide_varieties_with_file_counts_and_crops(self, api_client, core_user, catalog):
        assert api_client.get(f"{BASE}/users/varieties").json() == [
            {"normalizedName": "ag36x6", "fileCount": 2, "crops": ["soybeans"]},
            {"normalizedName": "p1197am", "fileCount": 2, "crops": ["corn"]},
            {"normalizedName": "wb4303", "fileCount": 1, "crops": ["wheat"]},
        ]
        got = api_client.get(f"{BASE}/users/varieties", {"sort": "fileCount,asc"}).json()
        assert [v["normalizedName"] for v in got] == ["wb4303", "ag36x6", "p1197am"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_records_never_duplicate(core_user):
    if connection.vendor != "postgresql":
        pytest.skip("concurrency is proven on PostgreSQL")
    spellings = ["Roundup PowerMAX", "roundup powermax ", "ROUNDUP-POWERMAX"]
    products = run_in_threads(
        8, lambda i: product_record(core_user=core_user, name=spellings[i % 3], core_file_id=uuid.uuid4()).id
    )
    varieties = run_in_threads(
        8, lambda i: variety_record(core_user=core_user, name="P1197AM", crop="corn", core_file_id=F1).id
    )
    assert len(set(products)) == 1 and Product.objects.count() == 1 and ProductFile.objects.count() == 8
    assert len(set(varieties)) == 1 and Variety.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.embedded
def test_long_names_that_differ_past_the_cut_stay_two_products(core_user):
    """Both were cut at 255 characters: two tank mixes became one product, the second name lost."""
    from catalogs.services import product_record

    mix = "Roundup PowerMAX 3 + Atrazine 4L + " * 8
    first = product_record(core_user=core_user, name=mix + "Liberty 280 SL", core_file_id=uuid.uuid4())
    second = product_record(core_user=core_user, name=mix + "Dual II Magnum", core_file_id=uuid.uuid4())
    assert first != second
    assert len(first.name) <= 255 and first.name.startswith(mix[:200])
    assert product_record(core_user=core_user, name=mix + "Liberty 280 SL") == first
