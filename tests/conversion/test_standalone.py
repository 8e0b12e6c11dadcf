"""The file-conversion core (readers, standardisation, images, crop, points files) runs without a Django project:
`make bench` and any tool that converts files outside the service import it so."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.embedded

REPO = Path(__file__).resolve().parents[2]


def test_the_conversion_core_imports_and_reads_without_django_settings(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    script = (
        "import shapefile\n"
        "from conversion import standardize\n"
        "from conversion.crop import table_crop\n"
        "from conversion.images import render_property_images\n"
        "from conversion.pointstore import table_load, table_save\n"
        "from conversion.readers import Dataset, get_reader\n"
        "from pathlib import Path\n"
        f"path = Path({str(tmp_path / 'poly.shp')!r})\n"
        "with shapefile.Writer(str(path), shapeType=shapefile.POLYGON) as w:\n"
        "    w.field('AppliedRate', 'N', 10, 2)\n"
        "    w.poly([[(-93.0, 41.0), (-93.0, 41.001), (-92.999, 41.001), (-92.999, 41.0), (-93.0, 41.0)]])\n"
        "    w.record(20.0)\n"
        "[table] = get_reader('SHAPEFILE').read(Dataset('SHAPEFILE', path, path.parent, 'poly'))\n"
        "print(round(float(table.columns['area'][0])))\n"
        "import sys; print('django.apps' in sys.modules and __import__('django.apps').apps.ready)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    area, apps_ready = result.stdout.split()
    assert 8_000 < int(area) < 9_500  # 0.001 deg x 0.001 deg at 41 N: about 111 m x 84 m
    assert apps_ready == "False"
