"""A run store recorded once per test session, for the runs / report / roofline tests.

CPU runs come from the real commands (the lab scripts run on this machine's CPU):
    nsightlab sweep --local --device cpu --sizes 12,14,16 --iters 5 --warmup 1  (float16, fp32)
    nsightlab profile lesson1 --local --profiler torch -- --scale-log2 16 --gemm-n 64

GPU-shaped runs are stored through the store's own API from real data, as runs of a lab
session (pod uid `SESSION_UID`) on the tutorial's g7e node:
- the tutorial's reference sweep (gpus.REFERENCE_SWEEPS, section 12) through
  `sweep.analyze_record_file`;
- the tutorial's lesson1 (gpus.REFERENCE_LESSON1, section 11) as lesson1's JSON, analysed;
- fixture 03 (a real `cuda_gpu_kern_sum` CSV, kernel names full of `<`, `>` and `&`);
- fixture 05 (a real ncu `--page details` CSV) through `ncu.from_report`.

Each test gets its own copy (`copy_home`), so `runs rm` cannot disturb the others.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nsightlab.analysis.ncu_result import from_report
from nsightlab.cli import main
from nsightlab.parse import ncu_csv as ncu_parse
from nsightlab.runs import store
from nsightlab.runs.analyze import analyze_path
from nsightlab.runs.store import RunMeta
from nsightlab.runs.sweeps import analyze_record_file
from nsightlab.specs import gpus

HERE = Path(__file__).resolve().parent
NSYS03 = HERE / "fixtures" / "nsys" / "03_nsys_cuda_gpu_kern_sum_pytorch_rtx5090.csv"
NCU05 = HERE / "fixtures" / "ncu" / "05_ncu_csv_page_details_vectorized_elementwise_rtx5090.csv"

SESSION_UID = "5b0d7c1e-lab-session"
CONTEXT = "stg-online-use1"
NODE = "ip-10-0-3-17.ec2.internal"
INSTANCE = "g7e.8xlarge"
RTX = gpus.BY_KEY["rtx-pro-6000-server"].name
SMALL_SWEEP = ("--local", "--device", "cpu", "--sizes", "12,14,16", "--iters", "5", "--warmup", "1")
SMALL_LESSON1 = ("--", "--scale-log2", "16", "--gemm-n", "64")


@dataclass
class Recorded:
    home: Path
    cpu_f16: str
    cpu_f32: str
    cpu_profile: str
    ref_sweep: str
    ref_profile: str
    kern03: str
    ncu05: str

    @property
    def session_ids(self) -> set[str]:
        return {self.ref_sweep, self.ref_profile, self.kern03, self.ncu05}

    @property
    def all_ids(self) -> set[str]:
        return self.session_ids | {self.cpu_f16, self.cpu_f32, self.cpu_profile}


def cli_json(*args: str) -> dict[str, Any]:
    """Run the CLI in-process with --json; its one JSON document."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(
                [*args, "--json"]
                if "--" not in args
                else [*args[: args.index("--")], "--json", *args[args.index("--") :]]
            )
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    assert code == 0, (args, err.getvalue()[-2000:])
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def lesson1_json(gpu_name: str, scale_us: float, gemm_us: float, n: int = 8192, log2: int = 28) -> dict[str, Any]:
    """lesson1.py's JSON for the tutorial's sizes and the given times per call."""
    return {
        "kind": "lesson1",
        "schema": 1,
        "device": {"type": "cuda", "name": gpu_name},
        "scaled_down": False,
        "ranges": [
            {
                "name": "memory_bound_scale", "op": "scale", "kernel_kind": "elementwise",
                "calls": 20, "warmup": 3, "dtype": "float16", "element_size": 2,
                "elements": 1 << log2, "bytes_per_call": 2 * (1 << log2) * 2,
                "flops_per_call": 1 << log2, "seconds_per_call": scale_us * 1e-6,
            },
            {
                "name": "compute_bound_gemm", "op": "gemm", "kernel_kind": "gemm",
                "calls": 20, "warmup": 3, "dtype": "float16", "element_size": 2,
                "m": n, "n": n, "k": n, "flops_per_call": 2 * n**3,
                "bytes_per_call": 3 * n * n * 2, "seconds_per_call": gemm_us * 1e-6,
            },
        ],
    }  # fmt: skip


