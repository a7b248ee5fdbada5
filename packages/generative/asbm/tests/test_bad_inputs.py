"""Bad input at ASBM's public entry points ends in a named error, not a silent run."""

import pytest
import torch

from icml26.asbm import ASBM
from icml26.asbm.sde import BrownianSDE, GaussianEnergy
from icml26.testing import assert_rejects


def _asbm(**kw):
    return ASBM((2,), BrownianSDE(0.5), GaussianEnergy(1.0), hidden=16, **kw)


@pytest.mark.parametrize("sim_steps", [0, -3, 2.5, True])
def test_sim_steps_must_be_a_positive_integer(sim_steps):
    assert_rejects(lambda: _asbm(sim_steps=sim_steps), ["sim_steps", ">= 1"])


@pytest.mark.parametrize(
    "stage, kwargs, name",
    [
        ("fit_forward", {"buffer_size": 0}, "buffer_size"),
        ("fit_forward", {"batch_size": 0}, "batch_size"),
        ("fit_forward", {"corrector_buffer": 0}, "corrector_buffer"),
        ("fit_backward", {"steps": 0}, "steps"),
        ("fit_backward", {"buffer_size": 0}, "buffer_size"),
        ("fit_backward", {"resimulate_every": 0}, "resimulate_every"),
    ],
)
def test_training_sizes_must_be_positive(stage, kwargs, name):
    model = _asbm(sim_steps=4)
    data = torch.randn(32, 2)
    assert_rejects(lambda: getattr(model, stage)(data, **kwargs, progress=False), [name])


from icml26.asbm import mmd, ot_pairing, sb_pairing, sliced_w2  # noqa: E402

X = torch.randn(10, 2)


@pytest.mark.parametrize(
    "y, name",
    [
        (torch.randn(12, 3), "share the sample shape"),
        (torch.full((10, 2), float("nan")), "y holds NaN"),
        (torch.randn(1, 2), "y must hold >= 2"),
        (torch.zeros(10, 2, dtype=torch.long), "y must hold >= 2 float"),
    ],
)
def test_metrics_name_bad_sample_sets(y, name):
    assert_rejects(lambda: mmd(X, y), name)
    assert_rejects(lambda: sliced_w2(X, y), name)


def test_pairings_name_bad_minibatches():
    assert_rejects(lambda: ot_pairing(X, torch.randn(10, 3)), "x0 and x1")
    assert_rejects(lambda: ot_pairing(X, torch.randn(8, 2)), "as many samples")
    assert_rejects(lambda: sb_pairing(X, X, 0.0, torch.Generator()), "sigma")


from icml26.asbm import (  # noqa: E402
    MLP,
    FlowMatching,
    Reflow,
    ReplayBuffer,
    TinyUNet,
    adjoint_matching_loss,
    bridge_matching_loss,
    bridge_score_loss,
    corrector_matching_loss,
    frechet_distance,
    sb_path,
    straightness,
)
from icml26.asbm.baselines import score_matching  # noqa: E402
from icml26.asbm.controls import independent_coupling_control  # noqa: E402
from icml26.asbm.metrics import FeatureNet, prior_match  # noqa: E402

E, S = GaussianEnergy(1.0), BrownianSDE(0.5)
T = torch.rand(10)


@pytest.mark.parametrize(
    ("make", "names"),
    [
        (lambda: FlowMatching((0,), E), "shape"),
        (lambda: FlowMatching("ab", E), "shape"),
        (lambda: FlowMatching((2,), "gaussian"), ["energy", "GaussianEnergy"]),
        (lambda: FlowMatching((2,), E, hidden=0), "hidden"),
        (lambda: FlowMatching((2,), E, sigma=float("nan")), "sigma"),
        (lambda: Reflow((2,), E, n_pairs=2.5), "n_pairs"),
        (lambda: Reflow((2,), E, teacher_steps=0), "teacher_steps"),
        (lambda: TinyUNet(width=4), ["width", "multiple of 8"]),
        (lambda: TinyUNet(channels=0), "channels"),
        (lambda: MLP((2,), 8, t_dim=1), "t_dim"),
    ],
)
def test_baselines_and_networks_name_bad_settings(make, names):
    assert_rejects(make, names)


def test_baseline_training_and_sampling_name_bad_sizes():
    fm = FlowMatching((2,), E, hidden=8)
    assert_rejects(lambda: fm.fit(X, steps=0, progress=False), "steps")
    assert_rejects(lambda: fm.fit(X, steps=1, batch_size=0, progress=False), "batch_size")
    assert_rejects(lambda: fm.fit(X, steps=1, lr=-1.0, progress=False), "lr")
    assert_rejects(lambda: fm.sample(0), "n")
    assert_rejects(lambda: fm.sample(), "n")
    assert_rejects(lambda: fm.sample(x1=torch.randn(3, 5)), "x1")
    reflow = Reflow((2,), E, hidden=8, n_pairs=4)
    assert_rejects(lambda: reflow.fit(X, steps=2, first_steps=5, progress=False), "first_steps")


