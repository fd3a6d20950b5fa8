#!/usr/bin/env bash
# The first minutes on a real GPU: every lab path in one prepared run, its outputs kept.
#
#   bench/gpu_run.sh [--device cuda|cpu] OUTDIR
#
# Runs lab_scripts/ directly with the machine's own python3 (its torch and Triton; never
# nsightlab, which need not be installed there), step by step, each under its own time
# budget (`timeout`) and the whole under GPU_RUN_BUDGET_S (285 s):
#   facts     the machine: GPU name and driver (nvidia-smi), torch/CUDA/Triton, CPU, memory
#   gpu       whether torch sees a GPU (with --device cpu: skipped on purpose)
#   lesson1   lesson1.py under torch.profiler (torchprof.py): its record and Chrome trace
#   sweep-*   sweep.py, float16 and float32, with torch and with Triton, and the fused
#             scale-add against torch's two kernels; sizes 2^16..2^30 on a GPU
#   decode-*  decode.py, a 1B-class and an 8B-class shape (llama-1b, llama-8b), eager and
#             CUDA graphs, batch 1, 8, 32, 128
#   ncu       ncu --section SpeedOfLight on lesson1's scale kernel; ERR_NVGPUCTRPERM is a
#             finding (the counters could not be read), not a failure
#   nsys-*    lesson1 under Nsight Systems, where nsys is installed
#   colocate  colocate.py: 1, 2, 4, 8 copies of the decode loop at once
# A step whose budget is gone, or whose tool is missing (ncu, nsys, Triton, a GPU), is a
# `skipped` line in OUTDIR/steps.log; a failed step is a `failed` or `timeout` line. None
# of them makes the exit status non-zero: 0 unless the command line was wrong (2) or the
# run was interrupted (130, after packing what it had).
#
# OUTDIR (created; empty, or holding only an earlier run's files, which are replaced) gets
# at most 4 files of at most 16 MiB each: steps.log, gpu-run.tar.gz (facts, records, logs)
# and traces.tar.gz (profiler traces; the biggest are dropped, with a note, when over the
# cap). `nsightlab analyze OUTDIR` reads it back on any machine.
#
# --device cpu runs the same steps on the CPU with small sizes (two minutes on a loaded
# 2-core machine, half of it colocate's 15 processes starting; one torch thread each unless
# OMP_NUM_THREADS says otherwise). Environment:
#   GPU_RUN_TINY=1        the smallest sizes (the test suite's proof of the script)
#   GPU_RUN_BUDGET_S=N    the whole run's budget in seconds (default 285)
#   GPU_RUN_ONLY=a,b      run only these steps, or steps of these first words (sweep,
#                         decode); facts always runs, the rest are skipped
#   GPU_RUN_PYTHON=PATH   the Python to run (default: python3 on PATH)
#   GPU_RUN_CAP_BYTES=N   a file's cap (16 MiB); smaller only to test how traces are dropped
set -u

PROG=gpu_run.sh
usage() {
    echo "usage: bench/gpu_run.sh [--device cuda|cpu] OUTDIR"
    echo "Runs every lab script under its own time budget and packs the outputs into OUTDIR"
    echo "(at most 4 files of at most 16 MiB). Example: bench/gpu_run.sh --device cpu /tmp/gpu-run"
}
usage_error() {
    echo "$PROG: $1 (usage: bench/gpu_run.sh [--device cuda|cpu] OUTDIR)" >&2
    exit 2
}

DEVICE=cuda
OUTDIR=""
while [ $# -gt 0 ]; do
    case "$1" in
    --device)
        [ $# -ge 2 ] || usage_error "--device needs a value: cuda or cpu"
        DEVICE=$2
        shift 2
        ;;
    --device=*)
        DEVICE=${1#--device=}
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*) usage_error "unknown option $1" ;;
    *)
        [ -z "$OUTDIR" ] || usage_error "one OUTDIR only, got '$OUTDIR' and '$1'"
        OUTDIR=$1
        shift
        ;;
    esac
done
case "$DEVICE" in
cuda | cpu) ;;
*) usage_error "--device takes cuda or cpu, not '$DEVICE'" ;;
esac
[ -n "$OUTDIR" ] || usage_error "OUTDIR is missing"
command -v timeout >/dev/null 2>&1 || usage_error "needs coreutils' timeout, which is not on PATH"

