"""The README gallery: every ``ctxlab figures`` figure rendered afresh, shrunk, and noted in its manifest.

    python site/thumbnails.py [--only NAME ...] [--gallery gallery]

Each figure is rendered (quick profile, on the CPU) in a process of its own, so that the manifest
records exactly the ctxlab modules that made it (:mod:`ctxlab.gallery`); ``tests/test_figures.py``
then tells a thumbnail whose code has changed since. Takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

from ctxlab.figures import select
from ctxlab.gallery import MANIFEST, file_sha, fingerprint, maker_source

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 360  # pixels: four to a row in the README
RENDER_ONE = """
import json, sys
from ctxlab.figures import render_figures
from ctxlab.gallery import imported_modules
render_figures(sys.argv[1], profile="quick", device="cpu", only=[sys.argv[2]], report=lambda line: None)
print(json.dumps(imported_modules(sys.modules, sys.argv[3])))
"""


def render(name: str, out: Path) -> list[str]:
    """Render one figure into ``out`` in a fresh process; the ctxlab modules it imported."""
    env = {**os.environ, "CI": "true", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    done = subprocess.run([sys.executable, "-c", RENDER_ONE, str(out), name, str(ROOT)], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def thumbnail(png: Path, target: Path) -> None:
    image = Image.open(png).convert("RGB")
    image.thumbnail((WIDTH, WIDTH * image.height // image.width))
    image.quantize(colors=64).save(target, optimize=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="these figures (or lessons) only; the others keep their entries")
    parser.add_argument("--gallery", type=Path, default=ROOT / "gallery", help="where the thumbnails go")
    args = parser.parse_args(argv)
    entries = select(args.only)
    args.gallery.mkdir(exist_ok=True)
    manifest_path = args.gallery / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    with tempfile.TemporaryDirectory() as out:
        for i, entry in enumerate(entries, 1):
            print(f"[{i}/{len(entries)}] {entry.name} ...", flush=True)
            modules = render(entry.name, Path(out))
            target = args.gallery / f"{entry.name}.png"
            thumbnail(Path(out) / f"{entry.name}.png", target)
            manifest[entry.name] = {"code": fingerprint(modules, ROOT, maker_source(entry)), "modules": modules,
                                    "numbers": file_sha(Path(out) / f"{entry.name}.json"), "thumbnail": file_sha(target)}
            manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    print(f"{len(entries)} thumbnails and {manifest_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
