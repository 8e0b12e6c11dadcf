from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversion", "0008_file_warnings"),
    ]

    operations = [
        migrations.AddField(
            model_name="batchdataset",
            name="task_retries",
            field=models.PositiveIntegerField(default=0),
        ),
    ]
