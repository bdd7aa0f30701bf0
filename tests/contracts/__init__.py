"""Grading contracts, one module per lesson: ``CONTRACT`` lists each check with a reference answer
and at least three plausible wrong ones. ``test_grading_contract.py`` collects every module here."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Contract:
    check: Callable[[Callable], None]
    reference: Callable
    wrong: dict[str, Callable]
    hints: dict[str, str] = field(default_factory=dict)  # wrong answer -> words its hint must contain


def all_contracts() -> list[Contract]:
    """Every ``CONTRACT`` row of every ``contract_NN`` module, in lesson order."""
    rows = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("contract_"):
            rows += importlib.import_module(f"{__name__}.{info.name}").CONTRACT
    return rows
