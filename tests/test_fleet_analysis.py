"""The fleet's pure parts: the result in a Job's log, outliers among nodes of a type, the
decode floor and its price per type, exit codes, the Job manifests, prices in the config,
and the wrapper that prints the result (a real subprocess)."""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import run_cli

from nsightlab import assets
from nsightlab.analysis.fleet_models import FleetPlan, FleetTarget
from nsightlab.analysis.fleet_result import build_fleet_result, cheapest, measured_entry, outcome_entry, summarize_types
from nsightlab.analysis.sweep_result import SweepResult, build_result
from nsightlab.cluster import fleetjobs as fj
from nsightlab.configure import starter_text
from nsightlab.errors import ExitCode, UsageError
from nsightlab.k8s.labmatch import too_small
from nsightlab.measure.fleet_runner import failure, parse_prices
from nsightlab.parse.records.fleetrun_log import RESULT_BEGIN, RESULT_END, extract_result, tail
from nsightlab.parse.records.sweep_record import record_from_json
from nsightlab.specs.gpus import BY_KEY, REFERENCE_SWEEPS
from nsightlab.userconfig import Config, LabConfig

G7E, L4 = "g7e.8xlarge", "g6.xlarge"
TUTORIAL = REFERENCE_SWEEPS["tutorial-rtx-pro-6000"].as_sweep_json()
PRICES = {G7E: 3.14, L4: 0.805}


def analysed(record: dict[str, Any], run_id: str) -> SweepResult:
    return build_result(record_from_json(record, source="test"), target="test", run_id=run_id)


def slowed(record: dict[str, Any], factor: float) -> dict[str, Any]:
    """The tutorial's recorded sweep with its DRAM-bound sizes (2^28, 2^30) `factor` times
    slower: a node whose memory delivers 1/factor of its siblings'."""
    out = copy.deepcopy(record)
    for row in out["rows"]:
        if row["log2"] >= 28:
            row["seconds_per_call"] *= factor
    return out


def l4_record(plateau_tbps: float) -> dict[str, Any]:
    """An L4 sweep whose DRAM plateau is `plateau_tbps`. No recorded L4 sweep is at hand:
    the tutorial gives only its ~300 GB/s spec, so the tests take 80% of it, the share the
    tutorial's RTX PRO 6000 reached of its own spec (1.46 of 1.597 TB/s is 91%) and less."""
    rows = []
    l2 = BY_KEY["l4"].l2_bytes or 0
    for log2 in (16, 20, 22, 24, 26, 28, 30):
        n = 1 << log2
        moved = 2 * n * 2
        bw = 1.0e12 if n * 2 <= l2 else plateau_tbps * 1e12
        rows.append({"log2": log2, "elements": n, "bytes_per_call": moved, "seconds_per_call": max(6e-6, moved / bw)})
    return {
        "kind": "sweep",
        "schema": 1,
        "op": "scale",
        "dtype": "float16",
        "element_size": 2,
        "iters": 50,
        "warmup": 5,
        "device": {"type": "cuda", "name": "NVIDIA L4"},
        "rows": rows,
        "skipped": [],
    }


def target(itype: str, node: str | None = None) -> FleetTarget:
    spec = {"g7e": BY_KEY["rtx-pro-6000-server"], "g6": BY_KEY["l4"]}[itype.split(".")[0]]
    return FleetTarget(
        key=node or itype,
        instance_type=itype,
        node=node,
        job=f"nsl-fleet-abc123-{node or itype}",
        gpu_product=spec.name,
    )


def plan(targets: list[FleetTarget], **extra: Any) -> FleetPlan:
    return FleetPlan(
        fleet_id="abc123",
        context="stg",
        namespace="ml-lab",
        owner="ana",
        created=datetime.now(timezone.utc),
        dtype="float16",
        targets=targets,
        **extra,
    )


# ---------------------------------------------------------------------------- the log


def test_the_result_is_cut_from_between_the_markers() -> None:
    doc = {"kind": "sweep", "rows": [1, 2]}
    log = f"2^10 elems ...\nsweep: wrote x\n{RESULT_BEGIN}\n{json.dumps(doc)}\n{RESULT_END}\n"
    assert extract_result(log) == (doc, None)
    assert tail(log) == ["2^10 elems ...", "sweep: wrote x"]
    # the last block wins (a restarted container would print another)
    assert extract_result(log + f'{RESULT_BEGIN}\n{{"kind": "again"}}\n{RESULT_END}\n')[0] == {"kind": "again"}
    data, why = extract_result("sweep.py: torch cannot see the GPU: CPU-only build\n")
    assert data is None and why is not None and "no result" in why
    data, why = extract_result(f'{RESULT_BEGIN}\n{{"kind": "sw')
    assert data is None and why is not None and "cut short" in why
    data, why = extract_result(f"{RESULT_BEGIN}\n{{not json\n{RESULT_END}\n")
    assert data is None and why is not None and "not valid JSON" in why


