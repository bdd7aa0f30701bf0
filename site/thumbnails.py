"""Small copies of ``ctxlab figures``' PNGs for the README: ``python site/thumbnails.py FIGS [gallery]``."""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

WIDTH = 360  # pixels: four to a row in the README


def main(source: str, target: str = "gallery") -> int:
    pngs = sorted(p for p in Path(source).glob("*.png"))
    if not pngs:
        raise SystemExit(f"thumbnails: no PNG in {source}; run `ctxlab figures --out {source}` first")
    Path(target).mkdir(exist_ok=True)
    for png in pngs:
        image = Image.open(png).convert("RGB")
        image.thumbnail((WIDTH, WIDTH * image.height // image.width))
        image.quantize(colors=64).save(Path(target) / png.name, optimize=True)
        print(f"{Path(target) / png.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
