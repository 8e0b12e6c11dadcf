"""Conversion throughput on the real samples, and the memory of a streamed upload. Prints figures only.

Run: `make bench BENCH=conversion` (SAMPLES_DIR overrides the samples folder, REPEAT the ISOXML scale-up,
UPLOAD_MB the size of the generated upload, default 1024).

- The shapefile reader on 200,000 polygons (a yield export as cells), each measured on the ellipsoid.
- Reader alone, each stage, and the whole file pipeline (read, derive, clean, summary, units, the points file,
  standardGeojson and rawGeojson written to disk) for ISOXML binary time logs and for the JD harvest shapefile.
- The peak resident memory of the ISOXML whole file pipeline, over the process's before it, against the log's size.
- Peak resident memory of a process that receives a generated zip upload of 64 MB and of UPLOAD_MB through
  Django's multipart parser with our streaming `ZipUploadHandler`: it must not grow with the file.

The ISOXML figure uses the CCI ValidTimeLogs binaries (all 21 logs share one header) concatenated and repeated in
a temporary task until there are at least a million records, then read by the full ISOXML reader.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from conversion import pointstore, standardize  # noqa: E402
from conversion.archive import detect, safe_extract  # noqa: E402
from conversion.readers import Dataset, get_reader  # noqa: E402
from conversion.readers.isoxml import IsoxmlReader  # noqa: E402
from conversion.readers.isoxml.tlg import find_records, parse_header  # noqa: E402

SAMPLES = Path(os.environ.get("SAMPLES_DIR", REPO.parent / "shared" / "samples"))
VALID = SAMPLES / "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
JD_HARVEST = SAMPLES / "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip"
TARGET_RECORDS = 1_000_000
POLYGONS = 200_000
WGS84_PRJ = (
    'GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],'
    'PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]'
)


def best_of(fn, runs: int = 3) -> tuple[float, object]:
    """Fastest wall time of `runs` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def build_big_task(folder: Path) -> tuple[Path, int]:
    """A one-task TASKDATA whose single TLG is every ValidTimeLogs binary, repeated to >= 1M records."""
    logs = sorted(VALID.glob("TLG*.bin"))
    blob = b"".join(p.read_bytes() for p in logs)
    header = parse_header(VALID / "TLG00001.xml")
    records = len(find_records(blob, header.record_fixed_size)[0])
    repeat = int(os.environ.get("REPEAT", 0)) or -(-TARGET_RECORDS // records)
    (folder / "TLG00001.bin").write_bytes(blob * repeat)
    (folder / "TLG00001.xml").write_bytes((VALID / "TLG00001.xml").read_bytes())
    root = ElementTree.parse(VALID / "TASKDATA.XML").getroot()
    for task in root.findall("TSK")[1:]:
        root.remove(task)
    task = root.find("TSK")
    for tlg in task.findall("TLG"):
        task.remove(tlg)
    ElementTree.SubElement(task, "TLG", A="TLG00001", C="1")
    ElementTree.ElementTree(root).write(folder / "TASKDATA.XML", encoding="utf-8", xml_declaration=True)
    return folder / "TASKDATA.XML", records * repeat


def main() -> None:
    """Print points per second for each stage."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        taskdata, n_records = build_big_task(tmp_path)
        dataset = Dataset("ISOXML", taskdata, tmp_path, "bench")
        data = (tmp_path / "TLG00001.bin").read_bytes()
        fixed = parse_header(tmp_path / "TLG00001.xml").record_fixed_size
        t_scan, _ = best_of(lambda: find_records(data, fixed))
        print(f"ISOXML time log: {n_records:,} records, {len(data) / 1e6:.1f} MB")
        print(f"  record scan only          {t_scan:7.3f} s  {n_records / t_scan / 1e6:6.2f} M records/s")
        for label, reader in (
            ("reader, no raw columns", IsoxmlReader(include_raw=False)),
            ("reader, with raw columns", IsoxmlReader(include_raw=True)),
        ):
            seconds, tables = best_of(lambda r=reader: r.read(dataset))
            points = sum(len(t) for t in tables)
            print(f"  {label:25s} {seconds:7.3f} s  {points / seconds / 1e6:6.2f} M points/s ({points:,} points)")
        table = tables[0]

        seconds, derived = best_of(lambda: standardize.derive(table))
        print(f"standardize.derive          {seconds:7.3f} s  {len(table) / seconds / 1e6:6.2f} M points/s")
        seconds, result = best_of(lambda: standardize.clean(derived))
        print(f"standardize.clean           {seconds:7.3f} s  {len(table) / seconds / 1e6:6.2f} M points/s")
        cleaned = result.table
        seconds, _ = best_of(lambda: standardize.summary(cleaned))
        print(
            f"standardize.summary         {seconds:7.3f} s  {len(cleaned) / seconds / 1e6:6.2f} M points/s "
            f"({len(cleaned):,} cleaned points, coverage included)"
        )
        seconds, _ = best_of(lambda: standardize.write_standard_geojson(cleaned, io.StringIO()), runs=1)
        print(f"write_standard_geojson      {seconds:7.3f} s  {len(cleaned) / seconds / 1e6:6.2f} M points/s")

        shp_dir = tmp_path / "jd"
        safe_extract(JD_HARVEST, shp_dir)
        [shp] = detect(shp_dir).datasets
        seconds, shp_tables = best_of(lambda: get_reader("SHAPEFILE").read(shp), runs=5)
        n = len(shp_tables[0])
        print(f"JD harvest shapefile reader {seconds:7.3f} s  {n / seconds / 1e6:6.2f} M points/s ({n:,} points)")
        seconds, _ = best_of(lambda: standardize.summary(standardize.clean(standardize.derive(shp_tables[0])).table))
        print(f"  derive+clean+summary      {seconds:7.3f} s  {n / seconds / 1e6:6.2f} M points/s")
        seconds, n = best_of(lambda: whole_pipeline("SHAPEFILE", shp, tmp_path), runs=3)
        print(f"  whole file pipeline       {seconds:7.3f} s  {n / seconds / 1e6:6.2f} M points/s (read to outputs)")
        seconds, n = best_of(lambda: whole_pipeline("ISOXML", dataset, tmp_path), runs=1)
        print(f"ISOXML whole file pipeline  {seconds:7.3f} s  {n / seconds / 1e6:6.2f} M points/s (read to outputs)")
        peak = pipeline_memory(tmp_path)
        print(f"  its peak memory           {peak / 1e6:7.0f} MB over the process's, {peak / len(data):.1f}x the log")
        polygons = write_polygon_shapefile(tmp_path / "polygons")
        seconds, tables = best_of(lambda: get_reader("SHAPEFILE").read(polygons), runs=3)
        n = len(tables[0])
        print(f"polygon shapefile reader    {seconds:7.3f} s  {n / seconds / 1e6:6.2f} M points/s ({n:,} polygons)")
    upload_memory()


def write_polygon_shapefile(folder: Path, count: int = POLYGONS) -> Dataset:
    """A yield export as polygons: `count` cells of 1.5 x 1 m in rows, each with a yield, in WGS84."""
    import shapefile

    folder.mkdir()
    writer = shapefile.Writer(str(folder / "Yield"), shapeType=shapefile.POLYGON)
    writer.field("VRYIELDVOL", "N", size=12, decimal=3)
    width, height = 1.5 / 73_000, 1 / 111_000  # (degrees near 49 N)
    for i in range(count):
        x, y = -96.0 + (i % 1000) * width, 49.0 + (i // 1000) * height
        writer.poly([[(x, y), (x, y + height), (x + width, y + height), (x + width, y), (x, y)]])
        writer.record(150 + i % 50)
    writer.close()
    (folder / "Yield.prj").write_text(WGS84_PRJ)
    [dataset] = detect(folder).datasets
    return dataset


def whole_pipeline(fmt: str, dataset: Dataset, out: Path) -> int:
    """What a file task does between the reader and the database: every output written to disk."""
    points = 0
    for table in get_reader(fmt).read(dataset):
        with open(out / "raw.npz", "wb") as fh:
            pointstore.table_save(table, fh)
        cleaned, _ = standardize.standardize(table)
        with open(out / "raw.geojson", "wb") as fh:
            standardize.write_raw_geojson(table, fh)
        with open(out / "points.npz", "wb") as fh:
            pointstore.table_save(cleaned, fh, include_raw=False)
        with open(out / "standard.geojson", "wb") as fh:
            standardize.write_standard_geojson(cleaned, fh)
        standardize.summary(cleaned)
        standardize.units(cleaned)
        points += len(table)
    return points


def pipeline_memory(folder: Path) -> int:
    """How far the resident memory's peak rose over the resident memory of a fresh process (its imports done) while
    it ran the ISOXML whole file pipeline on the task data in `folder`, bytes. (In this process, memory that earlier
    stages freed but the allocator kept would be counted as the process's.)"""
    import subprocess

    out = subprocess.run(
        [sys.executable, __file__, "--pipeline-memory", str(folder)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


def _pipeline_memory_child(folder: Path) -> None:
    from _django import own_status_kib

    dataset = Dataset("ISOXML", folder / "TASKDATA.XML", folder, "bench")
    before = own_status_kib("VmRSS")
    whole_pipeline("ISOXML", dataset, folder)
    print((own_status_kib("VmHWM") - before) * 1024)


def upload_memory() -> None:
    """Peak RSS of a process receiving a small and a large generated upload (kB as Linux reports it)."""
    import subprocess

    big = int(os.environ.get("UPLOAD_MB", "1024"))
    with tempfile.TemporaryDirectory() as media:
        env = os.environ | {"MEDIA_ROOT": media, "CONVERSION_UPLOAD_MAX_BYTES": str(4 * 1024**3)}
        for mb in (64, big):
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, str(REPO / "bench" / "_upload_child.py"), str(mb * 1024 * 1024)],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            seconds = time.perf_counter() - started
            size, before, after = (int(v) for v in out[-3:])
            print(
                f"upload {mb:5d} MB streamed to disk: peak RSS {after / 1024:6.1f} MB "
                f"(after Django setup {before / 1024:6.1f} MB), {size / seconds / 1e6:6.0f} MB/s"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pipeline-memory"]:
        _pipeline_memory_child(Path(sys.argv[2]))
    else:
        main()