def test_the_wrapper_prints_the_json_between_markers_and_passes_failures_on(tmp_path: Path) -> None:
    script = tmp_path / "fake.py"
    script.write_text(
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "if '--fail' in args:\n"
        "    print('fake.py: torch cannot see the GPU: CPU-only build', file=sys.stderr); sys.exit(3)\n"
        "print('row 1')\n"
        "json.dump({'kind': 'sweep', 'args': args[:-2]}, open(args[args.index('--json') + 1], 'w'))\n"
    )
    wrapper = str(assets.lab_script("fleetrun.py"))
    # what runs in the Job's image: Python 3.8 or later, the standard library only
    tree = ast.parse(Path(wrapper).read_text(), feature_version=(3, 8))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported - set(sys.stdlib_module_names) == set()
    ok = subprocess.run(
        [sys.executable, wrapper, str(script), "--dtype", "float32"], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == "row 1"
    assert extract_result(ok.stdout) == ({"kind": "sweep", "args": ["--dtype", "float32"]}, None)
    bad = subprocess.run([sys.executable, wrapper, str(script), "--fail"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 3
    assert RESULT_BEGIN not in bad.stdout
    assert bad.stderr.strip().splitlines()[-1] == "fake.py: torch cannot see the GPU: CPU-only build"


# ---------------------------------------------------------------------------- outliers


def test_a_node_20_percent_slower_than_its_siblings_is_flagged() -> None:
    nodes = [f"ip-10-0-0-{i}.ec2.internal" for i in range(5)]
    factors = [1.0, 1.0, 1.05, 1.0, 1.25]  # the fourth is 5% slower: within the margin
    entries = [
        measured_entry(target(G7E, n), analysed(slowed(TUTORIAL, f), f"r{i}"), node=n)
        for i, (n, f) in enumerate(zip(nodes, factors, strict=True))
    ]
    assert entries[0].dram_tbps == pytest.approx(1.46, abs=0.01)
    assert entries[4].dram_tbps == pytest.approx(1.46 / 1.25, abs=0.01)
    result = build_fleet_result(plan([target(G7E, n) for n in nodes], every_node=True), entries)
    assert [e.outlier for e in result.entries] == [False, False, False, False, True]
    assert result.types[0].measured == 5
    assert result.types[0].dram_tbps == pytest.approx(1.46, abs=0.01)  # the median, not the mean
    flagged = [n for n in result.notes if "outlier" in n]
    assert (
        len(flagged) == 1
        and flagged[0].startswith(nodes[4])
        and "20% below the median of its 5 g7e.8xlarge nodes" in flagged[0]
    )


def test_per_type_mode_compares_no_nodes() -> None:
    entries = [
        measured_entry(target(G7E), analysed(TUTORIAL, "r1"), node="ip-1"),
        measured_entry(target(L4), analysed(l4_record(0.24), "r2"), node="ip-2"),
    ]
    result = build_fleet_result(plan([target(G7E), target(L4)]), entries)
    assert [e.outlier for e in result.entries] == [None, None]
    assert [t.gpu_product for t in result.types] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA L4"]
    assert result.types[0].dram_pct_of_spec == pytest.approx(100 * 1.46 / 1.597, abs=1)
    assert result.headline == "g7e.8xlarge 1.46 TB/s, g6.xlarge 0.240 TB/s"


# ---------------------------------------------------------------------------- the decode floor, priced


def tutorial_types(weights_gb: float, prices: dict[str, float] | None = PRICES) -> tuple[list[Any], list[Any]]:
    entries = [
        measured_entry(target(G7E), analysed(TUTORIAL, "r1"), node="a"),
        measured_entry(target(L4), analysed(l4_record(0.24), "r2"), node="b"),
    ]
    return summarize_types(entries, weights_gb=weights_gb, prices=prices), entries


def test_16_gb_of_weights_the_l4_loses_to_the_rtx_pro_per_token() -> None:
    types, entries = tutorial_types(16)
    g7e, l4 = types
    for t, e in zip(types, entries, strict=True):  # the floor: weight bytes / the measured plateau
        assert t.decode.ms_per_token == pytest.approx(16e9 / (e.dram_tbps * 1e12) * 1e3)
        assert t.decode.tokens_per_s == pytest.approx(e.dram_tbps * 1e12 / 16e9)
        assert t.decode.usd_per_million_tokens == pytest.approx(
            PRICES[t.instance_type] / (t.decode.tokens_per_s * 3600) * 1e6
        )
        assert t.decode.fits is True and t.decode.weights_gb == 16
    assert g7e.decode.ms_per_token == pytest.approx(10.96, abs=0.05)  # the tutorial's "11.0 ms per token"
    assert l4.decode.tokens_per_s == pytest.approx(15.0, abs=0.1)
    # Cheaper per hour, dearer per token: $14.9 vs $9.55 a million tokens.
    assert l4.decode.usd_per_million_tokens == pytest.approx(14.9, abs=0.1)
    assert g7e.decode.usd_per_million_tokens == pytest.approx(9.55, abs=0.05)
    assert cheapest(types) is g7e
    assert cheapest(types, 30) is g7e  # the L4's 15 tokens/s cannot reach it
    assert cheapest(types, 100) is None  # neither can (91 tokens/s at best)
    result = build_fleet_result(
        plan([target(G7E), target(L4)], weights_gb=16, prices=PRICES, target_tokens_per_s=30), entries
    )
    assert (
        "cheapest per million tokens at the decode floor (16.0 GB fit, at least 30.0 tokens/s): g7e.8xlarge, "
        "$9.55 per million tokens (91.4 tokens/s at $3.14/h)" in result.notes
    )
    none = build_fleet_result(
        plan([target(G7E), target(L4)], weights_gb=16, prices=PRICES, target_tokens_per_s=100), entries
    )
    assert any(
        n.startswith("no priced type fits 16.0 GB and reaches 100 tokens/s (fastest: g7e.8xlarge at 91.4 tokens/s)")
        for n in none.notes
    ), none.notes


def test_a_cheaper_type_wins_when_it_is_cheaper_per_token() -> None:
    types, _ = tutorial_types(16, {G7E: 3.14, L4: 0.30})  # an L4 at $0.30/h: $5.56 a million tokens
    assert cheapest(types).instance_type == L4  # type: ignore[union-attr]
    assert cheapest(types, 30).instance_type == G7E  # type: ignore[union-attr]


def test_the_96_gb_card_for_a_1b_int4_model_sits_mostly_idle() -> None:
    types, entries = tutorial_types(0.7)
    result = build_fleet_result(plan([target(G7E), target(L4)], weights_gb=0.7, prices=PRICES), entries)
    idle = [n for n in result.notes if "sits idle" in n]
    assert idle[0].startswith("g7e.8xlarge: the weights fill 0.7% of its 96.0 GiB")
    assert all(t.decode.fits for t in types)


def test_weights_that_do_not_fit_are_said_and_not_chosen() -> None:
    types, entries = tutorial_types(30)
    assert [t.decode.fits for t in types] == [True, False]
    assert cheapest(types) is types[0]
    result = build_fleet_result(plan([target(G7E), target(L4)], weights_gb=30, prices=PRICES), entries)
    assert "g6.xlarge: 30.0 GB of weights do not fit in its 24.0 GiB GPU" in result.notes


def test_without_prices_the_floor_is_there_and_a_note_says_how_to_price_it() -> None:
    types, entries = tutorial_types(16, prices=None)
    assert types[0].decode.usd_per_million_tokens is None and types[0].decode.ms_per_token is not None
    result = build_fleet_result(plan([target(G7E), target(L4)], weights_gb=16), entries)
    assert any("--price TYPE=USD" in n for n in result.notes)
    without = build_fleet_result(plan([target(G7E), target(L4)]), entries)
    assert all(t.decode is None for t in without.types)


# ---------------------------------------------------------------------------- exit codes


def test_exit_codes_follow_the_rules() -> None:
    measured = measured_entry(target(G7E), analysed(TUTORIAL, "r1"), node="a")
    unscheduled = outcome_entry(target(L4), "not-scheduled", "0/10 nodes are available")
    p = plan([target(G7E), target(L4)])
    assert failure(build_fleet_result(p, [measured, unscheduled])) is None  # some not scheduled: a note
    none = failure(build_fleet_result(p, [unscheduled]))
    assert none is not None and none.exit_code == ExitCode.NOT_READY
    for status in ("failed", "timeout"):
        bad = failure(
            build_fleet_result(p, [unscheduled, outcome_entry(target(G7E), status, "exit 3: no GPU", node="ip-1")])
        )
        assert bad is not None and bad.exit_code == ExitCode.REMOTE
        assert "1 Job of fleet abc123 failed or timed out (g7e.8xlarge on ip-1)" in bad.message


# ---------------------------------------------------------------------------- manifests and config


def test_the_job_pins_its_target_holds_one_gpu_and_tries_once() -> None:
    template = fj.load_job_template(assets.fleet_job_template())
    cfg = Config(
        lab=LabConfig(
            image="reg.example.com/lab:1", gpus=2, cpu="2", memory="8Gi", owner="ana", node_selector={"pool": "gpu"}
        )
    )
    p = plan(
        [target(G7E, "ip-10-0-0-1.ec2.internal")], every_node=True, device="cpu", sizes=[10, 12], iters=2, warmup=0
    )
    job = fj.build_job(template, cfg, p, p.targets[0])
    spec = job["spec"]
    pod = spec["template"]["spec"]
    assert (
        spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == 1800 and spec["ttlSecondsAfterFinished"] == 86400
    )
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "ip-10-0-0-1.ec2.internal", "pool": "gpu"}
    main = pod["containers"][0]
    assert main["resources"]["limits"] == {
        "cpu": "2",
        "memory": "8Gi",
        "nvidia.com/gpu": "1",
    }  # one GPU, whatever the lab asks
    assert main["args"] == [
        "--dtype",
        "float16",
        "--device",
        "cpu",
        "--sizes",
        "10,12",
        "--iters",
        "2",
        "--warmup",
        "0",
    ]
    assert {"name": "lab-scripts", "mountPath": "/opt/nsightlab", "readOnly": True} in main["volumeMounts"]
    assert {"name": "lab-scripts", "configMap": {"name": "nsightlab-fleet-abc123"}} in pod["volumes"]
    labels = job["metadata"]["labels"]
    assert (
        labels["app.kubernetes.io/managed-by"] == "nsightlab"
        and labels["nsightlab/owner"] == "ana"
        and labels["nsightlab/fleet"] == "abc123"
    )
    assert spec["template"]["metadata"]["labels"]["nsightlab/fleet"] == "abc123"
    # auto insists on the GPU the Job asks for
    assert plan([target(G7E)]).script_args()[:4] == ["--dtype", "float16", "--device", "cuda"]
    with pytest.raises(UsageError, match="lab.image is not set"):
        fj.build_job(template, Config(), p, p.targets[0])


def test_job_names_are_dns_labels_unique_and_short() -> None:
    names = fj.job_names(
        "abc123", ["g7e.8xlarge", "G7E_8xlarge", "ip-10-0-14-201.us-east-1.compute.internal.example.com"]
    )
    assert names[0] == "nsl-fleet-abc123-g7e-8xlarge"
    assert len(set(names)) == 3 and all(len(n) <= 63 and n[-1] != "-" for n in names)


def test_prices_in_the_config_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    starter = starter_text(context="stg-online-use1", namespace="ml-lab", image="reg.example.com/lab:1")
    assert "# prices:" in starter
    uncommented = (
        starter.replace("# prices:", "prices:")
        .replace("#   g7e.8xlarge: 3.14", "  g7e.8xlarge: 3.14")
        .replace("#   g6.xlarge: 0.80", "  g6.xlarge: 0.80")
    )
    assert yaml.safe_load(uncommented)["prices"] == {"g7e.8xlarge": 3.14, "g6.xlarge": 0.80}
    assert Config.model_validate(yaml.safe_load(uncommented)).prices == {"g7e.8xlarge": 3.14, "g6.xlarge": 0.80}
    bad = tmp_path / "bad.yaml"
    bad.write_text("lab:\n  owner: ana\nprices:\n  g7e.8xlarge: -1\n")
    r = run_cli(capsys, "--config", str(bad), "config")
    assert r.code == 2
    assert (
        r.err
        == f"error: {bad}:3: bad value for 'prices': the price of g7e.8xlarge must be a positive number of USD per "
        "hour, got -1.0. See `nsightlab config` for the expected shape.\n"
    )
    assert parse_prices(["g7e.8xlarge=3.14", " g6.xlarge = 0.8 "]) == {"g7e.8xlarge": 3.14, "g6.xlarge": 0.8}
    for text, words in (
        ("g7e.8xlarge", "TYPE=USD"),
        ("g7e=3", "not an instance type"),
        ("g7e.8xlarge=free", "TYPE=USD"),
        ("g7e.8xlarge=0", "positive"),
    ):
        with pytest.raises(UsageError, match=words):
            parse_prices([text])


def test_a_type_too_small_for_the_labs_requests_is_named() -> None:
    from kubesim import realistic_cluster

    nodes = [o for o in realistic_cluster() if o["kind"] == "Node" and "nvidia.com/gpu" in o["status"]["capacity"]]
    # the tutorial's 4 CPU / 24Gi fit a g7e.8xlarge (32 vCPU, 256 GiB) and a g6.12xlarge, not a g6.xlarge (4 vCPU, 16
    # GiB)
    assert too_small(nodes, cpu="4", memory="24Gi") == [
        "g6.xlarge: a Job asks for 4 CPU and 24Gi of memory (lab.cpu, lab.memory) and its nodes have at most "
        "3.87 CPU and "
        "13.8 GiB allocatable: it cannot be scheduled there; lower lab.cpu and lab.memory in config.yaml"
    ]
    assert too_small(nodes, cpu="2", memory="8Gi") == []
