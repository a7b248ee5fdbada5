"""icml26.streamflow: streaming, batched rectified-flow inference on diffusers models.

StreamFlow (project page world-snapshot.github.io/StreamFlow; authors' code
World-Snapshot/StreamFlow) speeds up flow samplers by (1) vectorised time-step batching: one model
call over samples at different time steps, with every step coefficient gathered per sample
(for PeRFlow's piecewise windows too, the paper's Algorithm 1), and (2) pipeline ("stream")
batching: a buffer of N in-flight samples at stages 0..N-1, one model call per new input, one
finished sample out per call.

Implemented: ``BatchedFlowScheduler`` (diffusers' flow-matching Euler schedule, from a scheduler
instance with shift, dynamic shifting or custom sigmas), ``PeRFlowWindows`` (PeRFlow's windows,
eps- and velocity-parameterised), ``StreamPipeline`` (static ring buffer with host-side
bookkeeping, no device sync per push; eager / torch.compile / CUDA-graph backends; guidance;
image-to-image), ``DiffusersDenoiser`` (UNet2D, UNet2DCondition, DiT, SD3 and Flux
transformers), ``VaeDecoder`` / ``encode_image``, ``from_pipe`` (a stream from a loaded
diffusers pipeline), the sequential baseline, and a digits model trained here.
"""

from icml26.streamflow.adapters import DiffusersDenoiser, VaeDecoder, encode_image, from_pipe
from icml26.streamflow.baselines import sequential_sample
from icml26.streamflow.model import digits_images, train_flow_matching, unet
from icml26.streamflow.pipeline import StreamPipeline
from icml26.streamflow.scheduler import BatchedFlowScheduler, PeRFlowWindows, flux_mu
from icml26.testing.results import package_version

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-streamflow", __file__)

__all__ = [
    "BatchedFlowScheduler",
    "DiffusersDenoiser",
    "PeRFlowWindows",
    "StreamPipeline",
    "VaeDecoder",
    "digits_images",
    "encode_image",
    "flux_mu",
    "from_pipe",
    "sequential_sample",
    "train_flow_matching",
    "unet",
]
