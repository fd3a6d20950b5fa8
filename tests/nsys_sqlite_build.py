"""Nsight Systems SQLite exports built in the schema NVIDIA's exporter writes, for tests whose
answer is known exactly, for the stand-in nsys's `export --type sqlite`, and for the
million-kernel benchmark (bench/nsys_sqlite.py). Standard library only: the stand-in runs
it inside the test pod.

The tables and columns are those of real `nsys export --type sqlite` files (columns in the
same order, the same types and NOT NULL constraints), in three eras:

- "2026.1": nsys 2026.1.3 (export schema 3.24.18): `META_DATA_EXPORT`, `TARGET_INFO_GPU`
  with `TARGET_INFO_CUDA_DEVICE` (CUDA id -> GPU id, per process), `greenContextId`,
  `mangledName`, `graphId`, and the `ENUM_*` label tables;
- "2023.1": nsys 2023.1.2 (schema 3.1.2): the meta table is still `EXPORT_META_DATA`, no
  `TARGET_INFO_CUDA_DEVICE`, no green contexts;
- "2021.1": the early-2021 layout NVIDIA's 2021.1 report scripts read: the GPUs in
  `TARGET_INFO_CUDA_GPU` keyed by `deviceId`, no `ENUM_*` tables, no meta table, NVTX text
  only in `text` (no registered-string `textId`).

Names are `StringIds` ids, as nsys stores them; CUDA API names keep nsys's version suffix
(`cudaLaunchKernel_v7000`). Process and thread ids are serialized GlobalIds, as nsys
writes them: `globalPid = 1<<48 | pid<<24`, `globalTid = globalPid | tid`. Tables are made
lazily, as the exporter does: a report without NVTX has no `NVTX_EVENTS`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

PID = 4242
TID = 4242
VM = 1 << 48

# A version suffix as nsys stores CUDA API names (the reports print them without it).
API_SUFFIX = {
    "cudaLaunchKernel": "_v7000",
    "cudaMemcpyAsync": "_v3020",
    "cudaMemcpy": "_v3020",
    "cudaMemsetAsync": "_v3020",
    "cudaDeviceSynchronize": "_v3020",
    "cudaStreamSynchronize": "_v3020",
    "cudaGraphLaunch": "_v10000",
    "cudaMalloc": "_v3020",
    "cudaFree": "_v3020",
    "cudaEventRecord": "_v3020",
    "cudaEventSynchronize": "_v3020",
}

# CUPTI's memcpy kinds and memory kinds, as the ENUM tables of a 2023+ export label them.
COPY_KINDS = [
    (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
    (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
    (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
    (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
    (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"),
    (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
    (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"),
    (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
    (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
    (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
    (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
    (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
    (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
    (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
]
MEM_KINDS = [
    (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
    (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
    (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
    (3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
    (4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
    (5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"),
    (6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"),
    (7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"),
]
EVENT_TYPES = [
    (33, "NvtxCategory", "NvtxCategory"),
    (34, "NvtxMark", "NvtxMark"),
    (59, "NvtxPushPopRange", "NvtxPushPopRange"),
    (60, "NvtxStartEndRange", "NvtxStartEndRange"),
    (70, "NvtxtPushPopRange", "NvtxtPushPopRange"),
    (71, "NvtxtStartEndRange", "NvtxtStartEndRange"),
    (75, "NvtxDomainCreate", "NvtxDomainCreate"),
    (76, "NvtxDomainDestroy", "NvtxDomainDestroy"),
]
PUSH_POP, START_END, DOMAIN_CREATE = 59, 60, 75

_GPU_COLUMNS = """vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
    l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER,
    pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxswDevPath TEXT, ctrlDevPath TEXT,
    revision INTEGER, nodeMask INTEGER, constantMemory INTEGER, maxIPC INTEGER, maxRegistersPerBlock INTEGER,
    maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER,
    threadsPerWarp INTEGER, asyncEngines INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER,
    maxThreadsPerBlock INTEGER, maxBlockDimX INTEGER, maxBlockDimY INTEGER, maxBlockDimZ INTEGER,
    maxGridDimX INTEGER, maxGridDimY INTEGER, maxGridDimZ INTEGER, computeMajor INTEGER, computeMinor INTEGER,
    smMajor INTEGER, smMinor INTEGER"""
_ENUM = "id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT"
_META = "name TEXT NOT NULL, value TEXT"

# Per era: table -> its columns, in the exporter's order.
_TABLES: dict[str, dict[str, str]] = {
    "2026.1": {
        "StringIds": "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL",
        "META_DATA_EXPORT": _META,
        "ENUM_CUDA_MEMCPY_OPER": _ENUM,
        "ENUM_CUDA_MEM_KIND": _ENUM,
        "ENUM_NSYS_EVENT_TYPE": _ENUM,
        "TARGET_INFO_GPU": _GPU_COLUMNS,
        "TARGET_INFO_CUDA_DEVICE": "gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, uuid TEXT, "
        "numMultiprocessors INTEGER",
        "CUPTI_ACTIVITY_KIND_KERNEL": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
            contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
            globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
            launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,
            gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
            blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
            localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
            sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER,
            qmdBulkReleaseDone INTEGER, qmdPreexitDone INTEGER, qmdLastCtaDone INTEGER, graphId INTEGER,
            clusterX INTEGER, clusterY INTEGER, clusterZ INTEGER, clusterSchedulingPolicy INTEGER,
            maxPotentialClusterSize INTEGER, maxActiveClusters INTEGER, sharedMemoryRequestedPercentage INTEGER,
            tensorSizeMinusOneElements TEXT NOT NULL""",
        "CUPTI_ACTIVITY_KIND_MEMCPY": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
            contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
            globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER,
            srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER,
            dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER,
            copyCount INTEGER""",
        "CUPTI_ACTIVITY_KIND_MEMSET": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
            contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
            globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER,
            memKind INTEGER""",
        "CUPTI_ACTIVITY_KIND_RUNTIME": """start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
            callchainId INTEGER""",
        "NVTX_EVENTS": """start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
            category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
            domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
            int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT""",
    },
}
_TABLES["2023.1"] = {
    **{k: v for k, v in _TABLES["2026.1"].items() if k not in ("META_DATA_EXPORT", "TARGET_INFO_CUDA_DEVICE")},
    "EXPORT_META_DATA": _META,
    "CUPTI_ACTIVITY_KIND_KERNEL": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
        contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
        demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
        cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
        gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
        staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
        localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
        sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER""",
    "CUPTI_ACTIVITY_KIND_MEMCPY": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
        contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
        bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
        srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
        graphNodeId INTEGER, virtualAddress INTEGER""",
    "CUPTI_ACTIVITY_KIND_MEMSET": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
        contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
        value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER""",
}
_TABLES["2021.1"] = {
    "StringIds": "id INTEGER PRIMARY KEY, value TEXT NOT NULL",
    "TARGET_INFO_CUDA_GPU": """deviceId INTEGER NOT NULL, name TEXT, totalMemory INTEGER,
        computeCapabilityMajor INTEGER, computeCapabilityMinor INTEGER, numMultiprocessors INTEGER,
        numThreadsPerWarp INTEGER,
        maxWarpsPerMultiprocessor INTEGER, coreClockRate INTEGER, maxIPC INTEGER""",
    "CUPTI_ACTIVITY_KIND_KERNEL": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
        contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
        demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, launchType INTEGER, cacheConfig INTEGER,
        registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
        blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
        staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
        localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
        sharedMemoryExecuted INTEGER""",
    "CUPTI_ACTIVITY_KIND_MEMCPY": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
        contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
        bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
        srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER""",
    "CUPTI_ACTIVITY_KIND_MEMSET": """start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
        contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
        value INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER""",
    "CUPTI_ACTIVITY_KIND_RUNTIME": """start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
        globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
        callchainId INTEGER""",
    "NVTX_EVENTS": """start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
        category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER""",
}
SCHEMA_VERSION = {"2026.1": ("3.24.18", "2026.1.3.425"), "2023.1": ("3.1.2", "2023.1.2.43")}
ERAS = tuple(_TABLES)


def global_pid(pid: int) -> int:
    return VM | pid << 24


def global_tid(pid: int, tid: int) -> int:
    return global_pid(pid) | tid


def api_name(name: str) -> str:
    """A CUDA API name as nsys stores it (`cudaLaunchKernel` -> `cudaLaunchKernel_v7000`)."""
    return name + API_SUFFIX.get(name, "")


def short_name(name: str) -> str:
    """A kernel's base name, as `shortName` holds it: no return type, template or arguments."""
    head = name.split("(", 1)[0]
    depth = 0
    out = []
    for ch in head:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip().split(" ")[-1].split("::")[-1] or name


class ExportWriter:
    """Writes an export table by table; rows may come from generators (a million kernels
    need not be held in memory). Call `close()` (or use it as a context manager) to commit.

    Kernel rows: (start, end, name, device, stream, corr[, pid[, short]]); memcpy rows:
    (start, end, bytes, copy_kind, src_kind, dst_kind, device, stream, corr[, pid]); memset
    rows: (start, end, bytes, device, stream, corr[, pid]); API rows: (start, end, name,
    corr[, tid[, pid]]) with the name as nsys stores it (see `api_name`); NVTX rows:
    (start, end, text, tid[, event_type[, domain[, pid]]]).
    """

    def __init__(
        self, path: str | Path, era: str = "2026.1", *, registered_nvtx: bool = False, product: str | None = None
    ) -> None:
        self.era = era
        self.tables = _TABLES[era]
        self.path = Path(path)
        self.path.unlink(missing_ok=True)
        self.db = sqlite3.connect(str(self.path))
        self.db.execute("PRAGMA journal_mode=DELETE")
        self.made: set[str] = set()
        self.strings: dict[str, int] = {}
        self.registered_nvtx = registered_nvtx and "textId" in self.columns("NVTX_EVENTS")
        self._table("StringIds")
        if era in SCHEMA_VERSION:
            self.meta(SCHEMA_VERSION[era][0], product or SCHEMA_VERSION[era][1])
        if "ENUM_CUDA_MEMCPY_OPER" in self.tables:
            self._insert("ENUM_CUDA_MEMCPY_OPER", COPY_KINDS)
            self._insert("ENUM_CUDA_MEM_KIND", MEM_KINDS)
            self._insert("ENUM_NSYS_EVENT_TYPE", EVENT_TYPES)

    def __enter__(self) -> ExportWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.commit()
        self.db.close()

    def columns(self, table: str) -> list[str]:
        return [c.split()[0] for c in self.tables[table].split(",") if c.strip()]

    def _table(self, name: str) -> None:
        if name not in self.made:
            cols = " ".join(self.tables[name].split())
            self.db.execute(f"CREATE TABLE {name} ({cols})")
            self.made.add(name)

    def _insert(self, table: str, rows: Iterable[tuple[object, ...]], columns: tuple[str, ...] | None = None) -> None:
        self._table(table)
        if columns is None:
            n = len(self.columns(table))
            sql = f"INSERT INTO {table} VALUES ({','.join('?' * n)})"
        else:
            sql = f"INSERT INTO {table} ({','.join(f'[{c}]' for c in columns)}) VALUES ({','.join('?' * len(columns))})"
        self.db.executemany(sql, rows)

    def string(self, text: str) -> int:
        sid = self.strings.get(text)
        if sid is None:
            sid = self.strings[text] = len(self.strings) + 1
            self.db.execute("INSERT INTO StringIds VALUES (?, ?)", (sid, text))
        return sid

    def meta(self, schema: str, product: str, table: str | None = None) -> None:
        table = table or ("META_DATA_EXPORT" if "META_DATA_EXPORT" in self.tables else "EXPORT_META_DATA")
        major, minor, micro = [*schema.split("."), "0", "0"][:3]
        self._insert(
            table,
            [
                ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
                ("EXPORT_PRODUCT_VERSION", product),
                ("EXPORT_SCHEMA_VERSION", schema),
                ("EXPORT_SCHEMA_VERSION_MAJOR", major),
                ("EXPORT_SCHEMA_VERSION_MINOR", minor),
                ("EXPORT_SCHEMA_VERSION_MICRO", micro),
                ("EXPORT_PARAM_EXPORT_TYPE", "SQLite"),
            ],
            ("name", "value"),
        )

    def gpu(self, gpu_id: int, name: str, *, pids: Iterable[int] = (PID,), cuda_id: int | None = None) -> None:
        """A GPU, and (2026.1) the CUDA id each process knows it by."""
        cuda = gpu_id if cuda_id is None else cuda_id
        if "TARGET_INFO_CUDA_GPU" in self.tables:
            self._insert("TARGET_INFO_CUDA_GPU", [(cuda, name, 80 << 30, 9, 0, 132, 32, 64, 1_980_000, 4)])
            return
        row = [VM, gpu_id, name, "0000:01:00.0", 1, 50 << 20, 80 << 30, 3_350_000_000_000, 1_980_000_000, 132]
        row += [gpu_id, f"uuid-{gpu_id}", 0, "GH100", cuda, "", "", 161, 0, 65536, 4, 65536, 49152, 232448]
        row += [233472, 65536, 32, 3, 64, 32, 1024, 1024, 1024, 64, 2147483647, 65535, 65535, 9, 0, 9, 0]
        self._insert("TARGET_INFO_GPU", [tuple(row)])
        if "TARGET_INFO_CUDA_DEVICE" in self.tables:
            self._insert("TARGET_INFO_CUDA_DEVICE", [(gpu_id, cuda, pid, f"uuid-{gpu_id}", 132) for pid in pids])

    def kernels(self, rows: Iterable[tuple[object, ...]]) -> None:
        known = self.columns("CUPTI_ACTIVITY_KIND_KERNEL")
        modern = "tensorSizeMinusOneElements" in known
        has_mangled = "mangledName" in known
        cols = ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName"]
        cols += ["shortName", "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"]
        cols += ["staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread", "localMemoryTotal", "gridId"]
        cols += ["mangledName"] if has_mangled else []
        cols += ["tensorSizeMinusOneElements"] if modern else []
        short_ids: dict[str, int] = {}

        def out() -> Iterable[tuple[object, ...]]:
            for grid, row in enumerate(rows):
                start, end, name, device, stream, corr = row[:6]
                pid = row[6] if len(row) > 6 else PID
                assert isinstance(name, str)
                nid = self.string(name)
                short = row[7] if len(row) > 7 else None
                sid = short_ids.get(name)
                if sid is None:
                    sid = short_ids[name] = self.string(str(short) if short else short_name(name))
                values: list[object] = [start, end, device, 1, stream, corr, global_pid(int(str(pid))), nid, sid]
                values += [32, 128, 1, 1, 256, 1, 1, 0, 0, 0, 0, grid]
                values += [None] if has_mangled else []
                values += ["[]"] if modern else []
                yield tuple(values)

        self._insert("CUPTI_ACTIVITY_KIND_KERNEL", out(), tuple(cols))

    def memcpys(self, rows: Iterable[tuple[object, ...]]) -> None:
        cols = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "bytes")
        cols += ("copyKind", "srcKind", "dstKind")
        self._insert(
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            (
                (r[0], r[1], r[6], 1, r[7], r[8], global_pid(int(str(r[9] if len(r) > 9 else PID))), *r[2:6])
                for r in rows
            ),
            cols,
        )

    def memsets(self, rows: Iterable[tuple[object, ...]]) -> None:
        cols = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "value", "bytes")
        cols += ("memKind",)
        self._insert(
            "CUPTI_ACTIVITY_KIND_MEMSET",
            (
                (r[0], r[1], r[3], 1, r[4], r[5], global_pid(int(str(r[6] if len(r) > 6 else PID))), 0, r[2], 2)
                for r in rows
            ),
            cols,
        )

    def api(self, rows: Iterable[tuple[object, ...]]) -> None:
        def out() -> Iterable[tuple[object, ...]]:
            for r in rows:
                start, end, name, corr = r[:4]
                tid = int(str(r[4])) if len(r) > 4 else TID
                pid = int(str(r[5])) if len(r) > 5 else PID
                assert isinstance(name, str)
                driver = 1 if name.startswith("cu") and not name.startswith("cuda") else 0
                yield (start, end, driver, global_tid(pid, tid), corr, self.string(name), 0, None)

        self._insert("CUPTI_ACTIVITY_KIND_RUNTIME", out())

    def domain(self, domain_id: int, name: str, tid: int = TID, pid: int = PID) -> None:
        self._nvtx([(0, None, DOMAIN_CREATE, name, global_tid(pid, tid), domain_id)])

    def nvtx(self, rows: Iterable[tuple[object, ...]]) -> None:
        def out() -> Iterable[tuple[object, ...]]:
            for r in rows:
                start, end, text, tid = r[:4]
                kind = r[4] if len(r) > 4 else PUSH_POP
                domain = r[5] if len(r) > 5 else 0
                pid = int(str(r[6])) if len(r) > 6 else PID
                yield (start, end, kind, text, global_tid(pid, int(str(tid))), domain)

        self._nvtx(out())

    def _nvtx(self, rows: Iterable[tuple[object, ...]]) -> None:
        if self.registered_nvtx:
            # registered strings (nvtxDomainRegisterString): the text is a StringIds id
            def registered() -> Iterable[tuple[object, ...]]:
                for start, end, kind, text, gtid, domain in rows:
                    if kind == DOMAIN_CREATE:
                        yield (start, end, kind, text, None, gtid, domain)
                    else:
                        yield (start, end, kind, None, self.string(str(text)), gtid, domain)

            cols: tuple[str, ...] = ("start", "end", "eventType", "text", "textId", "globalTid", "domainId")
            self._insert("NVTX_EVENTS", registered(), cols)
        else:
            self._insert("NVTX_EVENTS", rows, ("start", "end", "eventType", "text", "globalTid", "domainId"))

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> None:
        """Raw SQL, for tests that damage an export on purpose."""
        self.db.execute(sql, params)


