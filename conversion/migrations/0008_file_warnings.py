from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversion", "0007_file_imperial_units"),
    ]

    operations = [
        migrations.AddField(
            model_name="file",
            name="warnings",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
