"""Synthetic sequence tasks with exact populations (every input with its probability and label
distribution), one family per module: :mod:`~ctxlab.tasks.hierarchy` (the staircase's tasks),
:mod:`~ctxlab.tasks.attention` and :mod:`~ctxlab.tasks.composition`; :mod:`~ctxlab.tasks.core` holds
:class:`Task`. Everything is re-exported here, with :class:`~ctxlab.dataset.Dataset`, the data a task
makes, and :func:`make_task`, which builds one by name."""

from ctxlab.dataset import Dataset
from ctxlab.tasks.attention import partner_task, pointer_task
from ctxlab.tasks.composition import anchor_composition_task
from ctxlab.tasks.core import Task, all_sequences
from ctxlab.tasks.hierarchy import (hierarchy_task, modes_task, transfer_task, with_token_frequencies, xor_task,
                                   zipf)

TASKS = {"hierarchy": hierarchy_task, "xor": xor_task, "modes": modes_task, "partner": partner_task,
         "anchor_composition": anchor_composition_task, "transfer": transfer_task, "pointer": pointer_task}


def make_task(name: str, **kwargs) -> Task:
    """Build a task by name (one of ``TASKS``)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name](**kwargs)


__all__ = ["TASKS", "Dataset", "Task", "all_sequences", "anchor_composition_task", "hierarchy_task", "make_task",
           "modes_task", "partner_task", "pointer_task", "transfer_task", "with_token_frequencies", "xor_task", "zipf"]
