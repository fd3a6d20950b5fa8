#!/usr/bin/env python3
"""The bandwidth sweep: one in-place elementwise op at many sizes, to see launch, cache and DRAM.

The experiment of the tutorial's section 12, done with the element size taken from the
tensor. Two ops (`--op`):
- `scale` (default): `x.mul_(1.0001)`. One kernel; each call reads and writes every element
  once, so it moves 2 x elements x element size bytes (the tutorial's script hard-codes 2
  bytes per element, which halves the TB/s it prints for float32).
- `scale-add`: `x = x * 0.999 + 0.001`. torch runs it as two kernels (`x.mul_`, then
  `x.add_`), 4 x elements x element size bytes per call; the Triton kernel fuses it into
  one, 2 x elements x element size. a < 1 makes the update a contraction towards the fixed
  point b / (1 - a) = 1: whatever the number of calls, every value stays between its start
  (in [-1, 1)) and 1, never drifting to 0 or infinity.

Two implementations (`--impl`): `torch` (default) and `triton`, a `@triton.jit` kernel with
one program per BLOCK_SIZE elements and a masked tail. On a GPU `triton.autotune` picks
BLOCK_SIZE and num_warps per size; each row records the chosen config. Triton is imported
only under `--impl triton`. Without a GPU Triton runs only in its interpreter
(`TRITON_INTERPRET=1` in the environment): the rows say `interpreted: true`, and their times
measure the interpreter, not memory.

Under `--impl triton` every size is also checked: after the warm-up, the op runs once with
torch on a copy and once with Triton on the tensor, from the same values, and the row
records the largest difference. `scale` must match exactly; `scale-add` within 2 units in
the last place (ulp) of the type at the values' magnitude (a fused multiply-add rounds once
where torch's two kernels round twice). A larger difference stops the sweep (exit 5). The
check is never timed, and neither is compiling or tuning: at least one untimed call
precedes the timed ones.

Timing: CUDA events on a GPU; on a CPU, `time.perf_counter` around the calls (torch runs
CPU operations synchronously, so the call has finished when it returns). The timed calls
are split into a few equal batches and the time per call is the median over the batches,
which keeps one disturbed batch (a CPU migration, a page fault storm) out of the figure;
the per-batch figures and their min / median / max are kept in the JSON.

On a CPU the default type is float32 (float16 on a GPU): a CPU converts 16-bit floats
element by element, so their time measures arithmetic, not memory. The CPU default sizes
run from 2^12 to two sizes at least 4x the last-level cache, so the DRAM plateau has two
points.

Sizes that do not fit in free memory (device memory on a GPU, available RAM on a CPU) are
skipped with a note. Each row is printed as soon as it is measured, in the tutorial's
format:

    2^16 elems       0.1 MiB        5.9 us   0.04 TB/s

Runs in the lab pod's own Python (3.8 or later) with only the standard library and torch
(and triton under `--impl triton`).

    python3 sweep.py                                # GPU if there is one
    python3 sweep.py --dtype float32 --json /tmp/sweep.json
    python3 sweep.py --device cpu --sizes 12,16,20,24
    python3 sweep.py --impl triton --op scale-add   # fused, on a GPU
    TRITON_INTERPRET=1 python3 sweep.py --impl triton --device cpu   # checks only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

# labcommon.py travels beside every lab script: the device, its description, JSON output.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import labcommon as lab
except ModuleNotFoundError as _missing:
    if _missing.name != "labcommon":
        raise
    sys.exit("sweep.py: needs labcommon.py in the same folder as this script (copy lab_scripts/labcommon.py beside it)")

SCHEMA = 1
PROGRESS_PREFIX = "nsightlab-row "  # --progress json: a row nsightlab writes in its own format
IMPLS = ("torch", "triton")
OPS = ("scale", "scale-add")
# scale: x *= SCALE_FACTOR. scale-add: x = x * ADD_A + ADD_B, a contraction towards
# ADD_B / (1 - ADD_A) = 1, so values stay bounded over any number of calls.
SCALE_FACTOR = 1.0001
ADD_A = 0.999
ADD_B = 0.001
# Bytes moved per element per call: a kernel reads and writes each element once.
BYTES_FACTOR = {
    ("torch", "scale"): 2,
    ("torch", "scale-add"): 4,
    ("triton", "scale"): 2,
    ("triton", "scale-add"): 2,
}
KERNELS_PER_CALL = {
    ("torch", "scale"): 1,
    ("torch", "scale-add"): 2,
    ("triton", "scale"): 1,
    ("triton", "scale-add"): 1,
}

GPU_SIZES = (16, 20, 22, 24, 26, 28, 30)
CPU_SMALLEST = 12  # the CPU default sizes start here, in steps of 2 up to the cache's edge
INTERPRETER_SIZES = (10, 12, 14, 16)  # the Triton interpreter runs ~10^6 elements/s
DTYPES = ("float16", "bfloat16", "float32", "float64")
GPU_WARMUP, GPU_ITERS = 5, 50
# On a CPU the largest default sizes are gigabytes: fewer calls keep the run to seconds.
CPU_WARMUP, CPU_ITERS = 2, 10
BATCHES = 5
# Share of the free memory the tensors may take: the allocator and the rest of the process
# (on a CPU, the rest of the machine) need room too.
GPU_FREE_FRACTION = 0.9
CPU_FREE_FRACTION = 0.5

# Triton: (BLOCK_SIZE, num_warps) configs the autotuner tries on a GPU; the interpreter
# takes the first. The correctness tolerance for scale-add, in ulps of the dtype.
TRITON_CONFIGS = (
    (1024, 4),
    (1024, 8),
    (2048, 4),
    (2048, 8),
    (4096, 4),
    (4096, 8),
    (8192, 4),
    (8192, 8),
)
SCALE_ADD_MAX_ULPS = 2.0
CHECK_CHUNK = 1 << 24  # elements compared at a time, so the check needs little extra memory

# Exit codes besides labcommon.NO_GPU_EXIT (3): 2 for a usage error (argparse's own code),
# 4 when --impl triton cannot import triton, 5 when Triton's result differs from torch's.
USAGE_EXIT = 2
NO_TRITON_EXIT = 4
CHECK_FAILED_EXIT = 5

TRITON_NEEDS_A_GPU = (
    "--impl triton on the CPU runs only in Triton's interpreter: set TRITON_INTERPRET=1 "
    "(slow, and no bandwidth figure), or run where torch sees a GPU"
)
INTERPRETER_NOTE = (
    "Triton ran in its interpreter (TRITON_INTERPRET=1): NumPy executes every program on "
    "the CPU, so these times measure the interpreter, not memory; no bandwidth claim can be "
    "made from them (the rows check correctness only)"
)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated powers of two, e.g. 16,20,24; got {text!r}"
        ) from None
    if not sizes:
        raise argparse.ArgumentTypeError("no sizes given")
    for p in sizes:
        if not 0 <= p <= 40:
            raise argparse.ArgumentTypeError(f"size 2^{p} is out of range (0..40)")
    return sorted(set(sizes))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sweep.py",
        description=(
            "Time an in-place scale (x.mul_) or scale-add at sizes 2^N, with torch or a Triton "
            "kernel, and print time per call and bandwidth (bytes = 2 x elements x element "
            "size per kernel: one read and one write)."
        ),
        epilog=(
            "GPU defaults: sizes " + ",".join(str(p) for p in GPU_SIZES) + f", float16, "
            f"{GPU_WARMUP} warm-up + {GPU_ITERS} timed calls. CPU defaults: sizes from "
            f"{CPU_SMALLEST} in steps of 2 up to two sizes at least "
            f"{lab.PAST_LLC_FACTOR}x the last-level cache, float32 (16-bit floats on a CPU "
            f"measure conversion, not memory), {CPU_WARMUP} + {CPU_ITERS} calls. Under the "
            "Triton interpreter (TRITON_INTERPRET=1): sizes "
            + ",".join(str(p) for p in INTERPRETER_SIZES)
            + f". Exit codes: {USAGE_EXIT} usage, {lab.NO_GPU_EXIT} --device cuda without a "
            f"GPU, {NO_TRITON_EXIT} --impl triton without triton, {CHECK_FAILED_EXIT} Triton's "
            "result differs from torch's."
        ),
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        metavar="N,N,...",
        help="log2 of the element counts (default depends on the device)",
    )
    parser.add_argument(
        "--op",
        choices=OPS,
        default="scale",
        help="scale: x *= 1.0001 (default); scale-add: x = x * 0.999 + 0.001",
    )
    parser.add_argument(
        "--impl",
        choices=IMPLS,
        default="torch",
        help="torch (default) or triton (a @triton.jit kernel, autotuned on a GPU)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help=f"warm-up calls per size ({GPU_WARMUP}; CPU {CPU_WARMUP})",
    )
    parser.add_argument(
        "--iters",
        type=int,
        default=None,
        help=f"timed calls per size ({GPU_ITERS}; CPU {CPU_ITERS})",
    )
    parser.add_argument("--dtype", choices=DTYPES, default=None, help="default float16 on a GPU, float32 on a CPU")
    parser.add_argument(
        "--device",
        choices=lab.DEVICE_CHOICES,
        default="auto",
        help="auto (default): the GPU if torch sees one, else the CPU; cuda: the GPU or "
        f"exit {lab.NO_GPU_EXIT}; cpu: the CPU on purpose",
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the rows here")
    # nsightlab's own: each row as `nsightlab-row {JSON}` on stdout instead of the tutorial's
    # line, for it to write in its own number format
    parser.add_argument("--progress", choices=("text", "json"), default="text", help=argparse.SUPPRESS)
    # Pretend the device has at most this many bytes free: exercises the skip path.
    parser.add_argument("--max-bytes", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warmup is not None and args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.iters is not None and args.iters < 1:
        parser.error("--iters must be at least 1")
    if args.max_bytes is not None and args.max_bytes < 0:
        parser.error("--max-bytes must be 0 or more")
    if args.impl == "triton" and args.dtype == "float64":
        # Triton passes a Python float as a 32-bit scalar: the result could not match
        # torch's double arithmetic, so the check would fail for a reason not in the kernel.
        parser.error("--impl triton takes float16, bfloat16 or float32 (its scalars are 32-bit)")
    return args


def note(message: str) -> None:
    print("sweep: " + message, file=sys.stderr, flush=True)


def fail(code: int, message: str) -> NoReturn:
    """Stop with one line on stderr and a documented exit code."""
    print("sweep.py: " + message, file=sys.stderr, flush=True)
    raise SystemExit(code)


# --- Triton (imported only under --impl triton) ---

# triton.language, bound by load_triton(). The kernel below names it only in its body and
# in annotations (strings under `from __future__ import annotations`), so this file imports
# without triton; Triton reads the kernel's source and resolves `tl` when it compiles.
tl: Any = None


# Triton reads a parameter's annotation as its type: the runtime ones stay unannotated.
def _scale_kernel(x_ptr, n_elements, a, b, ADD: tl.constexpr, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    """x[i] = x[i] * a (+ b when ADD), in place; one program per BLOCK_SIZE elements."""
    # 64-bit offsets: 2^31 elements and more fit on today's GPUs.
    start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
    offsets = start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # the tail block
    x = tl.load(x_ptr + offsets, mask=mask)
    # Compute in float32 as torch does for 16-bit types (its "opmath" type), round once.
    y = x.to(tl.float32) * a
    if ADD:
        y = y + b
    tl.store(x_ptr + offsets, y.to(x_ptr.dtype.element_ty), mask=mask)


def load_triton() -> Any:
    """Import triton and bind triton.language for the kernel; exit NO_TRITON_EXIT if absent."""
    global tl
    try:
        import triton
        import triton.language
    except ImportError as e:
        fail(
            NO_TRITON_EXIT,
            f"--impl triton needs the triton package, which this Python cannot import ({e}); "
            "install triton or use --impl torch",
        )
    tl = triton.language
    return triton


def triton_interprets(triton: Any) -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1)."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    value = getattr(runtime, "interpret", None)
    if isinstance(value, bool):
        return value
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


class TritonOp:
    """The Triton kernel for one op: autotuned on a GPU, the first config in the interpreter."""

    def __init__(self, triton: Any, op: str, interpreted: bool) -> None:
        self.triton = triton
        self.add = op == "scale-add"
        self.interpreted = interpreted
        jitted = triton.jit(_scale_kernel)
        if interpreted:
            self.kernel = jitted
        else:
            configs = [triton.Config({"BLOCK_SIZE": blk}, num_warps=w) for blk, w in TRITON_CONFIGS]
            # restore_value: tuning runs the in-place kernel many times per config; the
            # tensor is put back after each, so the values the timed calls see stay bounded.
            self.kernel = triton.autotune(configs=configs, key=["n_elements"], restore_value=["x_ptr"])(jitted)

    def bind(self, x: Any) -> Callable[[], None]:
        """One call of the op on `x`, ready to time (the grid is built once)."""
        n = x.numel()
        a = ADD_A if self.add else SCALE_FACTOR
        b = ADD_B if self.add else 0.0
        add = self.add
        cdiv = self.triton.cdiv
        if self.interpreted:
            block, warps = TRITON_CONFIGS[0]
            launch = self.kernel[(cdiv(n, block),)]

            def call() -> None:
                launch(x, n, a, b, ADD=add, BLOCK_SIZE=block, num_warps=warps)

        else:
            launch = self.kernel[lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),)]

            def call() -> None:
                launch(x, n, a, b, ADD=add)

        return call

    def config(self) -> tuple[dict[str, int], bool]:
        """The config the last call ran with, and whether the autotuner chose it."""
        if self.interpreted:
            block, warps = TRITON_CONFIGS[0]
            return {"BLOCK_SIZE": block, "num_warps": warps}, False
        best = self.kernel.best_config
        return {
            "BLOCK_SIZE": int(best.kwargs["BLOCK_SIZE"]),
            "num_warps": int(best.num_warps),
        }, True


# --- the op with torch, and the check ---


def torch_call(op: str, x: Any) -> Callable[[], None]:
    """One call of the op on `x` with torch: one kernel for scale, two for scale-add."""
    if op == "scale":

        def call() -> None:
            x.mul_(SCALE_FACTOR)

    else:

        def call() -> None:
            x.mul_(ADD_A)
            x.add_(ADD_B)

    return call


def compare(torch: Any, op: str, ref: Any, out: Any) -> tuple[float, float]:
    """(largest absolute difference, largest difference in ulps) between torch's `ref` and
    Triton's `out`. The ulp is the dtype's spacing at the values' magnitude |ref| + |b|,
    which bounds |x * a| (a result near 0 after cancellation is judged at the scale of its
    operands). A NaN anywhere counts as an infinite difference."""
    finfo = torch.finfo(ref.dtype)
    offset = abs(ADD_B) if op == "scale-add" else 0.0
    worst_abs = 0.0
    worst_ulps = 0.0
    total = ref.numel()
    for lo in range(0, total, CHECK_CHUNK):
        r = ref[lo : lo + CHECK_CHUNK].float()
        o = out[lo : lo + CHECK_CHUNK].float()
        err = (o - r).abs()
        err = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)
        worst_abs = max(worst_abs, float(err.max()))
        magnitude = (r.abs() + offset).clamp_min(finfo.tiny)
        _mantissa, exponent = torch.frexp(magnitude)  # magnitude = m * 2^e, 0.5 <= m < 1
        ulp = torch.ldexp(torch.full_like(magnitude, finfo.eps), exponent - 1)
        worst_ulps = max(worst_ulps, float((err / ulp).max()))
    return worst_abs, worst_ulps


def check_passes(op: str, max_abs: float, max_ulps: float) -> bool:
    """scale must match torch exactly; scale-add within SCALE_ADD_MAX_ULPS."""
    if op == "scale":
        return max_abs == 0.0
    return max_ulps <= SCALE_ADD_MAX_ULPS


# --- the sweep ---


def free_bytes(torch: Any, cuda: bool) -> tuple[int | None, str]:
    """Bytes the tensors may take now, and how that was decided."""
    if cuda:
        free, _total = torch.cuda.mem_get_info()
        return int(free * GPU_FREE_FRACTION), f"{GPU_FREE_FRACTION:.0%} of free device memory"
    available = lab.cpu_memory_available()
    if available is None:
        return None, "available RAM unknown"
    return int(available * CPU_FREE_FRACTION), f"{CPU_FREE_FRACTION:.0%} of available RAM"


def cpu_default_sizes(
    llc_bytes: int, element_size: int, budget: int | None, copies: int = 1
) -> tuple[list[int], int, str | None]:
    """The CPU default sizes: from 2^CPU_SMALLEST in steps of 2, then the first two sizes
    whose tensor is at least PAST_LLC_FACTOR x the last-level cache. Sizes whose `copies`
    tensors do not fit in `budget` are left out. Returns (sizes, first size past the
    cache, a note when fewer than two sizes past the cache fit)."""
    first = max(CPU_SMALLEST, lab.smallest_log2_holding(lab.PAST_LLC_FACTOR * llc_bytes, element_size))
    wanted = [*range(CPU_SMALLEST, first, 2), first, first + 1]
    sizes = [p for p in wanted if budget is None or copies * (1 << p) * element_size <= budget]
    past = [p for p in sizes if p >= first]
    shortfall = None
    if len(past) < 2:
        shortfall = (
            f"only {len(past)} default size{'' if len(past) == 1 else 's'} at least "
            f"{lab.PAST_LLC_FACTOR}x the last-level cache fit{'s' if len(past) == 1 else ''} in "
            "memory: the DRAM plateau needs two"
        )
    return sizes, first, shortfall


def split_batches(iters: int, batches: int) -> list[int]:
    """Split `iters` calls into at most `batches` near-equal batches."""
    count = max(1, min(batches, iters))
    base, extra = divmod(iters, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def time_calls(torch: Any, cuda: bool, call: Callable[[], None], batches: list[int]) -> list[float]:
    """Seconds per call in each batch of timed calls."""
    if cuda:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(len(batches) + 1)]
        events[0].record()
        for i, calls in enumerate(batches):
            for _ in range(calls):
                call()
            events[i + 1].record()
        torch.cuda.synchronize()
        return [events[i].elapsed_time(events[i + 1]) / 1e3 / calls for i, calls in enumerate(batches)]
    out = []
    for calls in batches:
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        out.append((time.perf_counter() - t0) / calls)
    return out


def format_row(log2: int, tensor_bytes: int, seconds: float, bytes_per_call: int, digits: int = 2) -> str:
    """One row in the tutorial's format; `digits` after the point for TB/s (3 on a CPU)."""
    tbps = bytes_per_call / seconds / 1e12
    return (
        f"2^{log2:<2} elems  {tensor_bytes / 2**20:8.1f} MiB  {seconds * 1e6:9.1f} us  "
        f"{tbps:{digits + 3}.{digits}f} TB/s"
    )


