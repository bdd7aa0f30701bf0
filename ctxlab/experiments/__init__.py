"""The experiments the lessons and the ``ctxlab`` command share, one module each: the headline
staircase, the small GPT on real text, the γ × learning-rate phase map, the which mode on a whether sub-level (where the forecast misses), and what their commands
share when they write outputs. Everything public is re-exported here (``ctxlab.experiments.staircase``).
The attention experiment is :mod:`ctxlab.attention_exp`."""

from ctxlab.experiments.gpt import (LM_PROFILES, NGRAM_ORDERS, LMResult, TextData, language_model,
                                    lm_settings, recorded_lm_run, shuffled_alignment_band, text_data,
                                    write_checkpoints)
from ctxlab.experiments.outputs import check_before_training, report_divergence, save_outputs, strict_json
from ctxlab.experiments.phase_map import PHASE_MAP_PROFILES, PhaseMap, phase_map, phase_map_one_by_one
from ctxlab.experiments.staircase import (HEADLINE_TASK, STAIRCASE_PROFILES, StaircaseResult, default_lr, level_names,
                                          staircase)
from ctxlab.experiments.sub_level_growth import SubLevelGrowth, sub_level_growth
from ctxlab.experiments.prediction import (compare, measured, predict_command, prediction_json, task_options,
                                           training_steps)

__all__ = [
    "HEADLINE_TASK", "LM_PROFILES", "NGRAM_ORDERS", "PHASE_MAP_PROFILES", "STAIRCASE_PROFILES", "LMResult",
    "PhaseMap", "StaircaseResult", "TextData", "check_before_training", "default_lr", "language_model", "level_names", "lm_settings",
    "phase_map", "phase_map_one_by_one", "recorded_lm_run", "report_divergence",
    "save_outputs", "shuffled_alignment_band", "staircase", "strict_json", "text_data", "write_checkpoints",
    "SubLevelGrowth", "sub_level_growth", "compare", "measured", "predict_command", "prediction_json", "task_options", "training_steps",
]
