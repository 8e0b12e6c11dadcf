"""What a browser posts back from a Django admin page, and what a page costs."""


def form_data(response) -> dict:
    """What a browser would post back for the change form of `response`, unchanged: the main form's and the
    inline formsets' values plus their management forms."""
    data = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({f"{formset.prefix}-{key}": value for key, value in formset.management_form.initial.items()})
        forms.extend(formset.forms)
    for form in forms:
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            if value is None or field.disabled:
                continue
            data[form.add_prefix(name)] = getattr(value, "pk", value)
    return data


def page_queries(client, url) -> int:
    """How many queries the admin page at `url` takes (asked once before, so that what Django reads once per process,
    content types and the like, is not counted)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)
