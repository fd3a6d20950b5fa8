"""The decode floor from what is stored.

The per-token floor `nsightlab roofline` shows (`decode_floor_for`): a sweep's measured
DRAM plateau and its GPU's spec, a GPU's spec alone, or by default the latest sweep (else
the lab session's GPU).

The bandwidth a decode step's floor divides by (`floor_bandwidth`): the DRAM plateau of
the latest stored sweep on the same device (same name, or the same spec-table GPU), else
the GPU's spec; a CPU has no spec here, so only a sweep of that CPU gives it a floor.
"""

from __future__ import annotations

from nsightlab.analysis.decode_models import Bandwidth, device_name_of
from nsightlab.analysis.peaks import peak_tflops, spec_bandwidth
from nsightlab.analysis.roofline import DecodeFloor, decode_floor, find_gpu
from nsightlab.analysis.sweep_result import SweepResult, plateau_source
from nsightlab.errors import UsageError
from nsightlab.runs import store
from nsightlab.runs.sweeps import load_sweep_run
from nsightlab.specs.gpus import lookup
from nsightlab.userconfig import load_session


def decode_floor_for(weights_gb: float, *, run: str | None = None, gpu: str | None = None) -> DecodeFloor:
    """What `nsightlab roofline` shows: from a stored run (a sweep's measured plateau and
    its GPU's spec), from a GPU's spec alone, or by default from the latest sweep (else
    the lab session's GPU)."""

    if run is not None and gpu is not None:
        raise UsageError("give --run or --gpu, not both")
    damaged: list[store.RunStatus] = []
    if gpu is not None:
        floor = decode_floor(weights_gb, gpus=[find_gpu(gpu)])
    elif run is not None:
        status = store.inspect(store.resolve(run))
        if status.meta is None:  # damaged, or still being written: its own one line
            assert status.error is not None
            raise status.error
        r, meta = status.run, status.meta
        if meta.kind == "sweep":
            floor = decode_floor(weights_gb, sweeps=[plateau_source(load_sweep_run(str(r.path)))])
        elif meta.kind == "profile":
            spec = lookup(meta.gpu)
            floor = decode_floor(weights_gb, gpus=[spec] if spec else [])
            floor.notes.append(f"run {meta.id} is a profile: it measures no DRAM plateau (a sweep does)")
        else:
            raise UsageError(f"run {meta.id} is a {meta.kind} run: give a sweep run (its DRAM plateau) or --gpu NAME")
    else:
        statuses = [store.inspect(x) for x in store.all_runs()]
        sweeps = [s.result for s in statuses if isinstance(s.result, SweepResult)]
        damaged = [
            s
            for s in statuses
            if s.state == "damaged" and (s.meta.kind if s.meta else store.folder_facts(s.run)[0]) == "sweep"
        ]
        with_plateau = [x for x in sweeps if x.summary.dram_tbps is not None]
        session = load_session()
        spec = lookup(session.gpu_product) if session and session.gpu_product else None
        if with_plateau:
            floor = decode_floor(weights_gb, sweeps=[plateau_source(with_plateau[-1])])
        elif spec is not None:
            floor = decode_floor(weights_gb, gpus=[spec])
            floor.notes.append(
                f"no sweep reached a DRAM plateau yet: the spec of the lab session's GPU ({spec.name}) only"
            )
        elif sweeps:
            floor = decode_floor(weights_gb, sweeps=[plateau_source(sweeps[-1])])
        else:
            raise UsageError(
                "no sweep run to take a DRAM plateau from, and no lab session GPU",
                hint="Give --gpu NAME (e.g. 'NVIDIA L4' or g7e.8xlarge), --run ID, or run `nsightlab sweep` first.",
            )
    floor.notes.extend(f"left out sweep {s.run.id}: it is damaged ({s.problem})" for s in damaged)
    if not floor.lines:
        raise UsageError(
            "no floor to give: " + "; ".join(floor.notes or ["no bandwidth known"]),
            hint="Sweep larger sizes, or give --gpu NAME for the spec floor.",
        )
    return floor


def _same_device(a_name: str | None, a_type: str, b_name: str | None, b_type: str) -> bool:
    if a_type != b_type or not a_name or not b_name:
        return False
    a, b = device_name_of(a_name), device_name_of(b_name)
    if a == b:
        return True
    spec_a, spec_b = lookup(a), lookup(b)
    return spec_a is not None and spec_a == spec_b


def floor_bandwidth(device_name: str | None, device_type: str, dtype: str | None) -> tuple[Bandwidth | None, list[str]]:
    """The bandwidth a decode step's floor divides by, and notes saying where it came from."""
    spec = lookup(device_name_of(device_name)) if device_type != "cpu" else None
    peak, peak_label = peak_tflops(spec, dtype)
    what = device_name or device_type
    for run in reversed(store.all_runs()):
        try:
            if not run.has_result() or run.meta().kind != "sweep":
                continue
            sweep = load_sweep_run(str(run.path))
        except (UsageError, ValueError):
            continue
        s = sweep.summary
        if s.dram_tbps is None or not _same_device(s.device_name, s.device_type, device_name, device_type):
            continue
        label = f"measured DRAM plateau of sweep run {sweep.run_id} ({sweep.dtype}) on {what}"
        measured = Bandwidth(tbps=s.dram_tbps, basis="measured", label=label, peak_tflops=peak, peak_label=peak_label)
        return measured, [f"the floor's bandwidth: the {label}"]
    if device_type == "cpu":
        return None, [
            f"no floor: no stored sweep of this CPU ({what}) reached a DRAM plateau, and a CPU has no "
            "spec here; `nsightlab sweep --local --device cpu` measures its memory bandwidth"
        ]
    spec_bw = spec_bandwidth(device_name, dtype)
    if spec_bw is None:
        return None, [f"no floor: {what} is not in the spec table and no stored sweep of it reached a DRAM plateau"]
    return spec_bw, [
        f"the floor's bandwidth: the {spec_bw.label} (no stored sweep of {what} reached a DRAM plateau; "
        "`nsightlab sweep` measures what the GPU really delivers, typically 70-90% of the spec)"
    ]
