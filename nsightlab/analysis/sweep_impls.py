"""torch against a Triton kernel of the same op on the same device, size by size
(`sweep --impl torch,triton`): the plateau each reaches, the launch floor of each, and for
scale-add what fusing two kernels into one saves."""

from __future__ import annotations

import statistics
from typing import Literal

from nsightlab import units
from nsightlab.analysis.explain.sweep_words import sizes_text, tb_text
from nsightlab.analysis.sweep_result import COMPARE_TIME_TOLERANCE, SweepResult
from nsightlab.models import Model

#: torch and Triton reach "the same plateau" when their DRAM plateaus (TB/s, each
#: counting its own bytes) are within this fraction of each other.
IMPLS_PLATEAU_TOLERANCE = 0.05


ImplsVerdict = Literal[
    "same plateau", "triton falls short", "torch falls short", "inconclusive", "interpreted: correctness only"
]


class ImplPair(Model):
    """One size run by both implementations. `ratio` = us_triton / us_torch: below 1,
    Triton is faster."""

    log2: int
    elements: int
    us_torch: float
    us_triton: float
    tbps_torch: float
    tbps_triton: float
    ratio: float
    regime_torch: str
    regime_triton: str
    spread_torch: float | None = None
    spread_triton: float | None = None


class ImplSide(Model):
    impl: str
    run_id: str | None
    kernels_per_call: int
    bytes_per_element: int  # bytes one call moves per element: 2 x kernels x element size
    launch_floor_us: float | None  # the launch regime's floor
    smallest_us: float | None  # the time at the smallest size, floor or not
    dram_tbps: float | None
    plateau_status: str | None
    interpreted: bool


class SweepImpls(Model):
    """`nsightlab sweep --impl torch,triton --json`: both runs, side by side per size."""

    kind: Literal["sweep-impls"] = "sweep-impls"
    op: str
    dtype: str
    device: str | None
    device_type: str
    target: str
    interpreted: bool
    runs: list[SweepResult]
    torch: ImplSide
    triton: ImplSide
    pairs: list[ImplPair]
    dram_sizes: list[int]  # DRAM-bound in both
    launch_sizes: list[int]  # at the launch floor in both
    dram_time_ratio: float | None  # median ratio over dram_sizes
    launch_time_ratio: float | None  # median ratio over launch_sizes
    plateau_ratio: float | None  # Triton's plateau / torch's (TB/s)
    plateau_tolerance: float
    verdict: ImplsVerdict
    reason: str
    lesson: list[str]
    notes: list[str]


def _impl_side(r: SweepResult) -> ImplSide:
    smallest = min(r.rows, key=lambda row: row.elements) if r.rows else None
    return ImplSide(
        impl=r.impl,
        run_id=r.run_id,
        kernels_per_call=r.kernels_per_call,
        bytes_per_element=2 * r.kernels_per_call * r.element_size,
        launch_floor_us=r.summary.launch_floor_us,
        smallest_us=smallest.us if smallest else None,
        dram_tbps=r.summary.dram_tbps,
        plateau_status=r.summary.plateau_status,
        interpreted=r.interpreted,
    )


def _matched(k: SweepResult) -> str:
    """What the check against torch found, from the Triton run's rows."""
    rows = [row for row in k.record.rows if row.max_abs_error is not None]
    if not rows:
        return "Triton's result was not checked against torch's in this run."
    worst = max(row.max_abs_error or 0.0 for row in rows)
    tolerance = rows[0].tolerance or "exact"
    diff = "no difference at all" if worst == 0 else f"largest difference {units.sig(worst)}"
    return f"Triton's {k.op} matched torch's at every size ({diff}; tolerance {tolerance})."


def _floor_text(side: ImplSide, label: str) -> str:
    if side.launch_floor_us is not None:
        return f"{label} {units.duration(side.launch_floor_us * 1e-6)}"
    if side.smallest_us is not None:
        return f"{label} {units.duration(side.smallest_us * 1e-6)} at the smallest size (no size sat at a floor)"
    return f"{label} not measured"


