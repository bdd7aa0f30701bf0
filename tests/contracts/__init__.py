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


def _fingerprint(*objects) -> str:
    """A digest of tensors, models, datasets and plain values: equal for equal contents."""
    import hashlib

    import torch

    digest = hashlib.sha256()

    def add(obj):
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().contiguous()
            digest.update(f"T{t.dtype}{tuple(t.shape)}{t.requires_grad}".encode())
            digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(obj, torch.nn.Module):
            digest.update(type(obj).__qualname__.encode())
            for name, t in [*obj.named_parameters(), *obj.named_buffers()]:
                digest.update(name.encode())
                add(t)
                add(dict(vars(t)))  # what a tensor carries beside its values (``update_mask`` of a frozen table)
            add({k: v for k, v in vars(obj).items() if not k.startswith("_") and not isinstance(v, torch.Tensor)})
        elif isinstance(obj, dict):
            for k in sorted(obj, key=str):
                digest.update(repr(k).encode())
                add(obj[k])
        elif hasattr(obj, "__dataclass_fields__"):
            digest.update(type(obj).__qualname__.encode())
            add(vars(obj))
        elif isinstance(obj, (list, tuple)):
            digest.update(b"[")
            for item in obj:
                add(item)
            digest.update(b"]")
        else:
            digest.update(repr(obj).encode())

    for obj in objects:
        add(obj)
    return digest.hexdigest()


_RUNS: dict = {}


def train_once(model, data, steps, *, probes=None, **settings):
    """``ctxlab.train.train``, run once per distinct (initial model, data, steps, settings, probe names).

    A training check's wrong answers differ in how they read a run, not in the run; sharing it keeps
    the contract tests fast. The caller gives a probe a new name whenever it measures something new.
    The model ends trained in place, as ``train`` leaves it."""
    import copy

    from ctxlab.train import train

    key = _fingerprint(model, data, steps, settings, sorted(probes or {}))
    if key not in _RUNS:
        run = train(model, data, steps, probes=probes, **settings)
        _RUNS[key] = (run, copy.deepcopy(model.state_dict()))
    run, final = _RUNS[key]
    model.load_state_dict(final)
    return copy.deepcopy(run)  # a wrong answer that edits its run in place must not change the next one's
