"""A folder `bench/gpu_run.sh` wrote, read back on any machine.

What is in it: `steps.log` (the folder's mark: its first line is the script's header),
`gpu-run.tar.gz` (facts, records, logs) and `traces.tar.gz`; or, the same unpacked, a
folder holding `steps.log` and `records/` (`runs.inputs.is_gpu_run` knows one). Each
record is analysed as `nsightlab analyze` analyses that file on its own (the caller
passes that reader in: `runs.inputs` decides what a path holds), except two that need
the run's own measurements: a decode record's floor and colocate's plateau take the DRAM
plateau of the run's own torch sweep (else the GPU's spec), not whatever the local run
store holds. torch and Triton runs of one op are compared side by side as `sweep --impl
torch,triton` does. Then the sanity table (`analysis.sanity`).

The archive is read member by member into a private temporary folder: regular files
only, with plain names under `gpu-run/`, size-capped; nothing is extracted with tarfile's
own extraction and no link is followed. Names and messages from the folder stay as they
are in the result (the renderer makes them safe to show).
"""

from __future__ import annotations

import json
import re
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from nsightlab.analysis.colocate_models import ColocateResult
from nsightlab.analysis.colocate_result import build_colocate
from nsightlab.analysis.decode_models import Bandwidth
from nsightlab.analysis.decode_result import build_decode
from nsightlab.analysis.gpurun_result import GpuRunResult, RecordResult, RunFile, RunRecord
from nsightlab.analysis.ncu_result import NcuResult
from nsightlab.analysis.peaks import spec_bandwidth
from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sanity import RunFigures, check_run
from nsightlab.analysis.sweep_impls import compare_impls
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.errors import ParseError, UsageError
from nsightlab.models import loads
from nsightlab.parse.ncu_csv import detect_counter_permission_error
from nsightlab.parse.records.colocate_record import load_colocate_record
from nsightlab.parse.records.decode_record import DecodeRecord, load_decode_record
from nsightlab.parse.records.gpurun_steps import parse_steps_log
from nsightlab.runs.inputs import STEPS_LOG
from nsightlab.specs.bounds import ImplausibleMeasurement
from nsightlab.specs.gpus import lookup
from nsightlab.units import sig

ARCHIVE = "gpu-run.tar.gz"
TRACES = ("traces.tar.gz",)
TOP = "gpu-run"
#: What the script promises about its folder (the device machine brings back at most
#: 8 files of 16 MiB): a folder that breaks it is said so in the notes.
MAX_FILES = 4
MAX_FILE_BYTES = 16 << 20
# Reading the archive: a member's and the whole's size caps, and the names accepted.
MEMBER_CAP = 64 << 20
TOTAL_CAP = 512 << 20
_PART = re.compile(r"^[A-Za-z0-9._-]+$")
# The pairs compared torch against Triton: (torch step, Triton step).
IMPL_PAIRS = (
    ("sweep-torch-float16", "sweep-triton-float16"),
    ("sweep-torch-float32", "sweep-triton-float32"),
    ("sweep-scale-add-torch-float16", "sweep-scale-add-triton-float16"),
)

Reader = Callable[[Path], BaseModel]


def analyze_gpu_run(path: Path, read: Reader) -> GpuRunResult:
    """The run in `path`: steps, records analysed, comparisons, sanity table, notes."""
    log_path = path / STEPS_LOG
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {log_path}: {e.strerror}") from None
    log = parse_steps_log(text, source=str(log_path))
    notes = list(log.notes)
    files = [RunFile(name=p.name, bytes=p.stat().st_size) for p in sorted(path.iterdir()) if p.is_file()]
    notes += _folder_notes(files)
    device = log.header.get("device", "cuda")
    order = [s.step for s in log.steps]

    def rank(step: str) -> tuple[int, str]:
        return (order.index(step) if step in order else len(order), step)

    with tempfile.TemporaryDirectory(prefix="nsightlab-gpurun-") as tmp:
        root = _root(path, Path(tmp), notes)
        facts = _facts(root, notes) if root is not None else {}
        shown = f"{path / ARCHIVE}:{TOP}" if root is not None and root != path else None
        reader = _Records(read, notes, (str(root), shown) if shown else None)
        if root is not None:
            for folder in sorted((p for p in (root / "records").glob("*") if p.is_dir()), key=lambda p: rank(p.name)):
                reader.step(folder)
        figures = reader.figures(device, facts)
    records = sorted(reader.records, key=lambda r: rank(r.step)) + _comparisons(reader.sweeps, notes)
    failed = [s for s in log.steps if s.status in ("failed", "timeout")]
    if failed:
        notes.append(
            f"{len(failed)} step(s) did not finish: "
            + "; ".join(f"{s.step} {s.status} ({s.detail[:160]})" for s in failed)
        )
    sanity = check_run(figures)
    outside = [r for r in sanity if r.ok is False]
    if outside:
        notes.append(
            f"{len(outside)} figure(s) outside their physical bounds (the sanity rows with ok false): each is a "
            "finding to explain, not a measurement to quote"
        )
    budget = log.header.get("budget_s", "")
    return GpuRunResult(
        source=str(path),
        device=device,
        tiny=log.header.get("tiny") == "1",
        machine=facts.get("summary") if isinstance(facts.get("summary"), str) else None,
        started=log.header.get("started"),
        finished=log.header.get("finished"),
        budget_s=int(budget) if budget.isdigit() else None,
        facts=facts,
        steps=log.steps,
        files=files,
        records=records,
        sanity=sanity,
        notes=notes,
    )


