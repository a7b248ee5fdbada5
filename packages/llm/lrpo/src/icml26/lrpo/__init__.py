"""icml26-lrpo: LRPO, language-routed policy optimisation (Guo, Wakaki, Mitsufuji, Ritter, Xu;
"Learning to Route Languages for Multilingual Policy Optimization", ICML 2026, arXiv 2605.25360).

LRPO treats the response language as a variable of online RL: each training question gets a GRPO
group whose first ``orig_min`` rollouts answer in the question's language and whose others answer
in languages chosen by a bandit router; the reward gates on language ID and scores a similarity
to the reference answer calibrated per language pair.

Implemented from the authors' code (their verl fork), where the paper's text was not available:
the router's rule and schedules (:class:`LanguageRouter`), the group construction
(:func:`multilingual_group`), plain GRPO advantages over the multilingual group
(:func:`grpo_advantages`), the gate and pair calibration (:func:`calibrated_reward`), verl's
``low_var_kl`` KL term. Reconstructed because nothing can be downloaded: language ID is
``langid`` instead of fastText, the similarity is :class:`AnswerSimilarity` instead of mmBERT
embeddings, and the policy is a character GPT on a multilingual arithmetic task instead of an
instruction-tuned LLM on mGSM-style data.
"""

from icml26.lrpo.baselines import (
    EXP3Router,
    FixedRouter,
    OriginalRouter,
    UCBRouter,
    UniformRouter,
    make_router,
)
from icml26.lrpo.data import (
    LANGUAGES,
    TOPICS,
    Question,
    answer_text,
    heldout_questions,
    make_question,
    split_items,
)
from icml26.lrpo.group import grpo_advantages, multilingual_group, route_rows
from icml26.lrpo.policy import CharGPT, GPTConfig
from icml26.lrpo.reward import (
    AnswerSimilarity,
    LangID,
    PairCalibration,
    RewardOutput,
    calibrated_reward,
    trl_reward_function,
)
from icml26.lrpo.router import LanguageRouter, RouterSchedule
from icml26.lrpo.train import (
    GRPOConfig,
    GRPOResult,
    PretrainConfig,
    evaluate,
    low_var_kl,
    pretrain,
    train_grpo,
)

__all__ = [
    "LANGUAGES",
    "TOPICS",
    "AnswerSimilarity",
    "CharGPT",
    "EXP3Router",
    "FixedRouter",
    "GPTConfig",
    "GRPOConfig",
    "GRPOResult",
    "LangID",
    "LanguageRouter",
    "OriginalRouter",
    "PairCalibration",
    "PretrainConfig",
    "Question",
    "RewardOutput",
    "RouterSchedule",
    "UCBRouter",
    "UniformRouter",
    "answer_text",
    "calibrated_reward",
    "evaluate",
    "grpo_advantages",
    "heldout_questions",
    "low_var_kl",
    "make_question",
    "make_router",
    "multilingual_group",
    "pretrain",
    "route_rows",
    "split_items",
    "train_grpo",
    "trl_reward_function",
]
