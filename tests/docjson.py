"""docs/json.md, written from the result models: for every command that takes `--json`,
the shape of the one document it prints.

    python tests/docjson.py --write    # rewrite docs/json.md
    python tests/docjson.py --check    # exit 1 when docs/json.md is not what this writes

tests/test_docs.py fails when the page differs from what this writes today. To change
the page, change this file (the prose of a field is in PROSE, the commands in SECTIONS)
or the models, then run it with --write.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docshape import Shape, model_at, shape_of, write_shape

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "json.md"
REGENERATE = "python tests/docjson.py --write"

# Every model the page shows, by its dotted path: the one place to edit when a module moves.
MODELS: dict[str, str] = {
    "ConfigView": "nsightlab.configure.ConfigView",
    "NodesReport": "nsightlab.k8s.inventory.NodesReport",
    "PodsReport": "nsightlab.k8s.inventory.PodsReport",
    "PodDetail": "nsightlab.k8s.inventory.PodDetail",
    "NodeDetail": "nsightlab.k8s.inventory.NodeDetail",
    "LabPod": "nsightlab.k8s.labpod.LabPod",
    "StatusReport": "nsightlab.k8s.labpod.StatusReport",
    "EventsReport": "nsightlab.k8s.labpod.EventsReport",
    "CopyResult": "nsightlab.k8s.labpod.CopyResult",
    "CleanupReport": "nsightlab.k8s.labpod.CleanupReport",
    "DoctorReport": "nsightlab.k8s.doctor.DoctorReport",
    "ProfileResult": "nsightlab.analysis.profile_models.ProfileResult",
    "DecodeResult": "nsightlab.analysis.decode_models.DecodeResult",
    "NcuResult": "nsightlab.analysis.ncu_result.NcuResult",
    "TraceResult": "nsightlab.analysis.decode_models.TraceResult",
    "GpuRunResult": "nsightlab.analysis.gpurun_result.GpuRunResult",
    "SweepResult": "nsightlab.analysis.sweep_result.SweepResult",
    "SweepImpls": "nsightlab.analysis.sweep_impls.SweepImpls",
    "SweepCompare": "nsightlab.analysis.sweep_result.SweepCompare",
    "FleetResult": "nsightlab.analysis.fleet_models.FleetResult",
    "FleetStatusReport": "nsightlab.analysis.fleet_models.FleetStatusReport",
    "PackReport": "nsightlab.analysis.pack_plan.PackReport",
    "ColocateResult": "nsightlab.analysis.colocate_models.ColocateResult",
    "TokenizerResult": "nsightlab.analysis.tokenizer_result.TokenizerResult",
    "RunsList": "nsightlab.runs.listing.RunsList",
    "RunDetail": "nsightlab.runs.listing.RunDetail",
    "RemovedRuns": "nsightlab.runs.listing.RemovedRuns",
    "ReportFiles": "nsightlab.present.doc.ReportFiles",
    "ReportDoc": "nsightlab.present.doc.ReportDoc",
    "DecodeFloor": "nsightlab.analysis.roofline.DecodeFloor",
}


@dataclass(frozen=True)
class Doc:
    """One document a command prints with --json: when (the command line), the model (a
    key of MODELS), or for a document that is no model of nsightlab's (model None) a name
    for it (`label`) and what it is (`text`)."""

    when: str
    model: str | None
    extra: tuple[str, ...] = ()  # keys the command adds to the model's own by hand
    text: str = ""
    label: str = ""


# Each command that takes --json (its path, as `nsightlab PATH --json`), in the manual's
# order, and the documents it prints.
SECTIONS: dict[str, list[Doc]] = {
    "config": [Doc("config --json", "ConfigView")],
    "explore nodes": [Doc("explore nodes --json", "NodesReport")],
    "explore pods": [Doc("explore pods --json", "PodsReport")],
    "explore pod": [Doc("explore pod NAME --json", "PodDetail")],
    "explore node": [Doc("explore node NAME --json", "NodeDetail")],
    "create": [
        Doc("create --json", "LabPod"),
        Doc(
            "create --dry-run --json",
            None,
            label="the Pod manifest",
            text="The manifest `create` would send, as a JSON object (`apiVersion`, `kind: Pod`, `metadata`, "
            "`spec`): Kubernetes' own shape, built from `manifests/pod.yaml` and `config.yaml`, not a model of "
            "nsightlab's.",
        ),
    ],
    "status": [Doc("status --json", "StatusReport")],
    "events": [Doc("events --json", "EventsReport")],
    "copy": [Doc("copy SRC DST --json", "CopyResult")],
    "cleanup": [Doc("cleanup --json", "CleanupReport")],
    "doctor": [Doc("doctor --json", "DoctorReport", extra=("ok",))],
    "profile": [Doc("profile SCRIPT --json", "ProfileResult"), Doc("profile decode --json", "DecodeResult")],
    "ncu": [Doc("ncu --json", "NcuResult")],
    "analyze": [
        Doc(
            "analyze PATH --json",
            None,
            label="what PATH holds decides",
            text="nsys output (`nsys stats` console text or CSV exports, a "
            "SQLite export, a `.nsys-rep`) or a lesson1 or torch.profiler JSON: ProfileResult, as `profile`; ncu "
            "CSVs: NcuResult, as `ncu`; a sweep JSON: SweepResult, as `sweep`; decode.py's JSON, alone or with its "
            "capture's exports or trace beside it: DecodeResult, as `profile decode`; a stored run (its id, a "
            "prefix, `latest`, its folder): the result stored for it, the document of its kind's command; a GPU "
            "timeline alone (`cuda_gpu_trace` exports, a Kineto trace): TraceResult; the folder `bench/gpu_run.sh` "
            "wrote: GpuRunResult.",
        ),
        Doc("analyze TRACE --json", "TraceResult"),
        Doc("analyze OUTDIR --json", "GpuRunResult"),
    ],
    "sweep": [
        Doc("sweep --json", "SweepResult"),
        Doc("sweep --impl torch,triton --json", "SweepImpls"),
        Doc("sweep --compare RUN --compare RUN --json", "SweepCompare"),
    ],
    "fleet sweep": [
        Doc("fleet sweep --json", "FleetResult"),
        Doc(
            "fleet sweep --dry-run --json",
            None,
            label="the ConfigMap and the Jobs",
            text="A JSON list of the objects the fleet would create, the ConfigMap first, then one Job per target, "
            "in the order the fleet creates them: Kubernetes' own shapes (built from `manifests/fleet-job.yaml`), "
            "not a model of nsightlab's.",
        ),
    ],
    "fleet collect": [Doc("fleet collect ID --json", "FleetResult")],
    "fleet status": [Doc("fleet status --json", "FleetStatusReport")],
    "pack": [Doc("pack --json", "PackReport")],
    "pack colocate": [Doc("pack colocate --json", "ColocateResult")],
    "pack tokenizer": [Doc("pack tokenizer --json", "TokenizerResult")],
    "runs": [Doc("runs --json", "RunsList")],
    "runs list": [Doc("runs list --json", "RunsList")],
    "runs show": [Doc("runs show RUN --json", "RunDetail")],
    "runs rm": [Doc("runs rm RUN... --json", "RemovedRuns")],
    "report": [
        Doc("report --json", "ReportFiles"),
        Doc(
            "report --terminal --json",
            "ReportDoc",
            text="With `--terminal` and neither `--out` nor `--open`: the report itself, as the terminal shows it.",
        ),
    ],
    "roofline": [Doc("roofline --weights-gb GB --json", "DecodeFloor")],
}

# One line for a field that needs explaining, keyed by model and field: shown under the
# first document that holds the model. A key that names no field of a shown model fails
# tests/test_docs.py.
PROSE: dict[str, str] = {
    "ConfigView.config": "the configuration as loaded, defaults filled in; `values` the same, key by key, with "
    "where each came from (`source`).",
    "ConfigView.placeholders": "keys of the starter config still holding a placeholder (`CHANGE-ME`).",
    "NodeRow.gpu_requested": "GPUs the node's pods request, native sidecars counted as the scheduler counts them.",
    "NodesReport.lab_gpus_free": "free GPUs on the nodes of `lab_instance_type`, the lab pod's.",
    "PodsReport.namespace": "null with `--all-namespaces`.",
    "ContainerInfo.kind": "`init`, `sidecar` (an init container with `restartPolicy: Always`) or `app`.",
    "LabPod.seconds_left": "time before the pod deletes itself, counted from its start on the cluster's clock, "
    "within [0, activeDeadlineSeconds].",
    "LabPod.clock_ahead_s": "how far the pod's start is ahead of this machine's clock, when more than 30 s (then "
    "`seconds_left` cannot be told from here), else null.",
    "LabPod.scheduler": "while Pending without a node, why, in the scheduler's words; null once bound.",
    "StatusReport.note": "why the session's pod counts as gone (e.g. replaced under its name), else null.",
    "EventsReport.uid": "null when the pod is gone: every Event about its name is shown.",
    "CopyResult.direction": "`in` (to the pod) or `out`.",
    "CopyResult.digests": "relative path to sha256, every file checked on both ends.",
    "CleanupReport.context": "null (and `note` says so) with no lab session and no `--context`: nothing to delete.",
    "CleanupReport.skipped": "pods that are not yours, never touched.",
    "CleanupReport.fleets": "with `--fleet ID` or `--all-mine`: the fleets' Jobs and ConfigMaps.",
    "DoctorReport.ok": "false when a check failed (`ok` false in `checks`); the exit code is then 4.",
    "Check.ok": "true: pass; false: FAIL (with its `fix`); null: info, a check skipped or a fact the lab does not "
    "depend on.",
    "ProfileResult.profiler": "`none` for a lab script's JSON analysed alone (`analyze lesson1.json`): no profiler "
    "ran, the kernel tables are empty and the rates come from the script's own timing.",
    "ProfileResult.nsys_input": "what was read of nsys's output: `sqlite` (the report's export) or `stats` (nsys "
    "stats CSVs); null without nsys.",
    "ProfileResult.steps": "with a GPU timeline (a SQLite export, a trace): a step object per group of steps, as in "
    "TraceResult; null without one.",
    "RangeLine.rates": "null when the script wrote no work description (bytes and FLOPs per call) for the range.",
    "DecodeResult.batch_sweep": "with two batch sizes or more: measured and predicted tokens/s per batch.",
    "DecodeSteps.floor": "the step's memory floor: the bytes a step reads (decode.py's model; for a trace, "
    "`--weights-gb` and `--kv-gb`) over the DRAM bandwidth, a measured plateau or the spec (`basis`).",
    "TraceResult.steps": "one object per group of steps (`group` names it): the step anatomy of `profile decode`.",
    "GpuRunResult.device": "what the run asked for: `cuda` or `cpu`.",
    "RunStep.status": '`blocked`: the tool answered "not permitted" (ncu\'s ERR_NVGPUCTRPERM), a finding.',
    "RunRecord.result": "the record analysed as the lab analyses it: the document of its `kind`.",
    "SweepResult.source": "the file it was read from (`analyze`), if not a fresh run.",
    "SweepResult.interpreted": "Triton's interpreter ran it (no GPU): correctness only.",
    "SweepResult.compare": "with `--compare RUN`: the comparison with the stored run, as SweepCompare.",
    "SweepResult.record": "the script's own JSON (sweep.py's record).",
    "SweepResultRow.spread": "(slowest - fastest timed batch) / median: the noise of the figure; null without batches.",
    "SweepSummary.plateau_status": "`plateau` needs two DRAM-bound sizes within 10% of each other.",
    "ImplPair.ratio": "`us_triton / us_torch`: below 1, Triton is faster.",
    "ImplSide.bytes_per_element": "bytes one call moves per element: 2 x kernels x element size.",
    "SweepImpls.plateau_ratio": "Triton's DRAM plateau over torch's (TB/s).",
    "SweepCompare.b": "the run with the larger elements; ratios are b / a.",
    "SweepCompare.tbps_ratio": "median over `dram_sizes`, else the ratio of the plateaus.",
    "FleetEntry.outlier": "with `--every-node`: more than 10% below its type's median plateau.",
    "FleetType.measured": "nodes measured; the figures are their median.",
    "FleetJobs.waiting": "Jobs in the plan, not created yet (the fleet was interrupted before).",
    "PackWorkload.held_gib": "each GPU's memory: the pod holds the whole card.",
    "ColocateResult.device": "the GPU's name, or `cpu (NAME)`.",
    "ColocateResult.flattens_at": "per sharing, the K where aggregate tokens/s flattens (null: it still grows).",
    "ColocateResult.mps": "why MPS was not measured, or null when it was.",
    "TokenizerResult.ms_per_request": "CPU ms to tokenize one request, on one core.",
    "TokenizerResult.pod_cpu": "the CPU one pod asks for (`lab.cpu`, or `--pod-cpu`).",
    "RunLine.where": "the context the run used, or `local`.",
    "RunLine.impl": "a sweep's implementation, `torch` or `triton`; else null.",
    "RunLine.problem": "why the run is damaged (`damaged`) or not complete, else null.",
    "RunDetail.result": "the run's result.json as stored: the document of its kind; null when it has none.",
    "ReportFiles.runs": "the ids of the runs reported.",
    "ReportDoc.sections": "what report.md and the terminal show, every number already formatted.",
    "DecodeFloor.weight_bytes": "a count of bytes: 16 GB is 16000000000.",
    "FloorLine.estimate": "the plateau came from sizes that may still be partly cached.",
}

INTRO = """\
# JSON output