# ------------------------------------------------------------ from CSV exports

_COPY_IDS = {label: cid for cid, _, label in COPY_KINDS}
_COPY_IDS.update({"HtoD": 1, "DtoH": 2, "HtoA": 3, "AtoH": 4, "AtoA": 5, "AtoD": 6, "DtoA": 7, "DtoD": 8})
_COPY_IDS.update({"HtoH": 9, "PtoP": 10})
_MEM_KIND_IDS = {label: mid for mid, _, label in MEM_KINDS}


def _csv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _cell(row: dict[str, str], *names: str) -> str:
    for name in names:
        if row.get(name):
            return row[name]
    return ""


def from_csv_exports(files: dict[str, Path], out: str | Path, era: str = "2026.1") -> Path:
    """An export holding what one capture's `nsys stats --format csv` trace exports hold:
    `cuda_gpu_trace` (kernels, copies, sets, the GPUs its Device column names),
    `nvtx_pushpop_trace` and `cuda_api_trace` (whichever are given; times in ns). Copy
    sizes come from `Bytes (MB)`, so to the byte only as far as nsys printed them."""
    calls = []
    for r in _csv_rows(files["cuda_api_trace"]) if "cuda_api_trace" in files else []:
        start = int(r["Start (ns)"])
        corr = int(_cell(r, "CorrID", "CorrId")) if _cell(r, "CorrID", "CorrId") else None
        calls.append((start, start + int(r["Duration (ns)"]), api_name(r["Name"]), corr, int(r["Tid"]), int(r["Pid"])))
    pid_of = {c[3]: c[5] for c in calls}  # an operation runs in the process that launched it
    kernels: list[tuple[object, ...]] = []
    copies: list[tuple[object, ...]] = []
    sets: list[tuple[object, ...]] = []
    devices: dict[int, str] = {}
    for r in _csv_rows(files["cuda_gpu_trace"]):
        start = int(r["Start (ns)"])
        end = start + int(r["Duration (ns)"])
        corr = int(r["CorrId"]) if r.get("CorrId") else None
        pid = pid_of.get(corr, PID)
        device_cell = r.get("Device") or "GPU (0)"
        name_part, _, index = device_cell.rpartition(" (")
        device = int(index.rstrip(")")) if index.rstrip(")").isdigit() else 0
        devices.setdefault(device, name_part or device_cell)
        stream = int(r["Strm"]) if r.get("Strm") else 0
        name = r["Name"]
        nbytes = round(float(_cell(r, "Bytes (MB)") or 0) * 1e6)
        if name.startswith("[CUDA memcpy"):
            label = name[len("[CUDA memcpy ") : -1]
            src = _MEM_KIND_IDS.get(r.get("SrcMemKd") or "", 7)
            dst = _MEM_KIND_IDS.get(r.get("DstMemKd") or "", 7)
            copies.append((start, end, nbytes, _COPY_IDS.get(label, 0), src, dst, device, stream, corr, pid))
        elif name.startswith("[CUDA memset"):
            sets.append((start, end, nbytes, device, stream, corr, pid))
        else:
            kernels.append((start, end, name, device, stream, corr, pid))
    with ExportWriter(out, era) as w:
        for device, name in sorted(devices.items()):
            w.gpu(device, name)
        if kernels:
            w.kernels(kernels)
        if copies:
            w.memcpys(copies)
        if sets:
            w.memsets(sets)
        if calls:
            w.api(calls)
        if "nvtx_pushpop_trace" in files:
            ranges = []
            for r in _csv_rows(files["nvtx_pushpop_trace"]):
                domain, _, text = r["Name"].partition(":")
                assert not domain, "a named NVTX domain: not converted"
                ranges.append(
                    (int(r["Start (ns)"]), int(r["End (ns)"]), text, int(r["TID"]), PUSH_POP, 0, int(r["PID"]))
                )
            w.nvtx(ranges)
    return Path(out)


