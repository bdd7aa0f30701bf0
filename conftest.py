"""Root conftest: loads the notebook-budget plugin for every pytest run in the repository, so
`pytest --nbval-lax lessons` reports wall time and peak memory per notebook; and, for parallel runs
(`pytest -n 2 --dist loadgroup`), keeps the tests of a file that shares a module- or session-scoped
fixture on one worker, so that no expensive fixture is built twice."""

import pytest

pytest_plugins = ["ctxlab.course.budget"]


def pytest_collection_modifyitems(items):
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = [d for ds in (info.name2fixturedefs.values() if info else []) for d in ds]
        if any(d.scope in ("module", "session") and d.baseid for d in defs):  # baseid "": pytest's own
            item.add_marker(pytest.mark.xdist_group(item.path.name))
