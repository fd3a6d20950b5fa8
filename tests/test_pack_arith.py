"""The arithmetic of `nsightlab pack`, as properties: more KV per copy never fits more
copies; a MIG slice's floor is the card's over its bandwidth fraction; the binding
constraint is the smallest limit; and the need adds up from where each part came."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsightlab.analysis.pack_plan import Bandwidth, Given, Needed, PackOptions, floor_ms, needed
from nsightlab.analysis.sharing import USABLE_FRACTION, ModeCopies, best_mode, gpus_needed, modes_for, slice_floor
from nsightlab.errors import ParseError
from nsightlab.k8s.workloads import WorkloadFacts
from nsightlab.parse.engine_args import EngineFlags
from nsightlab.parse.vllm_log import parse_text
from nsightlab.specs.mig import MigProfile, builtin_profiles, parse_profiles


def _best(modes: list[ModeCopies]) -> int:
    best = best_mode(modes)
    return 0 if best is None else best.copies


def _mig(key: str) -> list[MigProfile]:
    gpu = builtin_profiles().for_gpu(key)
    assert gpu is not None
    return gpu.profiles


PROFILES = [p for g in builtin_profiles().gpus for p in g.profiles]
memory = st.floats(min_value=8.0, max_value=200.0)
gib = st.floats(min_value=0.01, max_value=60.0)
tbps = st.floats(min_value=0.05, max_value=8.0)
step = st.one_of(st.none(), st.floats(min_value=0.05, max_value=200.0))
cpu = st.one_of(st.none(), st.integers(min_value=0, max_value=64))
mig = st.sampled_from([None, *[g.profiles for g in builtin_profiles().gpus]])


def _modes(
    mem: float,
    weights: float,
    kv: float,
    bw: float,
    target: float | None,
    cpu_copies: int | None,
    profiles: Sequence[MigProfile] | None,
) -> list[ModeCopies]:
    need = Needed(weights_gib=weights, kv_gib=kv, activation_gib=0.0, graphs_gib=0.0, other_gib=0.0)
    floor = floor_ms(need, Bandwidth(tbps=bw, basis="spec", label="test"))
    return modes_for(
        memory_gib=mem,
        need_gib=weights + kv,
        floor_ms=floor,
        target_step_ms=target,
        cpu_copies=cpu_copies,
        mig=profiles,
    )


@settings(max_examples=150)
@given(memory, gib, gib, gib, tbps, step, cpu, mig)
def test_more_kv_per_copy_never_fits_more_copies(
    mem: float,
    weights: float,
    kv: float,
    more: float,
    bw: float,
    target: float | None,
    cpu_copies: int | None,
    profiles: Sequence[MigProfile] | None,
) -> None:
    small = _modes(mem, weights, kv, bw, target, cpu_copies, profiles)
    big = _modes(mem, weights, kv + more, bw, target, cpu_copies, profiles)
    for a, b in zip(small, big, strict=True):
        assert (a.mode, a.profile) == (b.mode, b.profile)
        assert b.copies <= a.copies, (a, b)
    assert _best(big) <= _best(small)


@settings(max_examples=100)
@given(st.floats(min_value=1e-3, max_value=1e3), st.sampled_from(PROFILES))
def test_a_slice_floor_is_the_card_floor_over_its_bandwidth_fraction(card: float, profile: MigProfile) -> None:
    assert slice_floor(card, profile) == pytest.approx(card / profile.memory)
    modes = modes_for(memory_gib=80.0, need_gib=1.0, floor_ms=card, target_step_ms=None, cpu_copies=None, mig=[profile])
    (m,) = [x for x in modes if x.mode == "mig"]
    assert m.floor_ms == pytest.approx(card / profile.bandwidth)
    assert m.memory_gib == pytest.approx(80.0 * profile.memory * USABLE_FRACTION)


@settings(max_examples=150)
@given(memory, gib, gib, tbps, step, cpu, mig)
def test_the_binding_constraint_is_the_smallest_limit(
    mem: float,
    weights: float,
    kv: float,
    bw: float,
    target: float | None,
    cpu_copies: int | None,
    profiles: Sequence[MigProfile] | None,
) -> None:
    for m in _modes(mem, weights, kv, bw, target, cpu_copies, profiles):
        known = {k: v for k, v in m.limits.items() if v is not None}
        assert m.copies == min(known.values()) == known[m.binding]
        if m.mode == "mig" and m.copies:
            assert m.binding in ("instances", "cpu")


@settings(max_examples=100)
@given(st.integers(min_value=0, max_value=500), st.integers(min_value=1, max_value=64))
def test_gpus_needed_hold_every_replica_and_no_more(replicas: int, per_gpu: int) -> None:
    n = gpus_needed(replicas, per_gpu)
    assert n is not None and n * per_gpu >= replicas and (n - 1) * per_gpu < max(replicas, 1)
    assert gpus_needed(replicas, 0) is None


def test_a_hand_checked_case() -> None:
    """Qwen3-0.6B's need at 8 x 4096 on an H100 (3.35 TB/s spec), keeping a 5 ms step."""
    modes = _modes(79.6, 1.64, 3.50, 3.35, 5.0, None, _mig("h100-sxm"))
    by = {(m.mode, m.profile): m for m in modes}
    floor = (1.64 + 3.50) * (1 << 30) / 3.35e12 * 1e3  # 1.65 ms
    assert by["time-slicing", None].floor_ms == pytest.approx(floor)
    assert (by["time-slicing", None].copies, by["time-slicing", None].binding) == (3, "bandwidth")  # 5 // 1.65
    assert (by["mig", "1g.10gb"].copies, by["mig", "1g.10gb"].binding) == (0, "bandwidth")  # 13.2 ms > 5
    assert (by["mig", "3g.40gb"].copies, by["mig", "3g.40gb"].binding) == (2, "instances")  # 3.3 ms <= 5
    best = best_mode(modes)
    assert best is not None and best.mode == "mps"  # 3 copies, more isolated than time-slicing


