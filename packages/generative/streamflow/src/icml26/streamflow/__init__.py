"""icml26.streamflow: streaming, batched rectified-flow inference on diffusers models.

StreamFlow (project page world-snapshot.github.io/StreamFlow; authors' code
World-Snapshot/StreamFlow) speeds up flow-matching samplers by (1) vectorised time-step
batching: one model call over samples at different time steps, and (2) pipeline ("stream")
batching: a buffer of N in-flight samples at stages 0..N-1, one model call per new input, one
finished sample out per call.

Implemented: ``BatchedFlowScheduler`` (diffusers' flow-matching Euler schedule with per-sample step
indices), ``StreamPipeline`` (static ring buffer, fused Euler update and CFG combine, eager /
torch.compile / CUDA-graph backends, VAE decode per emitted sample), ``DiffusersDenoiser`` (wraps
diffusers UNets and transformer denoisers), the sequential baseline, and a digits model trained
here. Not implemented: PeRFlow's piecewise windows (their Alg. 1 window lookup).
"""

from icml26.streamflow._results import package_version
from icml26.streamflow.model import digits_images, train_flow_matching, unet
from icml26.streamflow.pipeline import DiffusersDenoiser, StreamPipeline, sequential_sample
from icml26.streamflow.scheduler import BatchedFlowScheduler

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-streamflow", __file__)

__all__ = [
    "BatchedFlowScheduler",
    "DiffusersDenoiser",
    "StreamPipeline",
    "digits_images",
    "sequential_sample",
    "train_flow_matching",
    "unet",
]
