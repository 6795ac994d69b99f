"""A scene as a few readable lines for a terminal (no colours: core never imports rich).

A probe that timed out (a slow link, a hung ``nvidia-smi``) is never silent: the probes are
named in one ``timed out`` line, and when the lost answer is one an operator must not
miss — the serving process, the libcuda it loaded, the first exception of its log — a
``TIMED OUT`` line right under the header says which fact is unknown and why, and the
fact's own line reads ``NOT READ`` instead of a guess ("none mapped", "no serving process").
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import ProbeRecord, Scene

_FINDS_PROCESS = ("pgrep", "docker_ps", "docker_inspect")
"""Probes that name the serving process (directly, or through its container)."""
_READS_LOG = ("docker_logs", "run_log")
"""Probes that read the server log for the first exception (when no scan on the host found it)."""


def timed_out(s: Scene) -> dict[str, ProbeRecord]:
    """The probes of ``s`` that timed out, by name, in the scene's order.

    Every path that runs a probe says ``timed out after N s`` (the host's ``run``, the freeze's
    own guard, the Docker Engine API client), N the timeout it was given.
    """
    return {p.name: p for p in s.probes if not p.ok and p.error.startswith("timed out")}


def lost_facts(s: Scene) -> list[str]:
    """What an operator must not lose and a timeout took: one sentence each (empty when nothing)."""
    late = timed_out(s)

    def why(names: Iterable[str]) -> str:
        return "; ".join(f"{n} {late[n].error}" for n in names)

    out = []
    finders = [n for n in _FINDS_PROCESS if n in late]
    if not s.process and finders:
        out.append(
            f"the serving process was NOT found: {why(finders)}; a server may be running that this scene does not show"
        )
    elif s.process and (parts := [n for n in ("proc_cmdline", "proc_environ") if n in late]):
        out.append(f"the serving process (pid {s.process.get('pid')}) was NOT read: {why(parts)}")
    if "proc_maps" in late:
        out.append(f"the libcuda the server loaded was NOT read: {why(['proc_maps'])}")
    elif not s.process and finders:
        out.append("the libcuda the server loaded is unknown: its process was not found (above)")
    if not s.first_exception and (readers := [n for n in _READS_LOG if n in late]):
        out.append(f"the first exception was NOT read: {why(readers)}; read the server log by hand")
    return out


def scene_lines(s: Scene) -> list[str]:
    """The summary an on-call engineer reads first: host, GPUs, container, versions, libcuda, notes."""
    h = s.host
    sim = "  (SIMULATED host)" if s.simulated else ""
    late = timed_out(s)
    out = [
        f"== scene of {s.alias or h.hostname} ({h.hostname}){sim}, frozen in {s.seconds:.2f}s",
        *[f"TIMED OUT {fact}" for fact in lost_facts(s)],
        f"host      {h.os or '?'} · kernel {h.kernel or '?'} · {h.arch or '?'}",
        f"driver    {h.driver_version or 'unknown'} (kernel module {h.driver_version_proc or 'unknown'}) · CUDA driver {h.cuda_driver_version or 'unknown'}",
    ]
    out += _gpu_lines(s)
    out += _container_lines(s)
    v = s.versions
    out.append(
        f"versions  python {v.get('python') or '?'} · torch {v.get('torch') or '?'} (CUDA {v.get('torch_cuda') or '?'}) · "
        f"vllm {v.get('vllm') or '?'} · nccl {v.get('nccl') or '?'}" + (f"  [{v['source']}]" if v.get("source") else "")
    )
    finders = [n for n in _FINDS_PROCESS if n in late]
    if s.process:
        cmd = " ".join(s.process.get("cmdline") or [])[:200]
        if not cmd and "proc_cmdline" in late:
            cmd = f"command line NOT READ (proc_cmdline {late['proc_cmdline'].error})"
        out.append(f"process   pid {s.process.get('pid')}: {cmd}")
    elif finders:
        out.append(f"process   NOT READ ({', '.join(finders)} timed out)")
    lc = s.libcuda
    out.append(
        f"libcuda   {lc['path']} (version {lc.get('version') or '?'})"
        if lc
        else f"libcuda   NOT READ (proc_maps {late['proc_maps'].error})"
        if "proc_maps" in late
        else f"libcuda   none mapped by pid {s.process.get('pid')} (CUDA not initialised yet, or maps unreadable)"
        if s.process
        else "libcuda   not known (the serving process was not read: a timeout)"
        if finders
        else "libcuda   not known (no serving process found)"
    )
    injected = {k: v for k, v in s.env.items() if k.startswith(("LD_", "CUDA_", "NCCL_"))}
    for k, val in injected.items():
        out.append(f"env       {k}={val[:120]}  [{s.env_origin.get(k, '?')}]")
    if s.xids:
        out.append(f"xid       {len(s.xids)} Xid event(s), last: {s.xids[-1]['text'][:120]}")
    out += _hardware_lines(s)
    if s.first_exception:
        out.append(f"exception {s.first_exception.get('line')}  ({s.log_source})")
    elif readers := [n for n in _READS_LOG if n in late]:
        out.append(f"exception NOT READ ({', '.join(readers)} timed out)")
    if s.log_scan:
        out.append(log_scan_line(s.log_scan))
    out += [f"NOTE      {n}" for n in s.notes]
    failed = [p for p in s.probes if not p.ok]
    out.append(
        f"probes    {len(s.probes) - len(failed)}/{len(s.probes)} ok" + (f", {len(late)} timed out" if late else "")
    )
    if late:
        out.append("  timed out " + ", ".join(f"{n} ({p.error.removeprefix('timed out ')})" for n, p in late.items()))
    by_error: dict[str, list[str]] = {}
    for p in failed:
        if p.name not in late:
            by_error.setdefault(p.error[:100], []).append(p.name)
    out += [f"  failed  {', '.join(names)}: {err}" for err, names in by_error.items()]
    return out


def _gpu_lines(s: Scene) -> list[str]:
    if not s.gpus:
        return ["gpus      none seen"]
    names = sorted({g.name or "?" for g in s.gpus})
    out = [f"gpus      {len(s.gpus)} × {', '.join(names)}"]
    for g in s.gpus:
        used = (
            f"{g.memory_used_mib:.0f}/{g.memory_total_mib:.0f} MiB"
            if g.memory_total_mib is not None and g.memory_used_mib is not None
            else "? MiB"
        )
        out.append(f"  [{g.index}] {g.uuid} {g.pci_bus_id} {used} cc {g.compute_cap or '?'}")
    for p in s.gpu_processes:
        out.append(f"  process {p.pid} {p.name} on GPU {p.gpu_index}: {p.used_memory_mib} MiB")
    return out


def _container_lines(s: Scene) -> list[str]:
    c = s.container
    out = _pod_lines(s)
    if c is None:
        return [*out, "container none"]
    digest = ", ".join(c.get("repo_digests") or []) or "no repo digest (built or imported locally)"
    out += [
        f"container {c.get('name')} {(c.get('id') or '')[:12]} image {c.get('image')} ({digest})",
        f"  command {' '.join(c.get('command') or [])[:200]}",
    ]
    if s.container_gpus is not None:
        out.append(f"  sees {len(s.container_gpus)} GPU(s): {', '.join(g['uuid'] for g in s.container_gpus)}")
    return out


def _pod_lines(s: Scene) -> list[str]:
    """The launcher and, for a Kubernetes pod, its identity, owner, restarts and notable events (issue 18)."""
    p = s.pod
    if s.job:
        return _job_lines(s.job, s.launcher)
    if not p:
        return [f"launcher  {s.launcher}"] if s.launcher and s.launcher != "docker" else []
    owner = p.get("owner") or {}
    restarts = p.get("restarts")
    last = (p.get("last_termination") or {}).get("reason")
    return [
        f"launcher  {s.launcher}: pod {p.get('namespace')}/{p.get('name')} uid {p.get('uid')}"
        + (f" on {p['node']}" if p.get("node") else "")
        + (f", owner {owner.get('kind')} {owner.get('name')}" if owner else "")
        + (f", restarts {restarts}" if restarts is not None else "")
        + (f" (last: {last})" if last else "")
    ]


def _job_lines(j: dict, launcher: str) -> list[str]:
    """A Slurm job (issue 19): identity and end, GRES bound per node, script, container, output, other nodes."""
    end = f" exit {j['exit_code']}" if j.get("exit_code") is not None and j.get("state") != "RUNNING" else ""
    out = [
        f"launcher  {launcher}: job {j.get('id')} ({j.get('name')}) {j.get('state')}{end}"
        + (f" ({j['reason']})" if j.get("reason") else "")
        + f" on {','.join(j.get('nodes') or []) or '?'}"
        + (f", restarts {j['restarts']}" if j.get("restarts") else "")
    ]
    for g in (j.get("gres") or {}).get("per_node") or []:
        bound = ", ".join(f"{x['name']}:{x.get('type') or ''}:{x['count']} IDX {x.get('idx')}" for x in g["gres"])
        out.append(f"  gres    {g['node']}: {bound or 'none'}")
    script = j.get("script") or ""
    c = j.get("container") or {}
    out.append(
        f"  script  {len(script.splitlines())} lines as submitted"
        + (f"; {c['kind']} image {c.get('image')}" if c else "")
        if script
        else "  script  not readable (see notes)"
    )
    if (j.get("output") or {}).get("stdout"):
        out.append(f"  output  {j['output']['stdout']}")
    for n in j.get("node_scenes") or []:
        what = n.get("error") or (
            f"driver {n.get('driver') or '?'}, {n.get('gpus')} GPU(s), CUDA_VISIBLE_DEVICES={n.get('cuda_visible_devices')}"
        )
        out.append(f"  node    {n['node']}: {what}")
    return out


def log_scan_line(scan: dict) -> str:
    """How much of the server log was read to find the root (issue 15)."""
    size, got = scan.get("size") or 0, scan.get("bytes_read") or 0
    share = f"{100 * got / size:.2f}%" if size else "-"
    sha = (scan.get("sha256") or "?")[:16]
    return (
        f"log       {scan.get('path')}: {size:,} B, sha256 {sha}…; read {got:,} B ({share}) in "
        f"{scan.get('ranges_total', 0)} ranges by {scan.get('method')} in {scan.get('seconds', 0):.2f}s"
    )


def _hardware_lines(s: Scene) -> list[str]:
    """The host under the server (issue 14): fatal faults first, in the one-line form ``check`` prints."""
    from .hostfaults import describe

    fatal = [f for f in s.host_faults if f.get("fatal")]
    other = [f for f in s.host_faults if not f.get("fatal")]
    out = [f"HARDWARE  {describe(f, s.alias)}" for f in fatal[:8]]
    out += [f"hardware  {describe(f, s.alias)} (not fatal)" for f in other[:4]]
    domain = sorted({f"{(g.fabric or {}).get('cluster_uuid')}/{(g.fabric or {}).get('clique_id')}" for g in s.gpus
                     if (g.fabric or {}).get("state")})  # fmt: skip
    if domain:
        out.append(f"nvlink    fabric ClusterUUID/CliqueId {', '.join(domain)}; IMEX {(s.imex or {}).get('service')}")
    return out