def _facts(**kw: object) -> WorkloadFacts:
    base = dict(
        name="m",
        owner_kind="Deployment",
        pods=["m-1"],
        pending=[],
        gpus_per_pod=1,
        container="vllm",
        flags=EngineFlags(engine="vllm"),
        cpu_request=6.0,
        memory_request_gib=24.0,
        log_pod="m-1",
        gpu_memory_gib=79.6,
    )
    base.update(kw)
    return WorkloadFacts(**base)  # type: ignore[arg-type]


def test_needed_takes_each_part_from_the_log_then_the_config() -> None:
    log = parse_text("INFO Model loading took 14.99 GiB and 3.6 seconds\nINFO GPU KV cache size: 158,656 tokens\n")
    cfg = Given(layers=32, kv_heads=8, head_dim=128, activation_gib=1.5, target_concurrency=4, max_len=8192)
    n, notes = needed(_facts(), log, cfg, PackOptions())
    assert n.source == "config" and n.origins["weights_gib"] == "log" and n.origins["kv_bytes_per_token"] == "config"
    assert n.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert n.kv_gib == pytest.approx(131072 * 4 * 8192 / (1 << 30))  # 4 GiB
    assert n.total_gib == pytest.approx(14.99 + 1.5 + 4.0)
    assert any("CUDA graphs" in x and "leaves them out" in x for x in notes)
    # the options win over the config; --enforce-eager means no graphs
    n, _ = needed(
        _facts(flags=EngineFlags(engine="vllm", enforce_eager=True)),
        log,
        cfg,
        PackOptions(target_concurrency=1, max_len=1024),
    )
    assert (n.concurrency, n.max_len, n.graphs_gib, n.origins["graphs_gib"]) == (1, 1024, 0.0, "flags")


def test_a_log_whose_weights_exceed_the_gpu_is_not_used() -> None:
    log = parse_text(
        "INFO Model loading took 500.0 GiB and 3.6 seconds\nINFO Available KV cache memory: 3.0 GiB\n"
        "INFO GPU KV cache size: 1,000 tokens\n"
    )
    n, notes = needed(_facts(), log, None, PackOptions(target_concurrency=1, max_len=10))
    assert n.source == "missing" and n.total_gib is None
    assert any("more than the 79.6 GiB its GPU has" in x for x in notes)


def test_no_target_means_no_kv_and_a_note() -> None:
    log = parse_text(
        (__import__("pathlib").Path(__file__).parent / "data/vllm_logs/v0.7_single-gpu_mellea-416.log").read_text()
    )
    n, notes = needed(_facts(), log, None, PackOptions())
    assert n.source == "log" and n.max_len == 8192 and n.concurrency is None and n.total_gib is None
    assert any("--target-concurrency" in x for x in notes)


def test_the_mig_table_is_checked() -> None:
    with pytest.raises(ParseError, match="fractions must be"):
        parse_profiles(
            "version: 1\ngpus:\n- gpu: x\n  source: s\n  profiles:\n  - {name: a, instances: 2, memory: 1.5, "
            "sms: 0.5, layout: l}\n"
        )
    with pytest.raises(ParseError, match="not a MIG profile table"):
        parse_profiles("version: one\n")
    t = builtin_profiles()
    assert [p.name for p in _mig("rtx-pro-6000-server")] == ["1g.24gb", "2g.48gb", "4g.96gb"]
    assert [p.instances for p in _mig("h200")] == [7, 4, 3, 2, 1, 1]
    assert _mig("l4") == [] and t.for_gpu("a10g") is None


def test_the_colocate_lesson_names_where_it_flattens() -> None:
    """Aggregate tokens/s 100, 190, 200, 205 at 1, 2, 4, 8 copies: +90%, then +5%: flat from 2."""
    from nsightlab.analysis.colocate_result import build_colocate
    from nsightlab.parse.records.colocate_record import ColocateRecord

    runs = []
    for k, total, step in ((1, 100.0, 0.010), (2, 190.0, 0.0105), (4, 200.0, 0.020), (8, 205.0, 0.039)):
        per = [
            {
                "copy": i + 1,
                "median_step_s": step,
                "p90_step_s": step,
                "tokens_per_s": total / k,
                "bytes_per_step": 10**9,
            }
            for i in range(k)
        ]
        runs.append(
            {
                "sharing": "time-slicing",
                "copies": k,
                "per_copy": per,
                "median_step_s": step,
                "p90_step_s": step,
                "aggregate_tokens_per_s": total,
                "aggregate_bytes_per_s": total * 1e9,
            }
        )
    record = ColocateRecord.model_validate(
        {
            "kind": "colocate",
            "device": {"type": "cuda", "name": "NVIDIA H200"},
            "model": {"preset": "llama-1b"},
            "batch": 1,
            "tokens": 64,
            "prompt_len": 128,
            "mps": {"used": False, "reason": "no daemon"},
            "runs": runs,
        }
    )
    result = build_colocate(record, plateau_tbps=0.4, basis="measured", label="sweep x")
    assert result.flattens_at == {"time-slicing": 2} and result.mps == "no daemon"
    assert result.results[1].pct_of_plateau == pytest.approx(100 * 0.19 / 0.4)
    assert result.lesson[1].startswith(
        "time-slicing: it flattens at 2 copies, 0.190 TB/s together (48% of the plateau)"
    )
    assert "each step there costing 1.05x its time alone" in result.lesson[1]
    assert result.headline == "time-slicing: 205 tokens/s at 8 copies"
