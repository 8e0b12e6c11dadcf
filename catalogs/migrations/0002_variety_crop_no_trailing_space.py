"""A variety's crop was cut to 100 characters after its spacing was collapsed, so a cut could end on a space: the
name then shown could not be found by the `crops` filter, which strips its values. Such crops lose the space (a
link that would then repeat another of the same variety, file and crop goes)."""

from django.db import migrations


def strip_cut_crops(apps, schema_editor):
    VarietyFile = apps.get_model("catalogs", "VarietyFile")
    for link in VarietyFile.objects.filter(crop__endswith=" "):
        crop = link.crop.rstrip()
        if VarietyFile.objects.filter(variety_id=link.variety_id, core_file_id=link.core_file_id, crop=crop).exists():
            link.delete()
        else:
            VarietyFile.objects.filter(pk=link.pk).update(crop=crop)


class Migration(migrations.Migration):
    dependencies = [
        ("catalogs", "0001_initial"),
    ]

    operations = [migrations.RunPython(strip_cut_crops, migrations.RunPython.noop)]
