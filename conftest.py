"""Root conftest: loads the notebook-budget plugin for every pytest run in the repository,
so `pytest --nbval-lax lessons solutions` reports wall time and peak memory per notebook."""

pytest_plugins = ["ctxlab.course.budget"]
