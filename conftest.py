"""Root conftest: loads the notebook-budget plugin for every pytest run in the repository, so
`pytest --nbval-lax lessons` reports wall time and peak memory per notebook; and, for parallel runs
(`pytest -n 2 --dist loadgroup --no-loadscope-reorder tests lessons`, as `make test` runs them):

- keeps each notebook's cells on one worker, in order, and the tests of a file that share a module-
  or session-scoped fixture on one worker, so that no expensive fixture is built twice;
- starts the long work first (notebooks, tests marked ``slow`` or ``install``, then the groups of
  tests that share a fixture), so that the many short unit tests fill both workers at the end
  instead of one long notebook or group running alone."""

import os

import pytest

from ctxlab.env import JITTER_VARIABLE

pytest_plugins = ["ctxlab.course.budget"]
LONG = ("slow", "install")
# `make test` jitters the initial weights of the lessons' runs: their checked outputs must survive it.
# It names the jitter seed in CTXLAB_LESSON_JITTER, which only this hook reads: the notebooks'
# kernels get it as CTXLAB_INIT_JITTER (ctxlab.env.init_jitter); the unit tests pin exact numbers
# and their fixtures, of any scope, are built without it, as a user's code runs.
LESSON_JITTER = "CTXLAB_LESSON_JITTER"


@pytest.hookimpl(tryfirst=True)  # before the item's parents are set up: an nbval kernel starts there
def pytest_runtest_setup(item):
    from ctxlab.course.budget import notebook_of

    jitter = os.environ.get(LESSON_JITTER)
    if jitter and notebook_of(item) is not None:
        os.environ[JITTER_VARIABLE] = jitter
    elif jitter:
        os.environ.pop(JITTER_VARIABLE, None)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items):
    from ctxlab.course.budget import notebook_of  # imported here: pytest loads the plugin (assert rewriting)

    for item in items:
        notebook = notebook_of(item)
        info = getattr(item, "_fixtureinfo", None)
        defs = [d for ds in (info.name2fixturedefs.values() if info else []) for d in ds]
        if notebook is not None:
            item.add_marker(pytest.mark.xdist_group(notebook))
        elif item.get_closest_marker("xdist_group"):  # a group the test names itself (e.g. "site") stays whole
            continue
        elif any(d.scope in ("module", "session") and d.baseid for d in defs):  # baseid "": pytest's own
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    def start(item) -> int:  # 0: notebooks and long tests, 1: other groups (run serially), 2: the rest
        if notebook_of(item) or any(item.get_closest_marker(m) for m in LONG):
            return 0
        return 1 if item.get_closest_marker("xdist_group") else 2

    items.sort(key=start)  # stable: a notebook's cells keep their order


class GroupIds:
    """pytest-xdist (3.8) tells its scheduler an item's group by appending ``@group`` to
    ``item._nodeid``, which pytest 9 no longer reads (a node keeps its id in ``item._id``): without
    this, ``--dist loadgroup`` silently spreads a notebook's cells and a shared fixture's tests over
    both workers. Runs after xdist's hook and renames only the items it left unnamed."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):  # set in xdist workers under --dist loadgroup
            return
        for item in items:
            groups = sorted({str(m.args[0]) for m in item.iter_markers("xdist_group")})
            if groups and "@" not in item.nodeid and hasattr(item, "_id"):
                item._id = type(item._id).parse(f"{item.nodeid}@{'_'.join(groups)}")


def pytest_configure(config):
    config.pluginmanager.register(GroupIds(), "ctxlab-xdist-group-ids")
