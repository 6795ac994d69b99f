"""Pure parsers of probe outputs (text in, plain data out), one module per source.

Every parser is tested on the real captures in ``../shared/fixtures/hosts``; bad input
raises :class:`ParseError` with one line saying what was expected.
"""

from ._common import ParseError, as_float, as_int, na, strip_transcript
from .docker import container_from_inspect, image_from_inspect, parse_docker_ps
from .failures import parse_failure
from .hardware import (
    health_from_smi_xml,
    parse_capture_sections,
    parse_channels,
    parse_fabric_services,
    parse_kernel_event,
    parse_kernel_events,
    parse_nvlink,
    parse_nvml_calls,
    pci_key,
)
from .nvidia import (
    apps_from_query,
    gpus_from_query,
    parse_csv_query,
    parse_nccl_log,
    parse_nvcc,
    parse_proc_driver,
    parse_pynvml,
    parse_smi_list,
    parse_smi_loop,
    parse_smi_q,
    parse_smi_table,
    parse_smi_xml,
    parse_topo,
    parse_xid,
)
from .system import (
    lib_version,
    libcuda_from_maps,
    parse_cmdline,
    parse_env,
    parse_ld_so_conf,
    parse_ldconfig,
    parse_maps,
    parse_os_release,
    parse_pgrep,
    parse_torch_report,
    parse_uname,
    parse_versions_json,
)

__all__ = [
    "ParseError", "as_float", "as_int", "na", "strip_transcript",
    "container_from_inspect", "image_from_inspect", "parse_docker_ps", "parse_failure",
    "apps_from_query", "gpus_from_query", "parse_csv_query", "parse_nccl_log", "parse_nvcc",
    "parse_proc_driver", "parse_pynvml", "parse_smi_list", "parse_smi_loop", "parse_smi_q",
    "parse_smi_table", "parse_smi_xml", "parse_topo", "parse_xid",
    "lib_version", "libcuda_from_maps", "parse_cmdline", "parse_env", "parse_ld_so_conf",
    "parse_ldconfig", "parse_maps", "parse_os_release", "parse_pgrep", "parse_torch_report",
    "parse_uname", "parse_versions_json",
    "health_from_smi_xml", "parse_capture_sections", "parse_channels", "parse_fabric_services", "parse_kernel_event",
    "parse_kernel_events", "parse_nvlink", "parse_nvml_calls", "pci_key",
]  # fmt: skip
