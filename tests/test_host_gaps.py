"""Idle time inside a step's GPU span that no launch explains: a gap of a millisecond or
more between a step's own operations is the host's (loading the next batch, CPU work),
not a launch gap; and a blocking call leads the advice only when the GPU sat idle in it.

The traces are built in Kineto's layout (tests/tracebuild.py) with the answer known to
the microsecond: a ProfilerStep whose kernels run 50 us each, launched 10 us apart."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from tracebuild import annotation, kernel, launch, write_kineto

from nsightlab.analysis.intervals import IntervalUnion

pytestmark = pytest.mark.usefixtures("nsl_home")

GEMM = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn"


def _step(
    tmp_path: Path,
    gaps_us: list[int],
    *,
    sync: tuple[int, str] | None = None,
    name: str = "t",
    device: str = "NVIDIA H100 80GB HBM3",
) -> Path:
    """One ProfilerStep#1: a kernel (50 us) per entry of `gaps_us` and one more, each
    launched 5 us before it runs; `gaps_us[i]` the GPU's idle time after kernel i. With
    `sync` (position, "busy" or "idle"): a cudaStreamSynchronize the host blocks in after
    kernel `position`, while that kernel still runs ("busy": it waits for the GPU's own
    work) or across the gap after it ("idle")."""
    events: list[dict[str, Any]] = []
    t = 100  # the step's range opens at 0, its first kernel runs at 100 us
    for i, gap in enumerate([*gaps_us, 0]):
        events.append(launch("cudaLaunchKernel", t - 5, 4, i + 1))
        events.append(kernel(GEMM, t, 50, i + 1))
        if sync is not None and sync[0] == i:
            start = t + 1 if sync[1] == "busy" else t + 50
            end = t + 50 if sync[1] == "busy" else t + 50 + gap - 6
            events.append(launch("cudaStreamSynchronize", start, end - start, 10_000 + i))
        t += 50 + gap
    events.append(annotation("ProfilerStep#1", 0, t + 10))
    return write_kineto(tmp_path / f"{name}.json", events, device=device)


def _steps(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    r = run_cli(capsys, "analyze", str(path), "--json")
    assert r.code == 0, r
    (group,) = json.loads(r.out)["steps"]
    data: dict[str, Any] = group
    return data


def test_millisecond_gaps_between_a_steps_kernels_are_the_hosts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 20 kernels 10 us apart, and 4 gaps of 3 ms (a DataLoader between them)
    gaps = [10] * 19
    for i in (4, 8, 12, 16):
        gaps[i] = 3_000
    g = _steps(capsys, _step(tmp_path, gaps))
    idle = g["idle_ms_per_step"]
    assert idle["waiting_for_host"] == pytest.approx(0.100 + 4 * 3.0)  # before the first kernel, and the gaps
    assert idle["between_kernels"] == pytest.approx(15 * 0.010)
    v = g["verdict"]
    assert v["kind"] == "host-bound" and v["thresholds"]["host_gap_ms"] == 1.0
    # its own work: 20 kernels and 15 launch gaps, not the 12 ms of gaps in its span
    assert "its own work took 1.15 ms" in v["text"]
    assert "between its GPU operations (gaps of 1 ms or more" in v["next_step"]
    assert "capture the step in a CUDA graph" not in v["next_step"]


def test_gaps_under_a_millisecond_stay_launch_gaps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    g = _steps(capsys, _step(tmp_path, [900] * 19))  # 0.9 ms between every two kernels: launches
    assert g["idle_ms_per_step"]["between_kernels"] == pytest.approx(19 * 0.9)
    assert g["idle_ms_per_step"]["waiting_for_host"] == pytest.approx(0.100)
    assert g["verdict"]["kind"] == "launch-bound" and "capture the step in a CUDA graph" in g["verdict"]["next_step"]
    amd = _steps(capsys, _step(tmp_path, [900] * 19, name="amd", device="AMD Instinct MI300X"))["verdict"]
    assert amd["kind"] == "launch-bound" and "capture the step in a HIP graph (torch.cuda.graph" in amd["next_step"]


def test_a_sync_leads_the_advice_only_when_the_gpu_sat_idle_in_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gaps = [10] * 19
    gaps[3] = 5_000
    # the host blocked across the 5 ms gap, the GPU idle: where the step's time went
    idle = _steps(capsys, _step(tmp_path, gaps, sync=(3, "idle"), name="idle"))["verdict"]
    assert idle["kind"] == "host-bound"
    assert idle["next_step"].startswith("start with the cudaStreamSynchronize that blocked the host")
    # the host blocked while the kernel ran (waiting for the GPU's own work), then the gap
    busy = _steps(capsys, _step(tmp_path, gaps, sync=(3, "busy"), name="busy"))["verdict"]
    assert busy["kind"] == "host-bound" and "cudaStreamSynchronize" in busy["text"]
    assert not busy["next_step"].startswith("start with") and "between its GPU operations" in busy["next_step"]


def test_a_kineto_trace_without_step_ranges_is_told_to_mark_them_with_record_function(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """torch.profiler records no NVTX: a range to mark the step is `record_function`'s."""
    events: list[dict[str, Any]] = []
    t, corr = 0, 0
    for _ in range(6):  # six steps of 8 kernels, each followed by 2 ms of nothing
        for k in range(8):
            corr += 1
            events.append(launch("cudaLaunchKernel", t, 4, corr))
            events.append(kernel(f"layer_kernel_{k}", t + 5, 50, corr))
            t += 60
        t += 2_000
    g = _steps(capsys, write_kineto(tmp_path / "unmarked.json", events))
    assert g["verdict"]["kind"] == "host-bound"
    assert 'torch.profiler.record_function("step")' in g["verdict"]["next_step"]
    assert "nvtx" not in g["verdict"]["next_step"]


