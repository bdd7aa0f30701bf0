"""The update rules both training loops use, with one learning rate per model of an ensemble (torch.optim
takes one per parameter group, and an ensemble's models share every parameter tensor)."""

from __future__ import annotations

import torch
from torch import Tensor


class Optimizer:
    """Plain update rules with a per-model learning rate (torch.optim takes one lr per group)."""

    def __init__(self, name: str, params: list[Tensor], lr: Tensor, momentum: float, weight_decay: float | Tensor,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        """``weight_decay``: one number, or one per model [K] (a sweep over decays as one batched run)."""
        self.name, self.params, self.lr, self.per_model_decay = name, params, lr, isinstance(weight_decay, Tensor)
        self.momentum, self.weight_decay, self.betas, self.eps = momentum, weight_decay, betas, eps
        self.state, self.t = [dict() for _ in params], 0
        self.frozen: Tensor | None = None  # [K] bool: models whose parameters stay as they are

    @torch.no_grad()
    def step(self) -> None:
        """One update of every model; frozen models (diverged ones) keep their parameters."""
        if self.frozen is None:
            return self._update()
        kept = [p[self.frozen].clone() for p in self.params]
        self._update()
        for p, old in zip(self.params, kept):
            p[self.frozen] = old

    def _update(self) -> None:
        self.t += 1
        live = [(p, st) for p, st in zip(self.params, self.state) if p.grad is not None]
        if not live:
            return
        params, grads = [p for p, _ in live], [p.grad for p, _ in live]
        lrs = [self._lr_for(p) for p in params]
        decays = [self.weight_decay.reshape(lr.shape) if self.per_model_decay else self.weight_decay for lr in lrs]
        if self.name == "adam":
            return self._adam(params, grads, [st for _, st in live], lrs, decays)
        for p, g, st, lr, decay in zip(params, grads, [st for _, st in live], lrs, decays):
            g = g + decay * p if self.per_model_decay or self.weight_decay else g
            if self.momentum:
                if "buf" not in st:
                    st["buf"] = torch.zeros_like(p)
                g = st["buf"].mul_(self.momentum).add_(g)
            p.sub_(lr * g)

    def _lr_for(self, p: Tensor) -> Tensor:
        """The per-model learning rate shaped to broadcast over ``p``, 0 where its update mask is."""
        lr = self.lr.reshape(-1, *([1] * (p.ndim - 1)))
        mask = getattr(p, "update_mask", None)  # per-model 0/1 from ctxlab.transplant.freeze_embedding
        return lr if mask is None else lr * mask.to(lr).reshape(lr.shape)

    def _adam(self, params: list[Tensor], grads: list[Tensor], states: list[dict], lrs: list[Tensor], decays: list) -> None:
        """Adam with decoupled decay (AdamW), each stage one foreach call over all parameters (the GPT has
        a dozen small ones: per-tensor calls cost more than their arithmetic); the same operations in the
        same order as one parameter at a time, so the same numbers."""
        b1, b2 = self.betas
        for p, st in zip(params, states):
            if "m" not in st:
                st["m"], st["v"] = torch.zeros_like(p), torch.zeros_like(p)
        m, v = [st["m"] for st in states], [st["v"] for st in states]
        torch._foreach_mul_(m, b1)
        torch._foreach_add_(m, grads, alpha=1 - b1)
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, grads, grads, value=1 - b2)
        m_hat, v_hat = torch._foreach_div(m, 1 - b1**self.t), torch._foreach_div(v, 1 - b2**self.t)
        if self.per_model_decay or self.weight_decay:
            torch._foreach_mul_(params, [1 - lr * decay for lr, decay in zip(lrs, decays)])
        denominators = torch._foreach_add(torch._foreach_sqrt(v_hat), self.eps)
        torch._foreach_sub_(params, torch._foreach_div(torch._foreach_mul(lrs, m_hat), denominators))
