"""Facts about the machine a measurement ran on, recorded with every result."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import jax
import jaxlib


@dataclass(frozen=True)
class MachineInfo:
    platform: str  # JAX backend: "cpu", "gpu", "tpu"
    device: str  # device kind of device 0, e.g. "cpu", "NVIDIA H100 80GB HBM3"
    device_count: int
    jax_version: str
    jaxlib_version: str
    cpu_model: str
    cpu_count: int
    python_version: str
    os: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def one_line(self) -> str:
        accel = "" if self.platform == "cpu" else f" x{self.device_count}"
        return (f"{self.platform}: {self.device}{accel}; CPU {self.cpu_model} ({self.cpu_count} cores); "
                f"JAX {self.jax_version}, jaxlib {self.jaxlib_version}; Python {self.python_version}; {self.os}")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use, not the host's
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def machine_info() -> MachineInfo:
    """Describe the default JAX backend and the host (cached: it does not change in a process)."""
    devices = jax.devices()
    return MachineInfo(
        platform=jax.default_backend(),
        device=str(devices[0].device_kind),
        device_count=len(devices),
        jax_version=jax.__version__,
        jaxlib_version=getattr(jaxlib, "__version__", "unknown"),
        cpu_model=_cpu_model(),
        cpu_count=_cpu_count(),
        python_version=platform.python_version(),
        os=f"{platform.system()} {platform.release()}",
    )
