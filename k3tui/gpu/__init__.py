"""GPU sampling on the host (NVML shipped as one pure-Python file, ``nvidia-smi -lms`` fallback)."""

from .parse import parse_compute_apps, parse_sampler_line, parse_smi_rows, total_used
from .sampler import GpuSampler, smi_command

__all__ = ["GpuSampler", "parse_compute_apps", "parse_sampler_line", "parse_smi_rows", "smi_command", "total_used"]