TOTAL_S=${GPU_RUN_BUDGET_S:-285}
case "$TOTAL_S" in '' | *[!0-9]*) usage_error "GPU_RUN_BUDGET_S must be whole seconds, not '$TOTAL_S'" ;; esac
CAP_BYTES=${GPU_RUN_CAP_BYTES:-$((16 * 1024 * 1024))} # a smaller cap only to test the dropping
case "$CAP_BYTES" in '' | *[!0-9]*) usage_error "GPU_RUN_CAP_BYTES must be whole bytes, not '$CAP_BYTES'" ;; esac
SLACK_BYTES=$((CAP_BYTES / 256)) # what tar and gzip add around the traces
TINY=${GPU_RUN_TINY:-0}
ONLY=${GPU_RUN_ONLY:-}
PY=${GPU_RUN_PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || usage_error "no $PY on PATH (set GPU_RUN_PYTHON)"

# Our own files in OUTDIR; anything else there is refused, so the folder holds at most 4.
OWN_FILES="steps.log gpu-run.tar.gz traces.tar.gz"
if [ -e "$OUTDIR" ] && [ ! -d "$OUTDIR" ]; then
    usage_error "$OUTDIR exists and is not a folder"
fi
mkdir -p "$OUTDIR" || usage_error "cannot create $OUTDIR"
for f in "$OUTDIR"/* "$OUTDIR"/.[!.]*; do
    [ -e "$f" ] || continue
    case " $OWN_FILES " in
    *" $(basename "$f") "*) ;;
    *) usage_error "$OUTDIR holds $(basename "$f"), not a file of this script: give an empty or new folder" ;;
    esac
done
for f in $OWN_FILES; do rm -f "$OUTDIR/$f"; done
OUTDIR=$(cd "$OUTDIR" && pwd)

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
LAB=$REPO/lab_scripts
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-run.XXXXXX") || usage_error "cannot make a work folder"
RUN=$WORK/gpu-run # what gpu-run.tar.gz holds
mkdir -p "$RUN/records" "$RUN/logs" "$WORK/traces"
LOG=$OUTDIR/steps.log

LOG_CAP_BYTES=$((1024 * 1024)) # each step's log keeps its last MiB
PACK_RESERVE_S=10              # kept back from the steps for packing
MIN_STEP_S=5                   # a step that would get less is skipped
START=$(date +%s)
DEADLINE=$((START + TOTAL_S - PACK_RESERVE_S))

if [ "$DEVICE" = cpu ]; then
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
fi
export PYTHONUNBUFFERED=1

now_ms() { date +%s%3N; }
clean() { printf '%s' "$*" | tr '\t\r\n' '   ' | cut -c1-400; }
# step_line STEP STATUS SECONDS BUDGET EXIT DETAIL
step_line() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$(clean "$6")" >>"$LOG"
    printf '%-34s %-8s %6ss  %s\n' "$1" "$2" "$3" "$(clean "$6")" | cut -c1-200
}
note_line() { echo "# note: $(clean "$1")" >>"$LOG"; }

LAST_STATUS=""
STEP_PID=""   # the running step's timeout process, for a signal to stop
STEP_NAME=""
FINDING=""    # a pattern in a step's output that answers its question (ncu's ERR_NVGPUCTRPERM)
FINDING_TEXT=""

PACKED=0
pack() {
    [ "$PACKED" = 1 ] && return
    PACKED=1
    local f size
    # each log keeps its last LOG_CAP_BYTES
    for f in "$RUN"/logs/*.log; do
        [ -f "$f" ] || continue
        size=$(wc -c <"$f")
        if [ "$size" -gt "$LOG_CAP_BYTES" ]; then
            tail -c "$LOG_CAP_BYTES" "$f" >"$f.tail" && mv "$f.tail" "$f"
            note_line "logs/$(basename "$f") cut to its last $((LOG_CAP_BYTES / 1024)) KiB (it was $size bytes)"
        fi
    done
    # traces: smallest first, while the archive stays under the cap; the rest dropped
    local kept=0 traces=() name
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        size=$(wc -c <"$f")
        name=$(basename "$f")
        if [ $((kept + size)) -gt $((CAP_BYTES - SLACK_BYTES)) ]; then
            note_line "trace $name dropped: $size bytes would take traces.tar.gz past the $CAP_BYTES-byte cap"
            continue
        fi
        kept=$((kept + size))
        traces+=("$name")
    done < <(find "$WORK/traces" -maxdepth 1 -type f -printf '%s %p\n' 2>/dev/null | sort -n | cut -d' ' -f2-)
    if [ "${#traces[@]}" -gt 0 ]; then
        tar -C "$WORK/traces" -czf "$OUTDIR/traces.tar.gz" "${traces[@]}" ||
            note_line "traces.tar.gz could not be written"
        size=$(wc -c <"$OUTDIR/traces.tar.gz" 2>/dev/null || echo 0)
        if [ "$size" -gt "$CAP_BYTES" ]; then
            rm -f "$OUTDIR/traces.tar.gz"
            note_line "traces.tar.gz dropped: $size bytes, over the $CAP_BYTES-byte cap"
        fi
    fi
    local elapsed=$(($(date +%s) - START))
    echo "# finished: $(date -u +%Y-%m-%dT%H:%M:%SZ) after ${elapsed}s" >>"$LOG"
    cp "$LOG" "$RUN/steps.log"
    tar -C "$WORK" -czf "$OUTDIR/gpu-run.tar.gz" gpu-run
    size=$(wc -c <"$OUTDIR/gpu-run.tar.gz" 2>/dev/null || echo 0)
    if [ "$size" -gt "$CAP_BYTES" ]; then
        # the records are small: what grew is the logs; keep their last 64 KiB
        for f in "$RUN"/logs/*.log; do
            [ -f "$f" ] && tail -c 65536 "$f" >"$f.tail" && mv "$f.tail" "$f"
        done
        note_line "gpu-run.tar.gz was $size bytes: every log cut to its last 64 KiB"
        cp "$LOG" "$RUN/steps.log"
        tar -C "$WORK" -czf "$OUTDIR/gpu-run.tar.gz" gpu-run
    fi
    rm -rf "$WORK"
    echo
    echo "== $OUTDIR (${elapsed}s)"
    ls -l "$OUTDIR" | tail -n +2
}

on_signal() {
    trap '' INT TERM
    if [ -n "$STEP_PID" ]; then
        kill -TERM "$STEP_PID" 2>/dev/null
        wait "$STEP_PID" 2>/dev/null
        step_line "$STEP_NAME" failed - - - "interrupted by $1"
    fi
    note_line "interrupted by $1: what ran so far is packed"
    pack
    exit 130
}
trap 'pack' EXIT
trap 'on_signal SIGINT' INT
trap 'on_signal SIGTERM' TERM

{
    echo "# gpu_run.sh steps: step, status (ok, blocked, failed, timeout, skipped), seconds, budget_s, exit, detail"
    echo "# device: $DEVICE"
    echo "# tiny: $TINY"
    echo "# budget_s: $TOTAL_S"
    echo "# started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# repo: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$LOG"


selected() { # is STEP, or its first word (sweep, decode, ncu), in GPU_RUN_ONLY (or is there no list)?
    [ -z "$ONLY" ] || [ "$1" = facts ] && return 0
    case ",$ONLY," in *",$1,"* | *",${1%%-*},"*) return 0 ;; esac
    return 1
}

last_line() { # the last non-blank line a step printed, without profiler chatter
    sed 1d "$1" 2>/dev/null | grep -v '^[[:space:]]*$' | grep -v '^==PROF==' | tail -n 1
}

gate() { # gate STEP: false (and a skipped line) when STEP is not selected or the budget is gone
    if ! selected "$1"; then
        skip "$1" "not in GPU_RUN_ONLY"
        return 1
    fi
    local left=$((DEADLINE - $(date +%s)))
    if [ "$left" -lt "$MIN_STEP_S" ]; then
        skip "$1" "budget gone: ${left}s left of the run's ${TOTAL_S}s"
        return 1
    fi
    return 0
}

# run_step STEP BUDGET_S EXPECTED STDOUT -- COMMAND...
#   EXPECTED: the file the step must leave for an ok (or - for none); STDOUT: where its
#   stdout goes (- for its log). Prints nothing of its own; the steps log gets one line.
run_step() {
    local name=$1 budget=$2 expected=$3 stdout=$4
    shift 5
    gate "$name" || return 0
    local left=$((DEADLINE - $(date +%s)))
    [ "$budget" -gt "$left" ] && budget=$left
    local log=$RUN/logs/$name.log t0 t1 rc secs detail
    {
        printf '$'
        printf ' %q' "$@"
        printf '\n'
    } >"$log"
    t0=$(now_ms)
    # in the background, so that a signal to this script is handled at once (bash runs a
    # trap only after a foreground child ends); timeout passes a TERM on to the step
    if [ "$stdout" = - ]; then
        timeout -k 5 "$budget" "$@" >>"$log" 2>&1 </dev/null &
    else
        timeout -k 5 "$budget" "$@" >"$stdout" 2>>"$log" </dev/null &
    fi
    STEP_PID=$!
    STEP_NAME=$name
    wait "$STEP_PID"
    rc=$?
    STEP_PID=""
    t1=$(now_ms)
    local outs=()
    [ "$stdout" != - ] && outs=("$stdout")
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        LAST_STATUS=timeout
        detail="over its ${budget}s budget, stopped; last line: $(last_line "$log")"
    elif [ -n "$FINDING" ] && grep -qs -- "$FINDING" "$log" "${outs[@]}"; then
        LAST_STATUS=blocked
        detail="$FINDING_TEXT: $(grep -hs -m1 -- "$FINDING" "$log" "${outs[@]}" | head -n 1)"
    elif [ "$rc" -ne 0 ]; then
        LAST_STATUS=failed
        detail=$(last_line "$log")
    elif [ "$expected" != - ] && [ ! -s "$expected" ]; then
        LAST_STATUS=failed
        detail="exit 0 but no ${expected#"$RUN"/}"
    else
        LAST_STATUS=ok
        detail=${expected#"$RUN"/}
        [ "$expected" = - ] && detail=$(last_line "$log")
    fi
    step_line "$name" "$LAST_STATUS" "$secs" "$budget" "$rc" "$detail"
}

skip() { # skip STEP REASON
    LAST_STATUS=skipped
    step_line "$1" skipped 0 - - "$2"
}

# ------------------------------------------------------------------ sizes per mode
if [ "$DEVICE" = cuda ]; then
    DEV_ARG=cuda
    L1_ARGS=()                            # the tutorial's: 2^28 fp16 scale, 8192^3 fp16 GEMM
    SIZES=16,18,20,22,24,26,28,30         # 2^16..2^30
    T_SIZES=$SIZES
    SWEEP_CALLS=()                        # 5 warm-up + 50 timed calls
    DEC_A=(--preset llama-1b)
    DEC_B=(--preset llama-8b)
    DEC_RUN=(--tokens 128 --warmup 8 --prompt-len 128)
    # each copy is a process that starts CUDA and builds its model: few steps, the starts dominate
    COLOC=(--preset llama-1b --copies 1,2,4,8 --batch 1 --tokens 32 --prompt-len 128)
else
    DEV_ARG=cpu
    L1_ARGS=(--scale-log2 22 --gemm-n 256 --warmup 2 --iters 10)
    SIZES=12,14,16,18,20,22
    T_SIZES=10,12
    SWEEP_CALLS=(--warmup 2 --iters 10)
    # the CPU's stand-ins: tiny, and tiny made deeper, wider and untied like the 8B
    DEC_A=(--preset tiny)
    DEC_B=(--preset tiny --layers 8 --hidden 128 --untied)
    DEC_RUN=(--tokens 16 --warmup 2 --prompt-len 32)
    COLOC=(--preset tiny --copies 1,2,4,8 --batch 1 --tokens 8 --prompt-len 32)
fi
if [ "$TINY" = 1 ]; then
    L1_ARGS=(--scale-log2 16 --gemm-n 64 --warmup 1 --iters 3)
    SIZES=10,12,14,16
    T_SIZES=10,12
    SWEEP_CALLS=(--warmup 1 --iters 3)
    DEC_RUN=(--tokens 4 --warmup 1 --prompt-len 8)
    # two copies: each is a process that imports torch, the slow part of a tiny run
    COLOC=("${COLOC[@]:0:2}" --copies 1,2 --batch 1 --tokens 4 --prompt-len 8)
fi

# ------------------------------------------------------------------ facts
echo "gpu_run.sh: --device $DEVICE, tiny $TINY, budget ${TOTAL_S}s -> $OUTDIR"
FACTS_OUT=$WORK/facts.out
run_step facts 60 "$RUN/facts.json" "$FACTS_OUT" -- "$PY" "$HERE/gpu_facts.py" --device "$DEVICE" --out "$RUN/facts.json"
GPU=0 GPU_NAME="" GPU_REASON="the facts step did not finish" TRITON=0 TRITON_REASON="the facts step did not finish"
if [ -f "$FACTS_OUT" ]; then
    while IFS='=' read -r key value; do
        case "$key" in
        gpu) GPU=$value ;;
        gpu_reason) GPU_REASON=$value ;;
        gpu_name) GPU_NAME=$value ;;
        triton) TRITON=$value ;;
        triton_reason) TRITON_REASON=$value ;;
        summary) note_line "machine: $value" ;;
        esac
    done <"$FACTS_OUT"
fi
{
    echo "== nvidia-smi"
    nvidia-smi 2>&1 || echo "(nvidia-smi: not available)"
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -q 2>&1 | head -n 400
    echo "== uname -a"
    uname -a
    echo "== lscpu"
    lscpu 2>&1 | head -n 30
} >"$RUN/logs/machine.log" 2>&1

if [ "$DEVICE" = cpu ]; then
    skip gpu "--device cpu: the run stays on the CPU"
    NO_GPU=""
elif [ "$GPU" = 1 ]; then
    step_line gpu ok 0 - 0 "torch sees $GPU_NAME"
    NO_GPU=""
else
    NO_GPU="no GPU: torch cannot see one (${GPU_REASON}); bench/gpu_run.sh --device cpu runs on the CPU"
    skip gpu "$NO_GPU"
fi

tool_state() { # "ncu is on PATH" or "ncu is not on PATH"
    if command -v "$1" >/dev/null 2>&1; then echo "$1 is on PATH"; else echo "$1 is not on PATH"; fi
}

rec() { # the record folder of a step
    mkdir -p "$RUN/records/$1"
    echo "$RUN/records/$1"
}

# ------------------------------------------------------------------ lesson1 under torch.profiler
if ! gate lesson1; then
    :
elif [ -n "$NO_GPU" ]; then
    skip lesson1 "$NO_GPU"
else
    d=$(rec lesson1)
    run_step lesson1 60 "$d/torchprof.json" - -- "$PY" "$LAB/torchprof.py" --out "$d/torchprof.json" \
        --trace "$WORK/traces/lesson1.trace.json.gz" "$LAB/lesson1.py" --json "$d/lesson1.json" \
        --device "$DEV_ARG" "${L1_ARGS[@]}"
fi

# ------------------------------------------------------------------ sweeps and decode
sweep() { # sweep STEP BUDGET IMPL OP DTYPE SIZES
    local name=$1 budget=$2 impl=$3 op=$4 dtype=$5 sizes=$6 d
    gate "$name" || return 0
    if [ -n "$NO_GPU" ]; then
        skip "$name" "$NO_GPU"
        return
    fi
    local envs=()
    if [ "$impl" = triton ]; then
        if [ "$TRITON" != 1 ]; then
            skip "$name" "no Triton: ${TRITON_REASON:-this python3 cannot import triton}"
            return
        fi
        # without a GPU Triton runs only in its interpreter (correctness, no bandwidth)
        [ "$DEVICE" = cpu ] && envs=(TRITON_INTERPRET=1)
    fi
    d=$(rec "$name")
    run_step "$name" "$budget" "$d/sweep.json" - -- env "${envs[@]}" "$PY" "$LAB/sweep.py" --impl "$impl" \
        --op "$op" --dtype "$dtype" --sizes "$sizes" --device "$DEV_ARG" "${SWEEP_CALLS[@]}" --json "$d/sweep.json"
}

decode() { # decode STEP BUDGET PRESET-ARGS...
    local name=$1 budget=$2 d
    shift 2
    gate "$name" || return 0
    if [ -n "$NO_GPU" ]; then
        skip "$name" "$NO_GPU"
        return
    fi
    d=$(rec "$name")
    run_step "$name" "$budget" "$d/decode.json" - -- "$PY" "$LAB/decode.py" "$@" --batch 1,8,32,128 \
        --modes eager,graphs "${DEC_RUN[@]}" --device "$DEV_ARG" --json "$d/decode.json"
}

sweep sweep-torch-float16 40 torch scale float16 "$SIZES"
sweep sweep-torch-float32 40 torch scale float32 "$SIZES"
decode decode-1b-class 60 "${DEC_A[@]}"
decode decode-8b-class 90 "${DEC_B[@]}"
sweep sweep-triton-float16 60 triton scale float16 "$T_SIZES"
sweep sweep-triton-float32 60 triton scale float32 "$T_SIZES"
sweep sweep-scale-add-torch-float16 30 torch scale-add float16 "$SIZES"
sweep sweep-scale-add-triton-float16 60 triton scale-add float16 "$T_SIZES"

# ------------------------------------------------------------------ ncu on the scale kernel
if ! gate ncu; then
    :
elif [ "$DEVICE" = cpu ]; then
    skip ncu "--device cpu: ncu profiles GPU kernels ($(tool_state ncu))"
elif ! command -v ncu >/dev/null 2>&1; then
    skip ncu "ncu (Nsight Compute) is not on PATH"
elif [ -n "$NO_GPU" ]; then
    skip ncu "$NO_GPU"
else
    d=$(rec ncu)
    # the lab's own invocation (nsightlab ncu), the clocks left as they are
    ncu_argv=(ncu --csv --clock-control none -k regex:vectorized_elementwise -c 1 --section SpeedOfLight)
    FINDING=ERR_NVGPUCTRPERM
    FINDING_TEXT="the GPU's performance counters could not be read (a finding, not a failure)"
    run_step ncu 60 "$d/ncu.csv" "$d/ncu.csv" -- "${ncu_argv[@]}" --metrics lts__t_sector_hit_rate.pct \
        "$PY" "$LAB/lesson1.py" --json "$d/lesson1.json" --device cuda --warmup 1 --iters 2
    if [ "$LAST_STATUS" = failed ] && ! grep -qs '"ID","Process ID"' "$d/ncu.csv"; then
        # once more with the section alone, in case the extra metric is what it refused
        mv "$d/ncu.csv" "$d/ncu-first-try.csv" 2>/dev/null
        run_step ncu-sol 45 "$d/ncu.csv" "$d/ncu.csv" -- "${ncu_argv[@]}" \
            "$PY" "$LAB/lesson1.py" --json "$d/lesson1.json" --device cuda --warmup 1 --iters 2
    fi
    FINDING=""
    if grep -qs '"ID","Process ID"' "$d/ncu.csv"; then
        note_line "ncu: the counters were read (Speed Of Light rows in records/ncu/ncu.csv)"
    fi
fi

# ------------------------------------------------------------------ nsys, where installed
if ! gate nsys; then
    :
elif [ "$DEVICE" = cpu ]; then
    skip nsys "--device cpu: nsys traces GPU kernels ($(tool_state nsys))"
elif ! command -v nsys >/dev/null 2>&1; then
    skip nsys "nsys (Nsight Systems) is not on PATH"
elif [ -n "$NO_GPU" ]; then
    skip nsys "$NO_GPU"
else
    d=$(rec nsys)
    run_step nsys 60 "$WORK/traces/lesson1.nsys-rep" - -- nsys profile -o "$WORK/traces/lesson1" -f true \
        -t cuda,nvtx "$PY" "$LAB/lesson1.py" --json "$d/lesson1.json" --device cuda
    if [ "$LAST_STATUS" = ok ]; then
        run_step nsys-stats 45 - - -- nsys stats --force-export=true --format csv -o "$d/lesson1" \
            -r cuda_gpu_kern_sum,nvtx_sum,nvtx_kern_sum,nvtx_gpu_proj_sum,cuda_api_sum \
            "$WORK/traces/lesson1.nsys-rep"
        rm -f "$WORK/traces/lesson1.sqlite"
    fi
fi

# ------------------------------------------------------------------ packing copies
if ! gate colocate; then
    :
elif [ ! -f "$LAB/colocate.py" ]; then
    skip colocate "lab_scripts/colocate.py is not in this checkout"
elif [ -n "$NO_GPU" ]; then
    skip colocate "$NO_GPU"
else
    d=$(rec colocate)
    run_step colocate 90 "$d/colocate.json" - -- "$PY" "$LAB/colocate.py" "${COLOC[@]}" --device "$DEV_ARG" \
        --out "$d/colocate.json"
fi

exit 0
