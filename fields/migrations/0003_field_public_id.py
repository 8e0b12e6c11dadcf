"""A field's API id (`public_id`) apart from its primary key, unique per core user: a client id was unique across the
platform, so one API owner's field "1" refused another owner's (a 409 that told it the id was taken elsewhere).
Existing fields keep their id as both."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("fields", "0002_boundary_one_active_per_field"),
    ]

    operations = [
        migrations.AddField(
            model_name="field",
            name="public_id",
            field=models.CharField(default="", max_length=255),
            preserve_default=False,
        ),
        migrations.RunSQL("UPDATE fields_field SET public_id = id", migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="field",
            constraint=models.UniqueConstraint(
                fields=("public_id", "core_user"), name="field_public_id_unique_per_core_user"
            ),
        ),
    ]