def test_gaps_within_a_window_are_those_a_plain_scan_finds() -> None:
    rng = random.Random(7)
    intervals = []
    t = 0
    for _ in range(400):
        t += rng.choice([0, 3, 40, 900, 1_000, 2_500])
        d = rng.randint(1, 60)
        intervals.append((t, t + d))
        if rng.random() < 0.2:  # an overlapping one
            intervals.append((t + 1, t + d + rng.randint(0, 30)))
    union = IntervalUnion()
    for a, b in sorted(intervals):
        union.add(a, b)
    union.finish()
    segments = list(zip(union.seg_start, union.seg_end, strict=True))
    for _ in range(200):
        a = rng.randint(-100, t + 100)
        b = a + rng.randint(0, 20_000)
        expected = []
        for (_, e), (s, _) in pairwise(segments):
            if s - e >= 1_000 and min(s, b) > max(e, a):
                expected.append((max(e, a), min(s, b)))
        assert union.gaps_within(a, b, 1_000) == expected


def test_a_step_whose_gpu_waited_for_its_host_is_not_said_to_be_queued(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As a real T4 trace has it: each ProfilerStep spends 10 ms on the CPU making its input
    before launching a 6 ms kernel, and the next step's range opens while that kernel still
    runs. The next step's window begins where the previous one's ended, but its GPU then
    sits 5 ms idle: it waited for its host, it was not queued behind the previous step."""
    events: list[dict[str, Any]] = []
    for k in range(4):
        t = 11_000 * k
        events.append(annotation(f"ProfilerStep#{k}", t, 11_000))
        events.append(launch("cudaLaunchKernel", t + 10_000, 5, k + 1))
        events.append(kernel(GEMM, t + 10_100, 6_000, k + 1))
    r = run_cli(capsys, "analyze", str(write_kineto(tmp_path / "input.json", events)), "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    (group,) = data["steps"]
    assert group["verdict"]["kind"] == "host-bound"
    assert not any("queued behind the previous step" in n for n in data["notes"]), data["notes"]
