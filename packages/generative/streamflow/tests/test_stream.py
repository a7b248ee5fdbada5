import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler

from icml26.streamflow import (
    BatchedFlowScheduler,
    DiffusersDenoiser,
    StreamPipeline,
    sequential_sample,
    unet,
)
from icml26.testing import assert_close


@pytest.fixture(scope="module")
def denoiser():
    return DiffusersDenoiser(unet("tiny", 8, seed=0))


@pytest.mark.parametrize("N", [1, 2, 4])
@pytest.mark.parametrize("M", [1, 3, 7])
def test_stream_equals_sequential_for_any_N_and_M(denoiser, N, M):
    noise = torch.randn(M, 1, 8, 8, generator=torch.Generator().manual_seed(N * 10 + M))
    seq = torch.cat([sequential_sample(denoiser, noise[i : i + 1], N) for i in range(M)])
    pipe = StreamPipeline(denoiser, (1, 8, 8), N)
    out = pipe.generate(noise)
    assert out.shape == seq.shape
    assert_close(out, seq, atol=1e-5, rtol=0)
    assert pipe.calls == M + N - 1


def test_flush_drains_without_loss_or_duplicates(denoiser):
    N = 4
    pipe = StreamPipeline(denoiser, (1, 8, 8), N)
    noise = torch.randn(6, 1, 8, 8)
    got = [o for z in noise if (o := pipe.push(z)) is not None]
    assert len(got) == 6 - N + 1  # the first output arrives after N calls
    got += pipe.flush()
    assert len(got) == 6 and (pipe.stage < 0).all()
    seq = torch.cat([sequential_sample(denoiser, z[None], N) for z in noise])
    assert_close(torch.stack(got), seq, atol=1e-5, rtol=0)  # order preserved, none lost or repeated
    assert pipe.flush() == []


def test_per_sample_dt_with_heterogeneous_steps():
    s = BatchedFlowScheduler(4)
    x = torch.zeros(3, 1, 2, 2)
    v = torch.ones(3, 1, 2, 2)
    k = torch.tensor([0, 2, 3])
    out = s.step(v, k, x)
    expected = (s.sigmas[k + 1] - s.sigmas[k]).view(3, 1, 1, 1).expand_as(x)
    assert_close(out, expected)
    assert_close(s.timestep(k), s.timesteps[k])


def test_mu_needs_dynamic_shifting():
    with pytest.raises(ValueError, match="use_dynamic_shifting"):
        BatchedFlowScheduler(4, mu=1.0)
    shifted = BatchedFlowScheduler(4, mu=1.0, use_dynamic_shifting=True)
    assert not torch.equal(shifted.sigmas, BatchedFlowScheduler(4).sigmas)
    with pytest.raises(ValueError, match="does not use dynamic shifting"):
        BatchedFlowScheduler.from_diffusers(FlowMatchEulerDiscreteScheduler(), 4, mu=1.0)


def test_scheduler_matches_diffusers_for_homogeneous_steps():
    ref = FlowMatchEulerDiscreteScheduler()
    ref.set_timesteps(5)
    ours = BatchedFlowScheduler(5)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 1, 4, 4, generator=g)
    y = x.clone()
    for i, t in enumerate(ref.timesteps):
        v = torch.randn(x.shape, generator=g)
        x = ref.step(v, t, x, return_dict=False)[0]
        y = ours.step(v, torch.full((2,), i), y)
    assert_close(y, x, atol=1e-6, rtol=1e-6)


def test_classifier_free_guidance_combines_branches():
    class Cond(torch.nn.Module):
        def forward(self, x, t, cond):
            return x * 0 + cond.view(-1, 1, 1, 1)

    N = 3
    pipe = StreamPipeline(Cond(), (1, 2, 2), N, guidance_scale=2.0, uncond=torch.zeros(1))
    out = pipe.generate(torch.zeros(2, 1, 2, 2), conditions=torch.ones(2, 1))
    # v = v_u + 2 (v_c - v_u) = 2; x_0 = x_1 + sum(dt) v = 0 - 1 * 2
    assert_close(out, torch.full((2, 1, 2, 2), -2.0), atol=1e-6, rtol=0)


