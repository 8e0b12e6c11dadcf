"""Summaries stored before the summary's `machinery` entries were spelt as the API (`serial_number` became
`serialNumber`) are rewritten the same way."""

from django.db import migrations


def _camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def machinery_keys_camel_case(apps, schema_editor):
    File = apps.get_model("conversion", "File")
    changed = []
    # Only the rows that hold the old key are read (the database finds them; a summary may be large).
    stale = File.objects.filter(summary__properties__machinery__icontains="serial_number")
    for file in stale.only("pk", "summary").iterator(chunk_size=500):
        machinery = ((file.summary or {}).get("properties") or {}).get("machinery") or []
        if not any("_" in key for entry in machinery for key in entry):
            continue
        file.summary["properties"]["machinery"] = [{_camel_case(k): v for k, v in entry.items()} for entry in machinery]
        changed.append(file)
        if len(changed) == 500:
            File.objects.bulk_update(changed, ["summary"])
            changed = []
    File.objects.bulk_update(changed, ["summary"])


class Migration(migrations.Migration):
    dependencies = [("conversion", "0002_dataset_progress_at")]

    operations = [migrations.RunPython(machinery_keys_camel_case, migrations.RunPython.noop)]
