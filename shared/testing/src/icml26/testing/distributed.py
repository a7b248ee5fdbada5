"""Run a function in 2 (or more) torch.distributed processes, torchrun-style, and collect results.

Each worker gets the environment torchrun would give it (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT), so code under test can call ``torch.distributed.init_process_group``
exactly as it would under ``torchrun``. The function runs with the process group already
initialised (gloo) unless ``init=False``. What each rank returns is sent back through a file.
"""

import importlib
import importlib.util
import os
import pickle
import socket
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _function_ref(fn: Callable[..., Any]) -> tuple[str, str | None, str]:
    # Spawned workers import `fn` by name. Test modules collected with --import-mode=importlib
    # have names that are not importable, so the file travels too, as a fallback.
    if "<locals>" in fn.__qualname__ or fn.__name__ == "<lambda>":
        raise ValueError(f"fn must be a module-level function, got {fn.__qualname__}")
    module = sys.modules.get(fn.__module__)
    return fn.__module__, getattr(module, "__file__", None), fn.__qualname__


def _resolve(ref: tuple[str, str | None, str]) -> Callable[..., Any]:
    module_name, file, qualname = ref
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        if file is None:
            raise
        spec = importlib.util.spec_from_file_location(module_name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _worker(rank, world_size, port, fn_ref, args, kwargs, out_dir, init, backend):
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    result_path = Path(out_dir) / f"rank{rank}.pkl"
    try:
        if init:
            dist.init_process_group(backend, rank=rank, world_size=world_size)
        payload = ("ok", _resolve(fn_ref)(*args, **kwargs))
    except BaseException:
        payload = ("error", traceback.format_exc())
    # The result goes to disk before the process group is torn down, so a teardown problem
    # cannot lose it. These files are written and read by this helper alone, in one test run.
    with open(result_path, "wb") as f:
        pickle.dump(payload, f)
    if init and dist.is_initialized():
        if payload[0] == "ok":
            # Every rank is done communicating before any tears down: gloo aborts a process
            # whose peer disappears mid-teardown.
            dist.barrier()
        dist.destroy_process_group()


def run_distributed(
    fn: Callable[..., Any],
    *args: Any,
    world_size: int = 2,
    backend: str = "gloo",
    init: bool = True,
    timeout: float = 300.0,
    **kwargs: Any,
) -> list[Any]:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` spawned ranks; return the per-rank results.

    ``fn`` must be importable (a module-level function) so it can be sent to spawned processes.
    A failing rank raises RuntimeError carrying that rank's traceback.
    """
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="icml26-dist-") as out_dir:
        ctx = mp.start_processes(
            _worker,
            args=(world_size, port, _function_ref(fn), args, kwargs, out_dir, init, backend),
            nprocs=world_size,
            join=False,
            start_method="spawn",
        )
        deadline = time.monotonic() + timeout
        exit_problem = None
        try:
            while not ctx.join(timeout=1.0):
                if time.monotonic() > deadline:
                    for p in ctx.processes:
                        p.kill()
                    raise TimeoutError(f"distributed run did not finish within {timeout} s")
        except mp.ProcessExitedException as e:
            exit_problem = e  # judged below: did every rank finish its work first?
        results = []
        for rank in range(world_size):
            path = Path(out_dir) / f"rank{rank}.pkl"
            if not path.exists():
                raise RuntimeError(f"rank {rank} exited without a result ({exit_problem})")
            with open(path, "rb") as f:
                status, value = pickle.load(f)  # written by _worker above, same run
            if status == "error":
                raise RuntimeError(f"rank {rank} failed:\n{value}")
            results.append(value)
        if exit_problem is not None:
            warnings.warn(
                f"every rank returned its result, but a process died in teardown: {exit_problem}",
                RuntimeWarning,
                stacklevel=2,
            )
        return results
