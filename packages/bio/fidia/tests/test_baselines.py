"""The baseline objectives and the tuned base sampler."""

import pytest
import torch

from icml26.fidia.baselines import grpo_weights, rloo_weights, tune_temperatures
from icml26.fidia.estimators import maxn_weights


def test_rloo_is_max_at_one_times_n_and_grpo_is_centred_and_scaled():
    r = torch.randn(4, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rloo_weights(r), maxn_weights(r, 1) * 7)
    g = grpo_weights(r)
    torch.testing.assert_close(g.mean(-1), torch.zeros(4, dtype=torch.float64))
    torch.testing.assert_close(g.std(-1), r.std(-1) / (r.std(-1) + 1e-4))


def test_tuned_temperature_takes_the_best_per_metric_and_breaks_ties_by_reward():
    scores = {0.1: {"a": 1.0, "b": 0.0, "reward": 0.0}, 0.5: {"a": 1.0, "b": 2.0, "reward": 3.0}}
    chosen, table = tune_temperatures(lambda T: T, scores.__getitem__, (0.1, 0.5), ("a", "b"))
    assert chosen == {"a": 0.5, "b": 0.5} and table == scores


@pytest.mark.parametrize(
    "call",
    [
        lambda: rloo_weights(torch.ones(1)),
        lambda: grpo_weights(torch.tensor([1.0, float("nan")])),
        lambda: grpo_weights(torch.ones(3), eps=0.0),
        lambda: tune_temperatures(lambda T: T, lambda s: {}, (), ("a",)),
    ],
)
def test_bad_inputs_are_named(call):
    with pytest.raises(ValueError, match=r"rewards|eps|temperatures"):
        call()
