"""Where the course lives: its repository on disk (the folder with pyproject.toml and lessons/), its
address on GitHub for the Colab and Binder links, and the kernel its notebooks name. The course
pipeline and the explorers both read it; it depends on nothing else in ctxlab."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

LESSONS = "lessons"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


@dataclass(frozen=True)
class Config:
    """Where the course lives on GitHub: the one place badges and the setup cell read from."""

    repository: str
    branch: str
    colab_ref: str

    def colab_url(self, path: str) -> str:
        return f"https://colab.research.google.com/github/{self.repository}/blob/{self.branch}/{path}"

    def binder_url(self, path: str) -> str:
        return f"https://mybinder.org/v2/gh/{self.repository}/{self.branch}?labpath={path}"


def load_config(root: Path) -> Config:
    """Read ``[tool.ctxlab]`` from ``root/pyproject.toml``."""
    with open(root / "pyproject.toml", "rb") as f:
        table = tomllib.load(f).get("tool", {}).get("ctxlab", {})
    missing = [k for k in ("repository", "branch", "colab_ref") if k not in table]
    if missing:
        raise ValueError(f"pyproject.toml [tool.ctxlab] lacks {missing}; add e.g. colab_ref = \"v0.1.0\"")
    return Config(table["repository"], table["branch"], table["colab_ref"])


def find_root(start: Path | None = None) -> Path:
    """The course repository: the nearest folder upwards with pyproject.toml and lessons/."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / LESSONS).is_dir():
            return folder
    raise FileNotFoundError(f"no course repository (pyproject.toml + lessons/) at or above {here}; cd into it")