def progress_line(row: dict[str, Any]) -> str:
    """A row for nsightlab to show (`--progress json`): what its streamed line needs, exact."""
    keep = (
        "log2",
        "tensor_bytes",
        "bytes_per_call",
        "seconds_per_call",
        "interpreted",
        "max_abs_error",
        "triton_config",
    )
    return PROGRESS_PREFIX + json.dumps({k: v for k, v in row.items() if k in keep})


def _bytes_formula(impl: str, op: str, element_size: int) -> str:
    factor = BYTES_FACTOR[(impl, op)]
    if impl == "torch" and op == "scale-add":
        how = "x.mul_ then x.add_: two kernels, each one read + one write"
    elif op == "scale-add":
        how = "one fused kernel: read + write"
    else:
        how = "read + write"
    return f"bytes = {factor} x elements x {element_size} ({how})"


def run(args: argparse.Namespace) -> dict[str, Any]:
    impl: str = args.impl
    op: str = args.op
    # Before torch: a missing triton, or Triton asked to run on the CPU without its
    # interpreter, is reported at once.
    triton = load_triton() if impl == "triton" else None
    interpreted = triton is not None and triton_interprets(triton)
    if triton is not None and args.device == "cpu" and not interpreted:
        fail(USAGE_EXIT, TRITON_NEEDS_A_GPU)
    import torch

    device = lab.pick_device(torch, args.device, "sweep.py")
    cuda = device == "cuda"
    notes: list[str] = []
    triton_op: TritonOp | None = None
    triton_version = None
    if triton is not None:
        triton_version = getattr(triton, "__version__", None)
        if not cuda and not interpreted:  # --device auto, and torch sees no GPU
            fail(USAGE_EXIT, TRITON_NEEDS_A_GPU)
        triton_op = TritonOp(triton, op, interpreted)
        if interpreted:
            notes.append(INTERPRETER_NOTE)
            note(INTERPRETER_NOTE)
    # Real bandwidth figures come from a GPU; a CPU or the interpreter gets smaller defaults.
    gpu_timing = cuda and not interpreted
    dtype_name: str = args.dtype or ("float16" if cuda else "float32")
    if not cuda:
        sixteen = lab.sixteen_bit_cpu_note(dtype_name)
        if sixteen:
            notes.append(sixteen)
            note(sixteen)
    warmup: int = args.warmup if args.warmup is not None else (GPU_WARMUP if gpu_timing else CPU_WARMUP)
    iters: int = args.iters if args.iters is not None else (GPU_ITERS if gpu_timing else CPU_ITERS)
    dtype = getattr(torch, dtype_name)
    element_size = torch.empty(0, dtype=dtype).element_size()
    batches = split_batches(iters, BATCHES)
    # Triton's check keeps a torch copy beside the tensor.
    copies = 2 if impl == "triton" else 1
    factor = BYTES_FACTOR[(impl, op)]
    kernels_per_call = KERNELS_PER_CALL[(impl, op)]

    sizes: list[int] | None = args.sizes
    if sizes is None:
        if interpreted:
            sizes = list(INTERPRETER_SIZES)
            note("Triton interpreter: small default sizes 2^" + f"{sizes[0]}..2^{sizes[-1]}")
        elif cuda:
            sizes = list(GPU_SIZES)
        else:
            llc, llc_source = lab.llc_for_sizing()
            budget, _how = free_bytes(torch, cuda)
            sizes, first, shortfall = cpu_default_sizes(llc, element_size, budget, copies)
            note(
                f"on the CPU, default sizes 2^{sizes[0]}..2^{sizes[-1]} (GPU: "
                f"2^16..2^30); from 2^{first} ({lab.format_bytes((1 << first) * element_size)}) "
                f"the tensor is at least {lab.PAST_LLC_FACTOR}x the last-level cache "
                f"({lab.format_bytes(llc)}, {llc_source}); pass --sizes to change"
            )
            if shortfall:
                notes.append(shortfall)
                note(shortfall)
        if not gpu_timing and (args.warmup is None or args.iters is None):
            note(f"{warmup} warm-up + {iters} timed calls per size (GPU: {GPU_WARMUP} + {GPU_ITERS})")
    info = lab.describe_device(torch, device)
    l2 = info.get("l2_bytes")
    note(
        f"{info['name']} ({device}), {impl} {op}, {dtype_name} ({element_size} B/element), "
        f"cache {lab.format_bytes(l2) if l2 else 'unknown'}, {warmup} warm-up + "
        f"{iters} timed calls per size; {_bytes_formula(impl, op, element_size)}"
    )

    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for log2 in sizes:
        elements = 1 << log2
        tensor_bytes = elements * element_size
        budget, how = free_bytes(torch, cuda)
        if args.max_bytes is not None and (budget is None or args.max_bytes < budget):
            budget, how = args.max_bytes, "--max-bytes"
        if budget is not None and copies * tensor_bytes > budget:
            what = lab.format_bytes(copies * tensor_bytes) + (
                " (the tensor and torch's copy for the check)" if copies > 1 else ""
            )
            reason = f"needs {what}, only {lab.format_bytes(budget)} may be used ({how})"
            note(f"skipping 2^{log2}: {reason}")
            skipped.append({"log2": log2, "elements": elements, "reason": reason})
            continue
        try:
            # Values in [-1, 1): far from overflow for any dtype over many scale calls.
            x = torch.empty(elements, device=device, dtype=dtype).uniform_(-1.0, 1.0)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            reason = "allocation failed: " + str(e).splitlines()[0]
            note(f"skipping 2^{log2}: {reason}")
            skipped.append({"log2": log2, "elements": elements, "reason": reason})
            if cuda:
                torch.cuda.empty_cache()
            continue
        call = triton_op.bind(x) if triton_op is not None else torch_call(op, x)
        # Triton compiles (and on a GPU tunes) on its first call at a size: never time it.
        for _ in range(max(warmup, 1 if triton_op is not None else 0)):
            call()
        row_check: dict[str, Any] = {}
        if triton_op is not None:
            ref = x.clone()
            torch_call(op, ref)()
            call()
            if cuda:
                torch.cuda.synchronize()
            max_abs, max_ulps = compare(torch, op, ref, x)
            del ref
            config, autotuned = triton_op.config()
            row_check = {
                "max_abs_error": max_abs,
                "max_error_ulps": max_ulps,
                "tolerance": "exact" if op == "scale" else f"{SCALE_ADD_MAX_ULPS:g} ulp",
                "triton_config": config,
                "autotuned": autotuned,
            }
            if not check_passes(op, max_abs, max_ulps):
                limit = "must be 0" if op == "scale" else f"limit {SCALE_ADD_MAX_ULPS:g} ulp"
                fail(
                    CHECK_FAILED_EXIT,
                    f"Triton's {op} differs from torch's at 2^{log2} ({dtype_name}): max abs "
                    f"error {max_abs:.3g} ({max_ulps:.3g} ulp; {limit})",
                )
        if cuda:
            torch.cuda.synchronize()
        per_batch = time_calls(torch, cuda, call, batches)
        seconds = statistics.median(per_batch)
        bytes_per_call = factor * x.numel() * x.element_size()
        rows.append(
            {
                "log2": log2,
                "elements": x.numel(),
                "tensor_bytes": x.numel() * x.element_size(),
                "op": op,
                "impl": impl,
                "kernels_per_call": kernels_per_call,
                "bytes_per_call": bytes_per_call,
                "seconds_per_call": seconds,
                "seconds_min": min(per_batch),
                "seconds_median": seconds,
                "seconds_max": max(per_batch),
                "batch_seconds_per_call": per_batch,
                "interpreted": interpreted,
                **row_check,
            }
        )
        if args.progress == "json":
            line = progress_line(rows[-1])
        else:
            line = format_row(log2, rows[-1]["tensor_bytes"], seconds, bytes_per_call, 2 if cuda else 3)
            if row_check:
                line += f"  max err {row_check['max_abs_error']:.3g}"
                config = row_check["triton_config"]
                line += f"  BLOCK_SIZE {config['BLOCK_SIZE']} warps {config['num_warps']}"
                line += "  [interpreted]" if interpreted else ""
        print(line, flush=True)
        del x, call
        if cuda:
            torch.cuda.empty_cache()

    document: dict[str, Any] = {
        "kind": "sweep",
        "schema": SCHEMA,
        "op": op,
        "impl": impl,
        "kernels_per_call": kernels_per_call,
        "scalars": {"a": ADD_A, "b": ADD_B} if op == "scale-add" else {"a": SCALE_FACTOR},
        "dtype": dtype_name,
        "element_size": element_size,
        "iters": iters,
        "warmup": warmup,
        "batches": batches,
        "timer": "cuda_events" if cuda else "perf_counter",
        "statistic": "median of batch means",
        "interpreted": interpreted,
        "notes": notes,
        "device": info,
        "rows": rows,
        "skipped": skipped,
    }
    if impl == "triton":
        document["triton"] = triton_version
        document["triton_configs"] = [
            {"BLOCK_SIZE": blk, "num_warps": w} for blk, w in (TRITON_CONFIGS[:1] if interpreted else TRITON_CONFIGS)
        ]
    return document


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = run(args)
    if args.json:
        lab.write_json_atomic(args.json, document)
        note("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