def compare_impls(x: SweepResult, y: SweepResult) -> SweepImpls:
    """torch against Triton: the same op, type and sizes on one device, size by size.

    The verdict compares the DRAM plateaus (each run's TB/s counts its own bytes): the same
    within IMPLS_PLATEAU_TOLERANCE, or which one falls short and at which sizes. Every
    sentence of the lesson is made from the measured rows; a run in Triton's interpreter
    makes no claim beyond correctness."""
    by_impl = {r.impl: r for r in (x, y)}
    if set(by_impl) != {"torch", "triton"}:
        raise ValueError(f"compare_impls needs a torch run and a triton run, got {x.impl} and {y.impl}")
    t, k = by_impl["torch"], by_impl["triton"]
    notes: list[str] = []
    if (t.summary.device_name, t.summary.device_type) != (k.summary.device_name, k.summary.device_type):
        notes.append("the runs are on different devices: the comparison needs one device")
    if (t.op, t.dtype) != (k.op, k.dtype):
        notes.append(f"the runs differ: torch {t.op} {t.dtype} vs triton {k.op} {k.dtype}")
    theirs = {r.log2: r for r in k.rows}
    pairs: list[ImplPair] = []
    for rt in t.rows:
        rk = theirs.get(rt.log2)
        if rk is None or rk.elements != rt.elements:
            continue
        pairs.append(
            ImplPair(
                log2=rt.log2,
                elements=rt.elements,
                us_torch=rt.us,
                us_triton=rk.us,
                tbps_torch=rt.tbps,
                tbps_triton=rk.tbps,
                ratio=rk.seconds_per_call / rt.seconds_per_call,
                regime_torch=rt.regime,
                regime_triton=rk.regime,
                spread_torch=rt.spread,
                spread_triton=rk.spread,
            )
        )
    if not pairs:
        notes.append("the runs have no size in common")
    dram = [p for p in pairs if p.regime_torch == p.regime_triton == "dram"]
    launch = [p for p in pairs if p.regime_torch == p.regime_triton == "launch"]
    dram_ratio = statistics.median(p.ratio for p in dram) if dram else None
    launch_ratio = statistics.median(p.ratio for p in launch) if launch else None
    ts, ks = _impl_side(t), _impl_side(k)
    plateau_ratio = ks.dram_tbps / ts.dram_tbps if ks.dram_tbps and ts.dram_tbps else None
    interpreted = t.interpreted or k.interpreted
    lesson: list[str] = []
    verdict: ImplsVerdict
    if interpreted:
        verdict = "interpreted: correctness only"
        reason = (
            "Triton ran in its interpreter, with no GPU: its times measure NumPy running each program, not the device"
        )
        lesson.append(_matched(k))
        lesson.append(
            "The times say nothing about bandwidth or launches here: torch's are this CPU's, "
            "Triton's are its interpreter's. Run on a GPU (the lab pod) to compare them."
        )
        return SweepImpls(
            op=t.op, dtype=t.dtype, device=t.summary.device_name, device_type=t.summary.device_type, target=t.target,
            interpreted=True, runs=[t, k], torch=ts, triton=ks, pairs=pairs, dram_sizes=[p.log2 for p in dram],
            launch_sizes=[p.log2 for p in launch], dram_time_ratio=dram_ratio, launch_time_ratio=launch_ratio,
            plateau_ratio=None, plateau_tolerance=IMPLS_PLATEAU_TOLERANCE, verdict=verdict, reason=reason,
            lesson=lesson, notes=notes,
        )  # fmt: skip
    tol = IMPLS_PLATEAU_TOLERANCE
    plateaus = ""
    if plateau_ratio is not None and ts.dram_tbps is not None and ks.dram_tbps is not None:
        plateaus = f"torch {tb_text(ts.dram_tbps)}, Triton {tb_text(ks.dram_tbps)}"
        if abs(plateau_ratio - 1) <= tol:
            verdict = "same plateau"
            reason = f"the same DRAM plateau within {tol:.0%} ({plateaus})"
        else:
            short, other = ("triton", "torch") if plateau_ratio < 1 else ("torch", "triton")
            verdict = "triton falls short" if short == "triton" else "torch falls short"
            behind = [
                p.log2
                for p in dram
                if (p.tbps_triton / p.tbps_torch if short == "triton" else p.tbps_torch / p.tbps_triton) < 1 - tol
            ]
            gap = 1 - (plateau_ratio if short == "triton" else 1 / plateau_ratio)
            where = f" at {sizes_text(behind)}" if behind else ""
            reason = f"{short}'s DRAM plateau is {units.percent(100 * gap)} below {other}'s{where} ({plateaus})"
    else:
        verdict = "inconclusive"
        missing = [
            f"{side.impl} ({'one point' if side.plateau_status == 'one point' else side.plateau_status or 'none'})"
            for side in (ts, ks)
            if side.dram_tbps is None
        ]
        reason = f"no DRAM plateau for {' and '.join(missing)}: add larger --sizes"
    floors = f"{_floor_text(ts, 'torch')}, {_floor_text(ks, 'Triton')}"
    t_floor = ts.launch_floor_us if ts.launch_floor_us is not None else ts.smallest_us
    k_floor = ks.launch_floor_us if ks.launch_floor_us is not None else ks.smallest_us
    gpu = t.summary.device_type == "cuda"
    if t.op == "scale-add":
        if dram_ratio is not None:
            half = abs(dram_ratio - 0.5) <= 0.5 * COMPARE_TIME_TOLERANCE
            bw = (
                f"torch {tb_text(statistics.median(p.tbps_torch for p in dram))}, Triton "
                f"{tb_text(statistics.median(p.tbps_triton for p in dram))}"
            )
            lesson.append(
                f"At the DRAM plateau ({sizes_text([p.log2 for p in dram])}) the fused Triton kernel took "
                f"{units.ratio(dram_ratio)} torch's time per call: it moves {ks.bytes_per_element} B per element "
                f"(one kernel reading and writing once) where torch's two kernels (x.mul_, then x.add_) move "
                f"{ts.bytes_per_element} B, at TB/s of {bw}. "
                + (
                    "Half the bytes, half the time: at the plateau a kernel is only as fast as the bytes it "
                    "moves, so the win is moving fewer of them (fusing), not faster arithmetic."
                    if half
                    else f"Half the bytes would predict 0.500x; the measured {units.ratio(dram_ratio)} says the two "
                    "did not run at the same TB/s."
                )
            )
        else:
            lesson.append(
                "No size was DRAM-bound in both runs, so the saving from fusing (half the bytes) is not measured "
                "here: add larger --sizes."
            )
        if launch_ratio is not None and t_floor is not None and k_floor is not None:
            if k_floor < t_floor:
                lesson.append(
                    f"At the launch floor ({sizes_text([p.log2 for p in launch])}) torch pays two launches per call "
                    f"({_floor_text(ts, 'torch')}) against the fused kernel's one ({_floor_text(ks, 'Triton')}): "
                    "there the number of launches, not the bytes, sets the time."
                )
            else:
                lesson.append(
                    f"At the launch floor ({sizes_text([p.log2 for p in launch])}) torch pays two launches per "
                    "call, yet "
                    f"its floor ({_floor_text(ts, 'torch')}) is below Triton's single launch "
                    f"({_floor_text(ks, 'Triton')}): "
                    "Triton's Python launch path costs more than two of torch's C++ launches."
                )
    else:
        if verdict == "same plateau":
            lesson.append(
                f"Both reach the same DRAM plateau ({plateaus}): the two kernels move the same bytes, "
                "and at the plateau a kernel can only be as fast as the bytes it moves. The win is moving fewer bytes "
                "(fusing ops: --op scale-add), not cleverer arithmetic."
            )
        elif verdict != "inconclusive":
            lesson.append(
                f"{reason[0].upper()}{reason[1:]}: the two kernels move the same bytes, so the slower one leaves "
                "memory bandwidth unused there."
            )
    if t_floor is not None and k_floor is not None and t.op != "scale-add":
        extra = k_floor - t_floor
        launcher = "Triton's Python launch path" if gpu else "Triton's launch path"
        if extra > 0:
            lesson.append(
                f"Launch floor: {floors}. {launcher} costs {units.duration(extra * 1e-6)} more per call "
                f"({units.ratio(k_floor / t_floor)} torch's): at small sizes the launch, not the bytes, sets the time."
            )
        else:
            lesson.append(f"Launch floor: {floors}: Triton's launches cost no more than torch's here.")
    lesson.append(_matched(k))
    return SweepImpls(
        op=t.op, dtype=t.dtype, device=t.summary.device_name, device_type=t.summary.device_type, target=t.target,
        interpreted=False, runs=[t, k], torch=ts, triton=ks, pairs=pairs, dram_sizes=[p.log2 for p in dram],
        launch_sizes=[p.log2 for p in launch], dram_time_ratio=dram_ratio, launch_time_ratio=launch_ratio,
        plateau_ratio=plateau_ratio, plateau_tolerance=tol, verdict=verdict, reason=reason, lesson=lesson, notes=notes,
    )  # fmt: skip