def _store(
    kind: str,
    name: str,
    result: Any,
    when: datetime,
    *,
    raw: dict[str, Path] | None = None,
    dtype: str | None = None,
    gpu: str | None = RTX,
    headline: str | None = None,
) -> str:
    run, run_id = store.new_run(kind, name, now=when)
    for dest, src in (raw or {}).items():
        shutil.copyfile(src, run.raw / dest)
    result.run_id = run_id
    run.write_meta(
        RunMeta(
            id=run_id,
            kind=kind,
            name=name,
            created=when,
            target="pod ml-lab/nsight-lab-me",
            context=CONTEXT,
            namespace="ml-lab",
            pod="nsight-lab-me",
            node=NODE,
            instance_type=INSTANCE,
            gpu=gpu,
            image="registry.example.com/triton-vllm-container:1.0-1",
            dtype=dtype,
            headline=headline,
            session_uid=SESSION_UID,
        )
    )
    run.write_result(result)
    return run_id


def record(base: Path) -> Recorded:
    home = base / "home"
    work = base / "work"
    work.mkdir(parents=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NSIGHTLAB_HOME", str(home))
        mp.delenv("NSIGHTLAB_CONFIG", raising=False)
        f16 = cli_json("sweep", *SMALL_SWEEP, "--dtype", "float16")["run_id"]
        f32 = cli_json("sweep", *SMALL_SWEEP, "--dtype", "fp32")["run_id"]  # an alias: stored as float32
        prof = cli_json("profile", "lesson1", "--local", "--profiler", "torch", *SMALL_LESSON1)["run_id"]

        # the lab session's runs: later than the CPU runs, one second apart
        t0 = datetime.now(timezone.utc) + timedelta(seconds=2)
        ref = gpus.REFERENCE_SWEEPS["tutorial-rtx-pro-6000"]
        sweep_json = work / "sweep.json"
        sweep_json.write_text(json.dumps(ref.as_sweep_json()))
        sweep = analyze_record_file(sweep_json)
        sweep.source = None
        sweep.target = "pod ml-lab/nsight-lab-me"
        ref_sweep = _store(
            "sweep", "float16", sweep, t0, raw={"sweep.json": sweep_json}, dtype="float16", headline=sweep.headline
        )

        l1 = gpus.REFERENCE_LESSON1["tutorial-rtx-pro-6000"]
        l1_json = work / "lesson1.json"
        l1_json.write_text(json.dumps(lesson1_json(RTX, l1.scale_avg_us, l1.gemm_avg_us)))
        ref_profile = _store(
            "profile", "lesson1", analyze_path(l1_json), t0 + timedelta(seconds=1), raw={"lesson1.json": l1_json}
        )

        kern = analyze_path(NSYS03)
        kern.script = "dsocr"
        kern03 = _store(
            "profile",
            "dsocr",
            kern,
            t0 + timedelta(seconds=2),
            raw={NSYS03.name: NSYS03},
            gpu="NVIDIA GeForce RTX 5090",
        )

        report = ncu_parse.parse_ncu_csv(NCU05.read_text(), source=str(NCU05))
        ncu05 = _store(
            "ncu",
            "lesson1",
            from_report(report, "pod ml-lab/nsight-lab-me"),
            t0 + timedelta(seconds=3),
            raw={"ncu.csv": NCU05},
            gpu="NVIDIA GeForce RTX 5090",
        )
    return Recorded(
        home=home,
        cpu_f16=f16,
        cpu_f32=f32,
        cpu_profile=prof,
        ref_sweep=ref_sweep,
        ref_profile=ref_profile,
        kern03=kern03,
        ncu05=ncu05,
    )


_RECORDED: dict[str, Recorded] = {}


def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The session's recorded store (made on first use)."""
    if "store" not in _RECORDED:
        _RECORDED["store"] = record(tmp_path_factory.mktemp("recorded"))
    return _RECORDED["store"]


def copy_home(rec: Recorded, dest: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    """A private copy of the recorded store, made the current NSIGHTLAB_HOME."""
    home = dest / "home"
    shutil.copytree(rec.home, home)
    monkeypatch.setenv("NSIGHTLAB_HOME", str(home))
    monkeypatch.delenv("NSIGHTLAB_CONFIG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return Recorded(**{**rec.__dict__, "home": home})