<!-- Written by `python tests/docjson.py --write` from the result models: change the generator or the models,
     not this page (tests/test_docs.py fails when the two differ). -->

Every command that shows data takes `--json` and then prints one JSON document on stdout: the
typed result the command draws as tables, as it is (pydantic's `model_dump_json`). Below, for
each command, the shape of that document.

## The rules

- **One document on stdout.** With `--json`, stdout holds exactly one JSON document and
  nothing else, so `nsightlab ... --json | jq` always reads it whole.
- **Notes on stderr.** Progress, notes, warnings, the line naming the context and the
  question before a change, and error lines go to stderr, never into the document.
- **Errors.** A command that fails before it has a result prints nothing on stdout: one
  line on stderr and its exit code ([exit-codes.md](exit-codes.md)). One whose result says
  what failed (`doctor` with a failed check, a fleet with failed Jobs) prints its document,
  then exits with the code.
- **Values.** A figure that does not apply is `null`; numbers are finite (never NaN or
  Infinity); times are ISO 8601. Strings are as they came (names and messages from the
  cluster or a trace included), with the characters a terminal could act on written as
  JSON's `\\u` escapes, which a JSON reader turns back into the same string.
- **Fields are only added within a version.** A key keeps its name, its meaning and its
  type for every release of one version of nsightlab (`nsightlab --version`); a new key
  may appear, so read the keys you need and pass over the others.
- **A renamed field is said here**, under "Renamed fields", with the version that renamed it.

## Renamed fields

None yet (nsightlab 0.1.0).

## How the shapes are written

An object lists its keys, `{"name", "instances"}`; a key whose value has a shape of its own
shows it: `"nested": {"a", "b"}`, a list of objects `"items": [{"x"}]`, a list of strings or
numbers `"notes": []`, a map with keys of its own `"facts": {}`. A key that takes a few fixed
values shows them: `"kind": "gpu-run"`, `"profiler": "nsys|torch|none"`. `| null` follows an
object or list that may be null; `{...} | {...}` separates the kinds of object a list may hold,
told apart by their `type`. A model's name in quotes, `"runs": ["SweepResult"]`, stands for the
document shown under that name on this page. Every key of every document is shown; an object a
lab script wrote (a sweep's `record`) keeps any key the script adds, as said under its document.

Each block is marked with the model it comes from (`<!-- json: nsightlab.module.ModelName -->`
in the page's source); the other pages mark theirs the same way, and `tests/test_docs.py`
checks every such block against its model, key by key.
"""


def model(name: str) -> Any:
    return model_at(MODELS[name])


def _titles(shape: Shape, seen: set[str]) -> set[str]:
    """The models a shape holds, itself included (not through a name that stands for one)."""
    out: set[str] = set()
    if shape.kind == "object" and shape.title:
        out.add(shape.title)
    for _, sub in shape.fields:
        if not (sub.kind == "object" and sub.title in seen):
            out |= _titles(sub, seen)
    for sub in (shape.item, *shape.options):
        if sub is not None and not (sub.kind == "object" and sub.title in seen):
            out |= _titles(sub, seen)
    return out


def shown_models() -> list[str]:
    """The models with a document of their own, in the page's order."""
    return list(dict.fromkeys(d.model for docs in SECTIONS.values() for d in docs if d.model))


def _paths(shape: Shape, refs: set[str], at: str = "") -> dict[str, str]:
    """Where each model a document holds first appears in it: "" for the document itself,
    `checks[].` for the items of its `checks`."""
    out: dict[str, str] = {}
    if shape.kind == "object" and shape.title:
        if shape.title in refs:
            return out
        out[shape.title] = at
        for key, sub in shape.fields:
            for title, path in _paths(sub, refs, f"{at}{key}.").items():
                out.setdefault(title, path)
        return out
    if shape.kind in ("list", "map") and shape.item is not None:
        return _paths(shape.item, refs, at.removesuffix(".") + ("[]." if shape.kind == "list" else "{}."))
    for option in shape.options:
        for title, path in _paths(option, refs, at).items():
            out.setdefault(title, path)
    return out


def _open_paths(shape: Shape, refs: set[str], at: str = "") -> list[str]:
    """Every place in a document where an object keeps keys beyond those shown."""
    if shape.kind == "object":
        if shape.title in refs:
            return []
        here = [at.removesuffix(".") or "the document"] if shape.open else []
        return here + [p for key, sub in shape.fields for p in _open_paths(sub, refs, f"{at}{key}.")]
    if shape.kind in ("list", "map") and shape.item is not None:
        return _open_paths(shape.item, refs, at.removesuffix(".") + ("[]." if shape.kind == "list" else "{}."))
    return [p for option in shape.options for p in _open_paths(option, refs, at)]


def _prose_for(shape: Shape, refs: set[str], done: set[str]) -> list[str]:
    """The PROSE lines of the fields this document holds, each named by its path in the
    document (`checks[].ok`), those shown under an earlier document left out."""
    where = _paths(shape, refs - {shape.title or ""})
    lines = []
    for key, text in PROSE.items():
        owner, _, name = key.partition(".")
        if owner in where and key not in done:
            done.add(key)
            lines.append(f"- `{where[owner]}{name}`: {text}")
    return lines


def page() -> str:
    """docs/json.md, as the models are today."""
    refs = set(shown_models())
    done: set[str] = set()
    first: dict[str, str] = {}  # each model: the command line of the document that shows it
    out = [INTRO, "## The documents", "", "| command | document |", "|---|---|"]
    out += [f"| `nsightlab {d.when}` | {d.model or d.label} |" for docs in SECTIONS.values() for d in docs]
    out.append("")
    for command, docs in SECTIONS.items():
        out += [f"### {command}", ""]
        for doc in docs:
            if doc.model is None:
                out += [f"`nsightlab {doc.when}`: {doc.label}. {doc.text}", ""]
                continue
            if doc.model in first:
                out += [f"`nsightlab {doc.when}`: {doc.model}, as `nsightlab {first[doc.model]}`.", ""]
                continue
            first[doc.model] = doc.when
            shape = shape_of(model(doc.model))
            marker = MODELS[doc.model] + "".join(f" + {k}" for k in doc.extra)
            out += [f"`nsightlab {doc.when}`: {doc.model}", ""]
            if doc.text:
                out += [doc.text, ""]
            out += [f"<!-- json: {marker} -->", "```json"]
            out.append(write_shape(shape, extra=doc.extra, refs=frozenset(refs - {doc.model})))
            out += ["```", ""]
            prose = _prose_for(shape, refs, done)
            wide = _open_paths(shape, refs - {doc.model})
            if wide:
                listed = ", ".join(f"`{p}`" for p in wide)
                prose.append(f"- {listed}: as the lab script wrote them, with any key it adds beyond these.")
            if prose:
                out += [*prose, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def prose_problems() -> list[str]:
    """PROSE keys that name no field of a model the page shows (a field renamed or gone)."""
    refs = set(shown_models())
    fields: set[str] = set()
    for docs in SECTIONS.values():
        for doc in docs:
            if doc.model is None:
                continue
            fields |= {f"{doc.model}.{k}" for k in doc.extra}
            fields |= _fields(shape_of(model(doc.model)), refs - {doc.model})
    return [f"PROSE[{key!r}]: no model on the page has this field" for key in PROSE if key not in fields]


def _fields(shape: Shape, refs: set[str]) -> set[str]:
    out: set[str] = set()
    if shape.kind == "object" and shape.title:
        if shape.title in refs:
            return out
        out |= {f"{shape.title}.{k}" for k, _ in shape.fields}
    for _, sub in shape.fields:
        out |= _fields(sub, refs)
    for sub in (shape.item, *shape.options):
        if sub is not None:
            out |= _fields(sub, refs)
    return out


def page_problem(text: str) -> str | None:
    """Why `text` (docs/json.md as it is) is not the page the models give today, or None."""
    want = page()
    if text == want:
        return None
    have_lines, want_lines = text.splitlines(), want.splitlines()
    pairs = zip(have_lines, want_lines, strict=False)
    number = next((i for i, (have, wanted) in enumerate(pairs, 1) if have != wanted), None)
    if number is None:
        number = min(len(have_lines), len(want_lines)) + 1
    return f"docs/json.md differs from what the models give from line {number} on; run `{REGENERATE}`"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/json.md from the result models.")
    parser.add_argument("--write", action="store_true", help="rewrite docs/json.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/json.md differs")
    args = parser.parse_args(argv)
    problems = prose_problems()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    text = page()
    if args.write:
        PAGE.write_text(text, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}", file=sys.stderr)
        return 0
    if args.check:
        problem = page_problem(PAGE.read_text(encoding="utf-8") if PAGE.exists() else "")
        if problem:
            print(problem, file=sys.stderr)
        return 1 if problem else 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
