"""How well an embedding lines up with a signature, and what its geometry says (re-exported here:
``ctxlab.align.cka``): :mod:`~ctxlab.align.metrics` (CKA, RSA, subspace shares, ridge R², permutation
baselines, trajectories), :mod:`~ctxlab.align.projections` (PCA, the noise sweep) and
:mod:`~ctxlab.align.neighbours` (neighbours, signature classes, class collapse)."""

from ctxlab.align.metrics import (
    METRICS,
    align_trajectory,
    as_matrix,
    cka,
    cka_shuffle_range,
    metric,
    order_shares,
    permutation_baseline,
    ridge_r2,
    role_norms,
    row_cosines,
    rsa,
    signature_rank,
    subspace_fraction,
    token_index,
)
from ctxlab.align.neighbours import (
    ClassCollapse,
    at_matched_loss,
    class_collapse,
    class_cosines,
    hierarchy_class_groups,
    nearest,
    neighbour_overlap,
    overlap_chance,
    overlap_trajectory,
    signature_classes,
)
from ctxlab.align.projections import NoiseSweep, noise_sweep, pca_2d

__all__ = [
    "METRICS",
    "ClassCollapse",
    "NoiseSweep",
    "align_trajectory",
    "as_matrix",
    "at_matched_loss",
    "cka",
    "cka_shuffle_range",
    "class_collapse",
    "class_cosines",
    "hierarchy_class_groups",
    "metric",
    "nearest",
    "neighbour_overlap",
    "noise_sweep",
    "order_shares",
    "overlap_chance",
    "overlap_trajectory",
    "pca_2d",
    "permutation_baseline",
    "ridge_r2",
    "role_norms",
    "row_cosines",
    "rsa",
    "signature_classes",
    "signature_rank",
    "subspace_fraction",
    "token_index",
]
