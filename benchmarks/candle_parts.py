"""A CANDLE render folder as a few compressed parts at the size a study serves, and back.

Renders are large (160x120 PNGs: 538 MB for the 19,440 cube and torus images of render seeds 1-12) and
a device call carries at most 64 MiB, so ``benchmarks/gpu_candle_rotation.sh`` takes them as parts:

    python benchmarks/candle_parts.py pack RENDERS DEST --parts 2   # here: DEST/part-1 ... part-2
    python benchmarks/candle_parts.py unpack DEST/part-1 FOLDER     # there: one call per part

``pack`` reads the folder as the dataset does (:func:`repscope.data.candle.dataset.read_folder`, bilinear
resizing to ``--image-size``) and stores each part's images losslessly (xz with a byte-delta filter over
the pixels) beside its records: each render's JSON with its bounding box rescaled to the stored size.
``unpack`` writes them as a CANDLE folder of ``SIZExSIZE`` PNGs under the same relative paths, so the
dataset reads back the same images in the same order (the same train / test split) without resizing
them again. ``unpack`` needs numpy and Pillow alone (no repscope).
"""

from __future__ import annotations

import argparse
import io
import json
import lzma
import shutil
import sys
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

# a byte delta over the three channels of neighbouring pixels, then LZMA2: the 19,440 images at 64x64
# (239 MB raw) packed into 69.5 MiB; xz without the delta, tried on a tenth of them, extrapolated to 89
FILTERS = [{"id": lzma.FILTER_DELTA, "dist": 3}, {"id": lzma.FILTER_LZMA2, "preset": 9}]


def pack(renders: Path, dest: Path, parts: int, image_size: int) -> list[Path]:
    """Write ``dest/part-K`` (K = 1..parts), each a share of the folder's images in sorted file order."""
    from repscope.data.candle.dataset import folder_records, image_of, read_folder  # noqa: PLC0415

    taken = [dest / f"part-{k}" for k in range(1, parts + 1) if (dest / f"part-{k}").exists()]
    if taken:
        raise SystemExit(f"{taken[0]}: exists; pack into another folder (nothing was written)")
    files = folder_records(renders)["files"]
    images = read_folder(renders, image_size)["image"]  # the rows of `files`, (N, 3, S, S)
    written = []
    for k, rows in enumerate(np.array_split(np.arange(len(files)), parts), start=1):
        # written under a hidden name and renamed when whole: a stopped pack leaves no part that looks done
        folder = dest / f".part-{k}.partial"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        pixels = np.ascontiguousarray(images[rows].transpose(0, 2, 3, 1))  # (n, S, S, 3): the delta runs along RGB
        (folder / "images.xz").write_bytes(lzma.compress(pixels.tobytes(), format=lzma.FORMAT_XZ, filters=FILTERS))
        with tarfile.open(folder / "records.tar.xz", "w:xz") as tar:
            for row in rows:
                record = json.loads(files[row].read_text())
                image = Image.open(image_of(files[row]))
                scale = np.array([image_size / image.width, image_size / image.height])
                for entry in record["objects"].values():
                    entry["bounds"] = (np.asarray(entry["bounds"], float) * scale).round(4).tolist()
                data = json.dumps(record, indent=1).encode()
                info = tarfile.TarInfo(str(files[row].relative_to(renders)))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        (folder / "part.json").write_text(json.dumps({"images": len(rows), "image_size": image_size}))
        written.append(folder.rename(dest / f"part-{k}"))
    return written


def unpack(part: Path, out: Path) -> int:
    """Write one part's renders under ``out``; the number of images written."""
    meta = json.loads((part / "part.json").read_text())
    size = int(meta["image_size"])
    pixels = np.frombuffer(lzma.decompress((part / "images.xz").read_bytes()), np.uint8)
    pixels = pixels.reshape(int(meta["images"]), size, size, 3)
    with tarfile.open(part / "records.tar.xz") as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        if len(members) != len(pixels):
            raise SystemExit(f"{part}: {len(members)} records for {len(pixels)} images")
        for member, image in zip(members, pixels):
            path = out / member.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
            Image.fromarray(image).save(path.with_suffix(".png"), compress_level=1)
    return len(pixels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("pack", help="a render folder -> DEST/part-1 ... part-N")
    packing.add_argument("renders", type=Path)
    packing.add_argument("dest", type=Path)
    packing.add_argument("--parts", type=int, default=2)
    packing.add_argument("--image-size", type=int, default=64)
    unpacking = verbs.add_parser("unpack", help="one part -> a CANDLE folder of PNGs at the stored size")
    unpacking.add_argument("part", type=Path)
    unpacking.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("candle_parts: interrupted (only whole parts are named part-K)", file=sys.stderr)
        return 130


def run(args: argparse.Namespace) -> int:
    """Carry out the parsed command."""
    if args.verb == "pack":
        for folder in pack(args.renders, args.dest, args.parts, args.image_size):
            size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
            images = json.loads((folder / "part.json").read_text())["images"]
            print(f"{folder}: {images} images, {size:.1f} MiB")
    else:
        print(f"{args.part} -> {args.out}: {unpack(args.part, args.out)} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