def _folder_notes(files: list[RunFile]) -> list[str]:
    out = []
    if len(files) > MAX_FILES:
        out.append(f"the folder holds {len(files)} files; the script leaves at most {MAX_FILES}")
    for f in files:
        if f.bytes > MAX_FILE_BYTES:
            out.append(f"{f.name} is {f.bytes} bytes, over the 16 MiB a file may take")
    return out


def _root(path: Path, tmp: Path, notes: list[str]) -> Path | None:
    """The folder that holds records/ and facts.json: `path` itself when unpacked, else
    the archive's contents."""
    if (path / "records").is_dir():
        return path
    archive = path / ARCHIVE
    if not archive.is_file():
        notes.append(f"no {ARCHIVE}: the run ended before it packed its records; only the steps log was read")
        return None
    _unpack(archive, tmp, notes)
    for name in TRACES:
        if (path / name).is_file():
            _list_traces(path / name, notes)
    return tmp / TOP


def _unpack(archive: Path, into: Path, notes: list[str]) -> None:
    """The archive's plain files under gpu-run/, written into `into`; anything else is
    left out with a note."""
    total = 0
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                parts = member.name.split("/")
                if member.isdir():
                    continue
                plain = (
                    member.isfile()
                    and len(parts) >= 2
                    and parts[0] == TOP
                    and len(parts) <= 4
                    and all(_PART.match(p) and p not in (".", "..") for p in parts)
                )
                if not plain:
                    notes.append(f"{ARCHIVE}: left out {member.name!r} (not a plain file of the run)")
                    continue
                if member.size > MEMBER_CAP or total + member.size > TOTAL_CAP:
                    notes.append(f"{ARCHIVE}: left out {member.name} ({member.size} bytes: over the size cap)")
                    continue
                src = tar.extractfile(member)
                if src is None:
                    continue
                target = into.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with src, open(target, "xb") as dst:
                    dst.write(src.read(member.size))
                total += member.size
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ParseError(f"cannot read the archive ({e})", source=archive) from None


def _list_traces(path: Path, notes: list[str]) -> None:
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            names = [f"{m.name} ({sig(m.size / 2**20)} MiB)" for m in tar if m.isfile()]
    except (tarfile.TarError, OSError, EOFError) as e:
        notes.append(f"{path.name} cannot be read: {e}")
        return
    if names:
        notes.append(f"{path.name} holds " + ", ".join(names) + " (open a Chrome trace in Perfetto)")


def _facts(root: Path, notes: list[str]) -> dict[str, Any]:
    path = root / "facts.json"
    if not path.is_file():
        notes.append("no facts.json: the facts step did not finish")
        return {}
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        notes.append(f"facts.json cannot be read: {e}")
        return {}
    return data if isinstance(data, dict) else {}


