"""Live dashboards: pure ``compute_*`` / ``draw_*`` functions plus builders that wire ipywidgets.

Each builder trains (or loads from the cache) one batched sweep, then its sliders only index it
and redraw inline in an ``Output`` (the Colab path: no ipympl). Display the returned object::

    from ctxlab.widgets import staircase_explorer
    staircase_explorer()
"""

from ctxlab.widgets.attention import (
    AttentionSettings,
    AttentionSweep,
    attention_explorer,
    attention_explorer_for,
    attention_sweep,
    compute_attention_sweep,
    draw_attention,
    sweep_from_experiment,
)
from ctxlab.widgets.signatures import (
    SignatureSettings,
    SignatureView,
    compute_signature,
    draw_signature,
    signature_explorer,
    signature_view,
)
from ctxlab.widgets.staircase import draw_staircase, staircase_explorer
from ctxlab.widgets.staircase_sweep import (
    StaircaseSweep,
    SweepSettings,
    compute_sweep,
    staircase_sweep,
    sweep_from_result,
    sweep_settings,
)

__all__ = [
    "AttentionSettings", "AttentionSweep", "attention_explorer", "attention_explorer_for", "attention_sweep",
    "compute_attention_sweep", "draw_attention", "sweep_from_experiment", "SignatureSettings", "SignatureView", "compute_signature", "draw_signature",
    "signature_explorer", "signature_view", "StaircaseSweep", "SweepSettings", "compute_sweep", "draw_staircase",
    "staircase_explorer", "staircase_sweep", "sweep_from_result",
    "sweep_settings",
]