def test_bad_inputs(denoiser):
    pipe = StreamPipeline(denoiser, (1, 8, 8), 2)
    with pytest.raises(ValueError, match="shape"):
        pipe.push(torch.zeros(1, 4, 4))
    with pytest.raises(ValueError, match="NaN"):
        pipe.push(torch.full((1, 8, 8), float("nan")))
    with pytest.raises(ValueError, match="num_steps"):
        StreamPipeline(denoiser, (1, 8, 8), 0)
    with pytest.raises(ValueError, match="cudagraph"):
        StreamPipeline(denoiser, (1, 8, 8), 2, backend="cudagraph")
    with pytest.raises(ValueError, match="backend"):
        StreamPipeline(denoiser, (1, 8, 8), 2, backend="tensorrt")
    with pytest.raises(ValueError, match="uncond"):
        StreamPipeline(denoiser, (1, 8, 8), 2, guidance_scale=3.0)
    guided = StreamPipeline(denoiser, (1, 8, 8), 2, guidance_scale=3.0, uncond=torch.zeros(1))
    with pytest.raises(ValueError, match="conditional"):
        guided.push(torch.zeros(1, 8, 8))  # guidance without a condition
    with pytest.raises(TypeError, match="floating"):
        pipe.push(torch.zeros(1, 8, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="need noise"):
        pipe.push(None, condition=torch.zeros(1))


def test_vae_decode_is_applied_per_emitted_sample(denoiser):
    pipe = StreamPipeline(denoiser, (1, 8, 8), 2, decode=lambda z: z.repeat(1, 3, 2, 2))
    out = pipe.generate(torch.randn(3, 1, 8, 8))
    assert out.shape == (3, 3, 16, 16)


def test_compile_backend_gives_the_same_outputs(denoiser):
    noise = torch.randn(5, 1, 8, 8)
    eager = StreamPipeline(denoiser, (1, 8, 8), 3).generate(noise)
    pipe = StreamPipeline(denoiser, (1, 8, 8), 3, backend="compile")
    assert_close(pipe.generate(noise), eager, atol=1e-5, rtol=1e-5)
    pipe.reset()  # the compiled graph is reused after a reset: no recompilation
    with torch._dynamo.config.patch(error_on_recompile=True):
        assert_close(pipe.generate(noise), eager, atol=1e-5, rtol=1e-5)


def test_per_sample_dict_conditions_and_reset():
    class Cond(torch.nn.Module):
        def forward(self, x, t, cond):
            return x * 0 + (cond["a"] + cond["b"]).view(-1, 1, 1, 1)

    pipe = StreamPipeline(Cond(), (1, 2, 2), 2, condition={"a": torch.zeros(1), "b": torch.ones(1)})
    conds = {"a": torch.arange(3.0).view(3, 1), "b": torch.zeros(3, 1)}
    out = pipe.generate(torch.zeros(3, 1, 2, 2), conditions=conds)
    # x_0 = x_1 - v (the sigmas run from 1 to 0): each sample moved by its own condition
    assert_close(out.flatten(1)[:, 0], -torch.arange(3.0), atol=1e-6, rtol=0)
    pipe.push(torch.zeros(1, 2, 2))  # the default condition
    pipe.reset()
    assert pipe.flush() == [] and (pipe.stage < 0).all()


def test_timed_arms_run_guidance_and_decode_and_agree():
    """The text-to-image timing: every arm runs classifier-free guidance (a batch of 2B) and
    decodes its images inside the timed region; the stream's images are the loop's."""
    from icml26.streamflow.bench import measure
    from icml26.streamflow.model import text_to_image

    u, vae, cond, uncond = text_to_image(sample_size=8)
    f = DiffusersDenoiser(u)
    res = measure(
        f, (4, 8, 8), N=2, M=3, repeats=1, condition=cond, guidance_scale=4.0, uncond=uncond,
        decode=vae,
    )  # fmt: skip
    assert res["max |stream - sequential|"] < 1e-4
    noise = torch.randn(1, 4, 8, 8)
    guided = sequential_sample(f, noise, 2, cond[None], guidance_scale=4.0, uncond=uncond[None])
    plain = sequential_sample(f, noise, 2, cond[None])
    assert (guided - plain).abs().max() > 1e-3  # guidance changes the sample
    with pytest.raises(ValueError, match="uncond"):
        sequential_sample(f, noise, 2, cond[None], guidance_scale=4.0)