class _Records:
    """The records of each step folder, analysed; what the sanity checks need, kept."""

    def __init__(self, read: Reader, notes: list[str], relocate: tuple[str, str] | None) -> None:
        self.read = read
        self.notes = notes
        # the private folder the archive was read into, and how to name it instead
        self.relocate = relocate
        self.records: list[RunRecord] = []
        self.sweeps: dict[str, SweepResult] = {}
        self.decodes: list[tuple[str, Path, DecodeRecord]] = []
        self.lesson1: ProfileResult | None = None
        self.colocate: Path | None = None
        self.implausible: list[tuple[str, str]] = []  # (step, why): records no device can have made

    def step(self, folder: Path) -> None:
        name = folder.name
        try:
            if name.startswith("decode"):
                self._decode(folder)
            elif name == "colocate":
                self.colocate = folder / "colocate.json" if (folder / "colocate.json").is_file() else None
            elif name == "ncu":
                self._ncu(folder)
            else:
                self._read(folder)
        except ImplausibleMeasurement as e:
            self.implausible.append((name, self._shown(e.problem)))
            self.notes.append(f"records/{name}: cannot be read: {self._shown(e.message)}")
        except (ParseError, UsageError) as e:
            self.notes.append(f"records/{name}: cannot be read: {self._shown(e.message)}")

    def _add(self, step: str, file: Path, result: RecordResult, headline: str) -> RecordResult:
        rel = f"records/{step}/{file.name}" if file.is_file() else f"records/{step}/"
        if self.relocate is not None:
            # the results name the file they were read from: the archive's member, not a
            # temporary folder that is gone once this returns
            tmp, shown = self.relocate
            text = result.model_dump_json().replace(json.dumps(tmp)[1:-1], json.dumps(shown)[1:-1])
            result = type(result).model_validate_json(text)
            headline = headline.replace(tmp, shown)
        self.records.append(RunRecord(step=step, file=rel, kind=result.kind, headline=headline, result=result))
        return result

    def _shown(self, text: str) -> str:
        return text.replace(*self.relocate) if self.relocate is not None else text

    def _read(self, folder: Path) -> None:
        """lesson1 (torchprof's JSON, the lesson1 JSON beside it), a sweep, nsys's CSVs."""
        step = folder.name
        for name in ("torchprof.json", "sweep.json", "lesson1.json"):
            if (folder / name).is_file():
                target = folder / name
                break
        else:
            if not any(folder.glob("*.csv")):
                self.notes.append(f"records/{step}: empty (the step left no record)")
                return
            target = folder
        result = self.read(target)
        if isinstance(result, SweepResult):
            kept = self._add(step, target, result, result.headline)
            assert isinstance(kept, SweepResult)
            self.sweeps[step] = kept
        elif isinstance(result, ProfileResult):
            kept = self._add(step, target, result, _profile_headline(result))
            if step == "lesson1" and isinstance(kept, ProfileResult):
                self.lesson1 = kept
        else:
            self.notes.append(f"records/{step}: {target.name} is not a record this run writes")

    def _ncu(self, folder: Path) -> None:
        csv = folder / "ncu.csv"
        if not csv.is_file():
            self.notes.append("records/ncu: no ncu.csv (the step left no output)")
            return
        text = csv.read_text(encoding="utf-8", errors="replace")
        log = folder.parent.parent / "logs" / "ncu.log"  # ncu's own lines may have gone to stderr
        if log.is_file():
            text += "\n" + log.read_text(encoding="utf-8", errors="replace")
        blocked = detect_counter_permission_error(text)
        if blocked:
            self.notes.append(
                "ncu could not read the GPU's performance counters on this machine (ERR_NVGPUCTRPERM): a finding "
                f"about the machine, not a failure of the run: {blocked.strip()[:200]}"
            )
            return
        result = self.read(csv)
        if isinstance(result, NcuResult):
            head = "; ".join(f"{k.short_name}: {k.verdict}" for k in result.kernels) or "no kernel profiled"
            self._add("ncu", csv, result, "counters read: " + head)

    def _decode(self, folder: Path) -> None:
        path = folder / "decode.json"
        if not path.is_file():
            self.notes.append(f"records/{folder.name}: no decode.json (the step left no record)")
            return
        record = load_decode_record(path)
        if record is None:
            self.notes.append(f"records/{folder.name}: decode.json is not decode.py's record")
            return
        self.decodes.append((folder.name, path, record))

    def _plateau(self, device: str, facts: dict[str, Any]) -> tuple[Bandwidth | None, list[str]]:
        """The run's own DRAM plateau (its torch sweeps, 16-bit first on a GPU), else the spec."""
        order = ["sweep-torch-float16", "sweep-torch-float32"]
        if device == "cpu":
            order.reverse()
        for step in order:
            s = self.sweeps.get(step)
            if s is not None and s.summary.dram_tbps is not None:
                label = f"measured DRAM plateau of this run's {step} ({s.dtype})"
                return Bandwidth(tbps=s.summary.dram_tbps, basis="measured", label=label), [f"the floor: the {label}"]
        if device == "cpu":
            return None, ["no floor: this run's CPU sweep reached no DRAM plateau (its sizes stayed in the cache)"]
        spec = spec_bandwidth(_device_name(facts), None)
        if spec is None:
            return None, ["no floor: the GPU is not in the spec table and the run's sweep reached no plateau"]
        return spec, [f"the floor's bandwidth: the {spec.label} (this run's sweep reached no DRAM plateau)"]

    def figures(self, device: str, facts: dict[str, Any]) -> RunFigures:
        """Decode and colocate analysed with the run's plateau; what the checks read."""
        bandwidth, bw_notes = self._plateau(device, facts)
        for step, path, record in self.decodes:
            bw = bandwidth
            if bw is not None and record.model.dtype:
                spec = spec_bandwidth(_device_name(facts), record.model.dtype)
                if spec is not None:
                    bw = bw.model_copy(update={"peak_tflops": spec.peak_tflops, "peak_label": spec.peak_label})
            build = build_decode(
                record,
                None,
                bandwidth=bw,
                bandwidth_notes=bw_notes,
                no_trace_reason="steps come from the script's own timing (the run keeps no decode trace)",
            )
            self._add(step, path, build.result, build.headline or "")
        if self.colocate is not None:
            try:
                rec = load_colocate_record(self.colocate)
                result: ColocateResult = build_colocate(
                    rec,
                    plateau_tbps=bandwidth.tbps if bandwidth else None,
                    basis=bandwidth.basis if bandwidth else None,
                    label=bandwidth.label if bandwidth else None,
                )
                self._add("colocate", self.colocate, result, result.headline)
            except ImplausibleMeasurement as e:
                self.implausible.append(("colocate", self._shown(e.problem)))
                self.notes.append(f"records/colocate: cannot be read: {self._shown(e.message)}")
            except ParseError as e:
                self.notes.append(f"records/colocate: cannot be read: {self._shown(e.message)}")
        name = _device_name(facts)
        ran_on = "cpu" if device == "cpu" else "cuda"
        return RunFigures(
            device_type=ran_on,
            spec=lookup(name) if ran_on == "cuda" else None,
            device_name=name,
            lesson1=self.lesson1,
            sweeps=list(self.sweeps.items()),
            decodes=[(step, rec) for step, _, rec in self.decodes],
            colocate=next((r.result for r in self.records if isinstance(r.result, ColocateResult)), None),
            implausible=list(self.implausible),
        )


