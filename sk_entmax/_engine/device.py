"""The ``device`` parameter: which torch device a fit trains on."""

from __future__ import annotations

from typing import Any

import torch

from sk_entmax.entmax.constraints import invalid

__all__ = ["DEVICES", "resolve_device"]

DEVICES = ("cpu", "cuda", "cuda:N", "mps", "auto")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(device: Any, owner: str | None = None) -> str:
    """Turn the ``device`` parameter into a torch device string, or raise a clear error.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` (Apple GPUs, where torch has them;
        the mini-batch solvers only, since MPS has no float64) or ``"auto"`` (CUDA when
        available, else the CPU).
    owner : str, optional
        The estimator or function whose parameter ``device`` is, for the message.

    Returns
    -------
    str
        The device to train on.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise invalid("device", owner, f"one of {DEVICES}", device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if device == "mps":
        if not _mps_available():
            raise ValueError(
                "device='mps' was requested but MPS (Apple's GPU backend of torch) is not "
                "available on this machine; use device='cpu' or device='auto'"
            )
        return device
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but CUDA is not available on this machine; "
                "use device='cpu' or device='auto'"
            )
        index = int(device[5:]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} was requested but only {torch.cuda.device_count()} "
                "CUDA device(s) are visible"
            )
        return device
    raise invalid("device", owner, f"one of {DEVICES}", device)