def test_replay_buffer_and_unet_name_what_does_not_fit():
    buffer = ReplayBuffer()
    assert_rejects(lambda: buffer.sample(4, torch.Generator()), ["empty", "fill"])
    assert_rejects(lambda: buffer.fill(torch.randn(4, 2), torch.randn(3, 2)), ["x0", "x1"])
    assert_rejects(lambda: buffer.fill([1.0], [2.0]), "x0")
    buffer.fill(X, X)
    assert_rejects(lambda: buffer.sample(0, torch.Generator()), "batch")
    unet = TinyUNet(width=8)
    assert_rejects(lambda: unet(torch.rand(2), torch.randn(2, 1, 7, 7)), "even")
    assert_rejects(lambda: unet(torch.rand(2), torch.randn(2, 3, 8, 8)), "x")
    assert_rejects(lambda: unet(torch.rand(2), torch.randn(2, 8)), "x")


def test_losses_name_mismatched_endpoints_times_and_outputs():
    u, h, b = MLP((2,), 8), MLP((2,), 8, time=False), MLP((2,), 8, out_mult=2)
    assert_rejects(lambda: adjoint_matching_loss(u, h, S, E, X, X[:4], T), ["x0", "x1"])
    assert_rejects(lambda: adjoint_matching_loss(u, h, S, E, X, X, T[:3]), "t")
    assert_rejects(lambda: adjoint_matching_loss(u, h, "sde", E, X, X, T), "sde")
    assert_rejects(lambda: corrector_matching_loss(h, S, X, X[:, :1]), "x1")
    assert_rejects(lambda: bridge_matching_loss(u, S, X, X, T), ["net", "out_mult"])
    assert_rejects(lambda: bridge_matching_loss(b, S, X, X, T[:, None]), "t")
    assert_rejects(lambda: bridge_score_loss(b, S, X, X, T), ["net", "out_mult=1"])
    assert_rejects(lambda: bridge_score_loss(u, S, X, X[:4], T), ["x0", "x1"])
    assert_rejects(lambda: bridge_score_loss(u, "sde", X, X, T), "sde")


def test_stage2_choices_name_what_is_allowed():
    assert_rejects(lambda: ASBM((2,), S, E, stage2="eps"), ["stage2", "score"])
    assert_rejects(lambda: ASBM((2,), S, E, ema=1.0), "ema")
    assert_rejects(lambda: FlowMatching((2,), E, ema=-0.1), "ema")
    model = ASBM((2,), S, E, hidden=8)
    assert_rejects(lambda: model.sample(4, 2, method="sde"), ["method", "em", "heun"])
    assert_rejects(lambda: model.predict(T, X), "stage2='posterior'")
    assert_rejects(lambda: model.fit_backward(X, steps=1, coupling="ot"), "coupling")
    assert_rejects(lambda: model.fit_forward(X, 1, 1, 1, check_size=-1), "check_size")
    assert_rejects(lambda: score_matching((2,), E, beta_max=0.05), "beta_max")
    assert_rejects(lambda: prior_match(X, scale=-1.0), "scale")
    assert_rejects(lambda: independent_coupling_control(toy="spirals"), "toy")
    assert_rejects(lambda: independent_coupling_control(nfe=(0,)), "nfe")


def test_path_and_distance_metrics_name_bad_inputs():
    assert_rejects(lambda: sb_path(X, X[:4], T, X, 0.5), "x1")
    assert_rejects(lambda: sb_path(X, X, torch.zeros(10), X, 0.5), ["t", "(0, 1)"])
    assert_rejects(lambda: sb_path(X, X, T, X, -1.0), "sigma")
    assert_rejects(lambda: sb_path(X, X, T, X[:, :1], 0.5), "eps")
    assert_rejects(lambda: straightness([X]), "trajectory")
    assert_rejects(lambda: straightness([X, X[:4]]), "shape")
    assert_rejects(lambda: straightness([X, X * float("nan")]), "NaN")
    assert_rejects(lambda: frechet_distance("net", X, X), "FeatureNet")
    assert_rejects(lambda: frechet_distance(FeatureNet(3, 2), X, X), "net")


@pytest.mark.parametrize(
    ("field", "value"),
    [("sigma", 0.0), ("prior_scale", -1.0), ("hidden", 0), ("unet_width", 12), ("seeds", ())],
)
def test_demo_config_names_the_one_bad_field(field, value):
    from icml26.asbm.study import DemoConfig, _check

    err = assert_rejects(lambda: _check(DemoConfig(**{field: value})), field)
    others = {"sigma", "prior_scale", "hidden", "unet_width"} - {field}
    assert not any(f"{o} must" in str(err) for o in others), err


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors  # noqa: E402

DRAWS = settings(max_examples=30, deadline=None)


@DRAWS
@given(x=bad_tensors((None, 2)))
def test_every_training_entry_point_refuses_bad_data(x):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows: each trainer
    names ``data`` before any work starts."""
    model = _asbm(sim_steps=2)
    sizes = {"batch_size": 2, "progress": False}
    assert_rejects(lambda: model.fit_forward(x, rounds=1, adjoint_steps=1, **sizes), "data")
    assert_rejects(lambda: model.fit_backward(x, steps=1, **sizes), "data")
    fm = FlowMatching((2,), E, hidden=8)
    assert_rejects(lambda: fm.fit(x, 1, batch_size=2, progress=False), "data")


@DRAWS
@given(y=bad_tensors((None, 2)))
def test_sample_metrics_refuse_bad_sample_sets(y):
    for metric in (mmd, sliced_w2):
        assert_rejects(lambda metric=metric: metric(X, y), ["y"])
