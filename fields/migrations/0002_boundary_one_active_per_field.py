"""At most one ACTIVE boundary per field, as a database constraint.

Concurrent boundary changes could leave several ACTIVE boundaries of one field before the field row was locked
(services.history.field_lock). Before the constraint is added, the ACTIVE boundaries of such a field that are not
its current one (`Field.boundary`, set by the last change) become INACTIVE, as that change would have made them."""

from django.db import migrations, models


def deactivate_extra_active_boundaries(apps, schema_editor):
    Boundary = apps.get_model("fields", "Boundary")
    Field = apps.get_model("fields", "Field")
    crowded = (
        Boundary.objects.filter(status="ACTIVE")
        .values("field_id")
        .annotate(count=models.Count("id"))
        .filter(count__gt=1)
        .values_list("field_id", flat=True)
    )
    for field in Field.objects.filter(pk__in=list(crowded)):
        extra = Boundary.objects.filter(field=field, status="ACTIVE").exclude(pk=field.boundary_id)
        extra.update(status="INACTIVE")


class Migration(migrations.Migration):
    dependencies = [
        ("fields", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(deactivate_extra_active_boundaries, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="boundary",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "ACTIVE")), fields=("field",), name="boundary_one_active_per_field"
            ),
        ),
    ]
