"""The network side runs where the network lives; the searches stay host-side."""

import json

import numpy as np
import torch

from icml26.rerooter import (
    BootstrapConfig,
    ConvNetConfig,
    NetEvaluator,
    SlidingTile,
    TwoHeadedConvNet,
    bootstrap_train,
)

TILE_NET = ConvNetConfig(
    in_channels=9, height=3, width=3, num_actions=4, channels=8, blocks=1, hidden=32
)


def _problems(steps: list[int], seed: int = 0) -> list[SlidingTile]:
    rng = np.random.default_rng(seed)
    return [SlidingTile.random_walk(3, n, rng) for n in steps]


def _net(device) -> TwoHeadedConvNet:
    torch.manual_seed(0)
    return TwoHeadedConvNet(TILE_NET).to(device)


def test_net_evaluator_follows_the_network_to_its_device(device):
    env = _problems([8])[0]
    states = [env.initial_state()] * 3
    net = _net(device)
    logits, h = net(torch.randn(2, 9, 3, 3, device=device))
    assert logits.device == h.device == next(net.parameters()).device
    log_pi, h_np = NetEvaluator(net)(env, states)
    assert isinstance(log_pi, np.ndarray) and log_pi.shape == (3, 4) and h_np.shape == (3,)
    want_pi, want_h = NetEvaluator(_net("cpu"))(env, states)
    np.testing.assert_allclose(log_pi, want_pi, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_np, want_h, rtol=1e-5, atol=1e-6)


def test_bootstrap_trains_and_resumes_on_the_networks_device(device, tmp_path):
    problems = _problems([3, 3, 20, 20], seed=1)  # some solved at once, some left for the resume
    cfg = dict(method="sqrt_lts_h", initial_budget=300, train_steps=5, minibatch=16)
    net = _net(device)
    hist = bootstrap_train(
        problems, net, BootstrapConfig(iterations=1, **cfg), checkpoint_dir=tmp_path, progress=False
    )
    assert hist.num_solved >= 1 and hist.rows[0]["loss"] is not None
    assert next(net.parameters()).device.type == torch.device(device).type
    resumed = TwoHeadedConvNet.from_pretrained(tmp_path).to(device)
    bootstrap_train(
        problems,
        resumed,
        BootstrapConfig(iterations=2, **cfg),
        checkpoint_dir=tmp_path,
        resume=True,
        progress=False,
    )
    state = json.loads((tmp_path / "bootstrap_state.json").read_text())
    assert state["history"]["iteration"] == 2
    assert next(resumed.parameters()).device.type == torch.device(device).type
