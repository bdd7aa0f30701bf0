"""ctxlab: a hands-on course on the Context Staircase.

Token embeddings trained from small initialization first align with the simplest data
statistic (a token's label distribution) and then, stair by stair, with statistics that
involve more and more context tokens. This package holds everything the lessons need:
tasks, probability signatures, small-init models, batched training, alignment metrics,
gradient-flow theory, plots, widgets and exercise checks.

Submodules are imported on demand (``import ctxlab.tasks``), so ``import ctxlab`` is cheap.
"""

__version__ = "0.1.0"
