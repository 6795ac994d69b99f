"""Merged multi-node timelines: stamps, clock-skew correction, the deployment's first root (issue 9)."""

from __future__ import annotations

import calendar

from k3tui.fleet.timeline import NodeLog, classify_deployment, merge, stamp, timed_lines

REF = calendar.timegm((2026, 11, 30, 12, 0, 0))


def _traceback(proc: str, when: str, last: str) -> str:
    p = f"({proc} pid=61) ERROR 11-30 {when} [multiproc_executor.py:953]"
    return (
        f"{p} WorkerProc failed to start.\n"
        f"{p} Traceback (most recent call last):\n"
        f'{p}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 920, in worker_main\n'
        f"{p}     worker = WorkerProc(*args, **kwargs)\n"
        f"{p} {last}\n"
    )


NCCL = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 1 has a total capacity of 277.54 GiB"


def _logs(worker_skew: float | None) -> list[NodeLog]:
    # The worker's clock runs 30 s ahead: its NCCL failure, printed at 10:00:33 by ITS clock,
    # really happened at 10:00:03 — before the head's OOM at 10:00:10 (a consequence).
    head = "(APIServer pid=1) INFO 11-30 10:00:00 [api_utils.py:347] non-default args: {}\n" + _traceback(
        "Worker_TP1", "10:00:10", OOM
    )
    worker = (
        "gb300-tray02:61:61 [1] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
        "(Worker_TP1 pid=61) INFO 11-30 10:00:31 [parallel_state.py:1906] world_size=8 rank=5 backend=nccl\n"
        + _traceback("Worker_TP1", "10:00:33", NCCL)
    )
    return [
        NodeLog("head", head, "head", clock_skew=0.0, ref_time=REF),
        NodeLog("worker", worker, "worker", clock_skew=worker_skew, ref_time=REF),
    ]


def test_clock_skew_correction_decides_which_node_failed_first() -> None:
    corrected = classify_deployment(_logs(30.0))
    assert corrected.node == "worker" and NCCL in corrected.line
    assert corrected.t == calendar.timegm((2026, 11, 30, 10, 0, 3))
    per = {v.alias: v for v in corrected.per_node}
    assert per["head"].result.first_exception is not None, "alone, the head's OOM looks like a root"
    assert per["worker"].t == corrected.t
    # the same logs placed by the hosts' own clocks name the wrong node: the skew is the point
    naive = classify_deployment(_logs(None))
    assert naive.node == "head" and "OutOfMemoryError" in naive.line


def test_same_process_name_on_two_nodes_stays_two_processes() -> None:
    # both nodes print "(Worker_TP1 pid=61)" tracebacks whose lines interleave on the merged
    # timeline (docker stamps 1 ms apart); the root's stack must come from one node only
    def stamped(text: str, ms0: int) -> str:
        return "".join(f"2026-11-30T10:00:03.{ms0 + 2 * i:03d}Z {ln}\n" for i, ln in enumerate(text.splitlines()))

    head = NodeLog("head", stamped(_traceback("Worker_TP1", "10:00:03", OOM), 1), "head", 0.0, ref_time=REF)
    worker = NodeLog("worker", stamped(_traceback("Worker_TP1", "10:00:03", NCCL), 0), "worker", 0.0, ref_time=REF)
    v = classify_deployment([head, worker])
    assert [x.alias for x in v.merged[:4]] == ["worker", "head", "worker", "head"]
    fe = v.result.first_exception
    assert v.node == "worker" and NCCL in v.line
    assert fe is not None and len(fe.stack) >= 4 and all(line.startswith("worker | ") for line in fe.stack), fe.stack
    assert v.merged[v.index].alias == "worker"


def test_stamps_docker_utc_local_with_offset_journald_and_carried_lines() -> None:
    node = NodeLog("n", "", utc_offset=7200.0, ref_time=REF)
    assert stamp("2026-11-30T10:00:01.123456789Z (APIServer pid=1) INFO 11-30 12:00:01 [x.py:1] hi", node) == (
        calendar.timegm((2026, 11, 30, 10, 0, 1)) + 0.123456789
    )
    assert stamp("(APIServer pid=1) INFO 11-30 12:00:05 [x.py:1] hi", node) == calendar.timegm((2026, 11, 30, 10, 0, 5))
    assert stamp("Nov 30 12:00:07 tray01 vllm[42]: hello", node) == calendar.timegm((2026, 11, 30, 10, 0, 7))
    assert stamp("gb300:61:61 [1] NCCL INFO x", node) is None
    # a December log read on the 2nd of January belongs to last year
    jan = NodeLog("n", "", ref_time=calendar.timegm((2027, 1, 2, 0, 0, 0)))
    assert stamp("INFO 12-31 23:59:00 [x.py:1] late", jan) == calendar.timegm((2026, 12, 31, 23, 59, 0))
    lines = timed_lines(
        NodeLog(
            "n",
            "no stamp yet\nINFO 11-30 10:00:00 [x.py:1] a\n  carried\nINFO 11-30 10:00:02 [x.py:1] b\n",
            ref_time=REF,
            clock_skew=2.0,
        )
    )
    t0 = calendar.timegm((2026, 11, 30, 9, 59, 58))
    assert [(x.t - t0, x.stamped) for x in lines] == [(0, False), (0, True), (0, False), (2, True)]


def test_merge_orders_by_corrected_time_then_node() -> None:
    a = NodeLog("a", "INFO 11-30 10:00:05 [x.py:1] a1\nINFO 11-30 10:00:09 [x.py:1] a2\n", ref_time=REF, clock_skew=0.0)
    b = NodeLog("b", "INFO 11-30 10:00:10 [x.py:1] b1\n", ref_time=REF, clock_skew=4.0)  # really 10:00:06
    assert [x.text[-2:] for x in merge([a, b])] == ["a1", "b1", "a2"]
