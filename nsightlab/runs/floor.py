"""The per-token decode floor from what is stored: a sweep's measured DRAM plateau and
its GPU's spec, a GPU's spec alone, or by default the latest sweep (else the lab
session's GPU). What `nsightlab roofline` shows."""

from __future__ import annotations

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