def _device_name(facts: dict[str, Any]) -> str | None:
    torch = facts.get("torch")
    if isinstance(torch, dict) and isinstance(torch.get("device"), dict):
        name = torch["device"].get("name")
        if isinstance(name, str):
            return name
    smi = facts.get("nvidia_smi")
    gpus = smi.get("gpus") if isinstance(smi, dict) else None
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) and isinstance(gpus[0].get("name"), str):
        return str(gpus[0]["name"])
    return None


def _profile_headline(p: ProfileResult) -> str:
    parts = []
    for r in p.ranges:
        if r.rates is None:
            continue
        if r.name == "compute_bound_gemm":
            parts.append(f"{r.name} {sig(r.rates.tflops)} TFLOP/s")
        else:
            parts.append(f"{r.name} {sig(r.rates.tbps)} TB/s")
    where = f" ({p.profiler}, {p.device_name or p.device_type})"
    return (", ".join(parts) or "no timed range with a rate") + where


def _comparisons(sweeps: dict[str, SweepResult], notes: list[str]) -> list[RunRecord]:
    out = []
    for torch_step, triton_step in IMPL_PAIRS:
        a, b = sweeps.get(torch_step), sweeps.get(triton_step)
        if a is None or b is None:
            continue
        try:
            cmp = compare_impls(a, b)
        except (UsageError, ValueError) as e:
            notes.append(f"{torch_step} against {triton_step}: {e}")
            continue
        out.append(
            RunRecord(
                step=f"{torch_step} vs {triton_step}",
                file=f"records/{torch_step}/sweep.json + records/{triton_step}/sweep.json",
                kind=cmp.kind,
                headline=f"{cmp.verdict}: {cmp.reason}",
                result=cmp,
            )
        )
    return out