# ------------------------------------------------------------ the stand-in's report


def split(total: int, n: int) -> list[int]:
    """`n` whole durations that add up to `total` exactly."""
    base, extra = divmod(total, n)
    return [base + 1] * extra + [base] * (n - extra)


def lesson_export(
    out: str | Path,
    kern_sum_csv: str | Path,
    work: dict[str, object] | None = None,
    *,
    device: str = "NVIDIA GeForce RTX 5090",
    scale: int = 1000,
    product: str | None = None,
) -> Path:
    """The stand-in nsys's SQLite export of a run: the kernels of a real kernel summary
    (`kern_sum_csv`, fixture 03), each with its total time in 1/`scale` of its instances,
    launched one after another with `cudaLaunchKernel`; and, for a lesson1 JSON (`work`),
    each timed range as an NVTX push/pop range around its `calls` kernels (the fixture's
    elementwise or GEMM kernel), each kernel as long as the script timed a call, its
    warm-up calls before the range. Returns `out`."""
    rows = _csv_rows(Path(kern_sum_csv))
    kernels: list[tuple[object, ...]] = []
    api: list[tuple[object, ...]] = []
    ranges: list[tuple[object, ...]] = []
    clock = [1_000_000_000, 0]  # time, correlation id

    def launch(name: str, duration: int) -> None:
        t, corr = clock[0], clock[1] + 1
        api.append((t, t + 2_000, api_name("cudaLaunchKernel"), corr))
        kernels.append((t + 5_000, t + 5_000 + duration, name, 0, 7, corr))
        clock[0], clock[1] = t + 6_000 + duration, corr

    for r in rows:
        for duration in split(int(r["Total Time (ns)"]), max(1, int(r["Instances"]) // scale)):
            launch(r["Name"], duration)
    if work is not None:
        names = [r["Name"] for r in rows]
        gemm = next(n for n in names if "cutlass" in n)
        elementwise = next(n for n in names if "vectorized_elementwise_kernel" in n and "MulFunctor" in n)
        timed = work.get("ranges")
        assert isinstance(timed, list)
        for w in timed:
            name = gemm if w["kernel_kind"] == "gemm" else elementwise
            per_call = w["seconds_per_call"] * 1e9
            for duration in split(round(per_call * int(w.get("warmup") or 3)), int(w.get("warmup") or 3)):
                launch(name, duration)
            start = clock[0]
            for duration in split(round(per_call * int(w["calls"])), int(w["calls"])):
                launch(name, duration)
            ranges.append((start, clock[0] - 500, w["name"], TID))  # ends before the next launch
    with ExportWriter(out, "2026.1", product=product) as w:
        w.gpu(0, device)
        w.kernels(kernels)
        w.api(api)
        if ranges:
            w.nvtx(ranges)
    return Path(out)
