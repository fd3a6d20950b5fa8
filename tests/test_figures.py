"""The report's figures: checked as matplotlib objects before saving, then as images."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from reportstore import NSYS03, Recorded, lesson1_json, recorded

pytest.importorskip("matplotlib")

from nsightlab.analysis.profile_models import ProfileResult
from nsightlab.analysis.sweep_result import SweepResult
from nsightlab.parse.names import distinct_short_names
from nsightlab.present import figures, sweepfigure
from nsightlab.runs.analyze import analyze_path
from nsightlab.runs.store import stored_result
from nsightlab.specs import gpus

RTX = gpus.BY_KEY["rtx-pro-6000-server"].name
H100 = gpus.BY_KEY["h100-sxm"].name


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    pytest.importorskip("torch")
    return recorded(tmp_path_factory)


def _result(rec: Recorded, run_id: str) -> Any:
    (folder,) = [p for p in (rec.home / "runs").iterdir() if p.name.endswith(run_id)]
    return stored_result(folder)


def _legend(fig: Any) -> list[str]:
    return [t.get_text() for leg in fig.legends for t in leg.get_texts()]


def _by_gid(ax: Any, prefix: str) -> list[Any]:
    return [a for a in [*ax.get_lines(), *ax.patches, *ax.collections] if (a.get_gid() or "").startswith(prefix)]


def _image_ok(png: Path) -> Any:
    from matplotlib import image

    img = image.imread(png)
    h, w = img.shape[:2]
    assert 300 <= w <= 3000 and 150 <= h <= 3000, img.shape
    gray = img[..., :3].mean(axis=2)
    assert gray.std() > 0.05, "blank image"  # a white page has std 0
    assert (gray < 0.5).mean() > 0.005  # some ink: lines, text
    return img


# --- sweep ---


def _panels(plot: Any) -> list[Any]:
    """The main axes of each panel, in order."""
    return [ax for sub in plot.figure.subfigs for ax in sub.axes if (ax.get_gid() or "").startswith("panel-")]


def _strips(plot: Any) -> list[Any]:
    return [ax for sub in plot.figure.subfigs for ax in sub.axes if ax.get_gid() == "strip"]


def _panel_legend(plot: Any, k: int) -> list[str]:
    return [t.get_text().replace("\n", " ") for leg in plot.figure.subfigs[k].legends for t in leg.get_texts()]


def _inside(plot: Any) -> None:
    """Every title, legend and note is inside the canvas: nothing is cut off."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plot.figure
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = canvas.get_width_height()
    texts = [fig._suptitle, fig._supxlabel] + [leg for sub in fig.subfigs for leg in sub.legends]
    texts += [ax._left_title for ax in _panels(plot)]
    for artist in [t for t in texts if t is not None and (not hasattr(t, "get_text") or t.get_text())]:
        box = artist.get_window_extent(renderer)
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, (artist, box)


def test_sweep_figure_a_panel_per_dtype_and_the_float16_cpu_run_left_out(rec: Recorded) -> None:
    f16: SweepResult = _result(rec, rec.cpu_f16)
    f32: SweepResult = _result(rec, rec.cpu_f32)
    assert not f16.summary.bandwidth_test and f32.summary.bandwidth_test  # float16 on a CPU converts each element
    plot = sweepfigure.sweep_figure([f16, f32])
    (ax,) = _panels(plot)  # float16 is not drawn: only float32's panel
    assert ax.get_xlabel() == "tensor size, log2(elements)" and "TB/s" in ax.get_ylabel()
    (series,) = _by_gid(ax, "series-")
    assert list(series.get_xdata()) == [12, 14, 16]
    assert list(series.get_ydata()) == [r.tbps for r in f32.rows]
    assert ax.get_title(loc="left").startswith("float32 x.mul_")
    note = plot.figure._supxlabel.get_text().replace("\n", " ")
    assert note.startswith("Not drawn (not bandwidth tests") and f"run {rec.cpu_f16}" in note
    assert "is not a bandwidth test" in note
    assert f"Not drawn, as not bandwidth tests: float16 (run {rec.cpu_f16})." in plot.caption
    labels = _panel_legend(plot, 0)
    cpu = f"cpu ({f32.summary.device_name})"  # this machine's CPU, as torch names it
    assert any("float32" in t and cpu in t and rec.cpu_f32 in t for t in labels)
    # one run: its regimes in the background, each named in the legend
    assert {a.get_gid() for a in _by_gid(ax, "regime-")} == {f"regime-{r.regime}" for r in f32.rows}
    for regime in {r.regime for r in f32.rows}:
        assert sweepfigure.REGIME_NAMES[regime] in labels, regime
    # no spec for a CPU: no DRAM spec line, no reference curve; the last-level cache
    assert _by_gid(ax, "dram-spec") == [] and _by_gid(ax, "reference") == []
    (cache,) = _by_gid(ax, "cache-")
    l2 = f32.summary.l2_bytes
    assert l2 is not None and cache.get_xdata()[0] == math.log2(l2 / 4)
    assert any(t.startswith("last-level cache") and "float32 elements" in t for t in labels)
    _inside(plot)


def test_sweep_figure_gpu_reference_spec_and_l2(rec: Recorded) -> None:
    ref: SweepResult = _result(rec, rec.ref_sweep)
    plot = sweepfigure.sweep_figure([ref])
    (ax,) = _panels(plot)
    assert ax.get_xlabel() == "tensor size, log2(elements)"
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()  # 0.04 .. 5.45 TB/s
    (spec,) = _by_gid(ax, "dram-spec")
    assert list(spec.get_ydata()) == [1.597, 1.597]
    labels = _panel_legend(plot, 0)
    assert "DRAM spec: 1.597 TB/s, RTX PRO 6000 Blackwell Server Edition datasheet" in labels
    (cache,) = _by_gid(ax, "cache-")
    assert cache.get_xdata()[0] == 26  # 128 MiB / 2 B = 2^26 float16 elements
    assert "L2 128 MiB = 2^26 float16 elements" in labels
    (reference,) = _by_gid(ax, "reference")  # the run is on the tutorial's GPU
    assert list(reference.get_xdata()) == [16, 20, 22, 24, 26, 28, 30]
    assert any(t.startswith("tutorial's sweep") and RTX in t for t in labels)
    (plateau,) = _by_gid(ax, "plateau-")
    assert plateau.get_ydata()[0] == pytest.approx(1.462, abs=0.002)
    assert {a.get_gid() for a in _by_gid(ax, "regime-")} == {
        "regime-launch",
        "regime-cache",
        "regime-transition",
        "regime-dram",
    }
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"$2^{{{n}}}$" for n in (16, 20, 22, 24, 26, 28, 30)]
    assert plot.figure._suptitle.get_text() == f"Bandwidth sweep on {RTX}"
    _inside(plot)


def test_sweep_figure_gpu_and_cpu_title_fits_and_the_cpu_float16_is_a_note(rec: Recorded) -> None:
    """The report's own pair (the browser test's page): a GPU float16 sweep and this CPU's
    float16 one. The CPU's is no bandwidth test, so the figure is the GPU's, and says so."""
    ref, cpu16 = _result(rec, rec.ref_sweep), _result(rec, rec.cpu_f16)
    plot = sweepfigure.sweep_figure([ref, cpu16])
    (ax,) = _panels(plot)
    assert len(_by_gid(ax, "dram-spec")) == 1 and len(_by_gid(ax, "series-")) == 1
    assert f"run {rec.cpu_f16}" in plot.figure._supxlabel.get_text().replace("\n", " ")
    _inside(plot)


def test_sweep_figure_panels_per_dtype_and_implementation_with_regimes_per_run() -> None:
    f32, bf16 = _data_sweep("float32", "f32000"), _data_sweep("float64", "f64000")
    again = _data_sweep("float32", "f32111")
    for row in again.rows:
        row.tbps *= 1.2
    torch_add = _data_file("sweep_cpu_float32_scale-add_torch_xeon-2c-l3-480mib.json", "add000")
    plot = sweepfigure.sweep_figure([f32, bf16, again, torch_add])
    titles = [ax.get_title(loc="left").replace("\n", " ") for ax in _panels(plot)]
    assert [t.split(" on ")[0] for t in titles] == [
        "float32 x.mul_",
        "float64 x.mul_",
        "float32 x.mul_ + x.add_ (2 kernels)",
    ]
    first = _panels(plot)[0]
    assert len(_by_gid(first, "series-")) == 2  # the two float32 runs, together
    # two runs in a panel: no background shading (it would be one run's); a strip, a row per run
    assert _by_gid(first, "regime-") == []
    (strip,) = _strips(plot)
    assert [t.get_text() for t in strip.get_yticklabels()] == ["float32 f32000", "float32 f32111"]
    for regime in {r.regime for s in (f32, again) for r in s.rows}:
        assert sweepfigure.REGIME_NAMES[regime] in _panel_legend(plot, 0)
    # a panel of one run shades its background from that run
    assert {a.get_gid() for a in _by_gid(_panels(plot)[1], "regime-")} == {f"regime-{r.regime}" for r in bf16.rows}
    assert "One panel per dtype and implementation (3)." in plot.caption
    _inside(plot)


def test_sweep_figure_of_no_bandwidth_test_draws_them_and_says_so() -> None:
    f16 = _data_sweep("float16", "f16000")
    interpreted = _data_file("sweep_cpu_float32_scale-add_triton-interpreted_xeon-2c-l3-480mib.json", "tri000")
    plot = sweepfigure.sweep_figure([f16, interpreted])
    titles = [ax.get_title(loc="left").replace("\n", " ") for ax in _panels(plot)]
    assert len(titles) == 2
    assert "(not a bandwidth test: float16 on a CPU is not a bandwidth test" in titles[0]
    assert titles[1].endswith("(not a bandwidth test: Triton's interpreter: correctness only)")
    assert all(line.get_linestyle() == ":" for ax in _panels(plot) for line in _by_gid(ax, "series-"))
    assert plot.figure._supxlabel is None or plot.figure._supxlabel.get_text() == ""
    _inside(plot)


# --- roofline ---


def _lesson1(tmp_path: Path, gpu: str, scale_us: float, gemm_us: float) -> ProfileResult:
    path = tmp_path / f"{gpu.replace(' ', '_')}.json"
    path.write_text(json.dumps(lesson1_json(gpu, scale_us, gemm_us)))
    result = analyze_path(path)
    assert isinstance(result, ProfileResult)
    return result


def test_roofline_with_both_roofs(tmp_path: Path) -> None:
    h100 = _lesson1(tmp_path, H100, 350.0, 1500.0)
    h100.run_id = "h100aa"
    plot = figures.roofline_figure([h100])
    assert plot is not None
    ax = plot.figure.axes[0]
    assert ax.get_xlabel() == "arithmetic intensity (FLOP per byte moved)"
    assert ax.get_ylabel() == "achieved rate (TFLOP/s, log scale)"
    assert ax.get_xscale() == ax.get_yscale() == "log"
    (memory,) = _by_gid(ax, "memory-roof")
    xs, ys = memory.get_xdata(), memory.get_ydata()
    # below the ridge the roof is bandwidth x intensity, above it the tensor peak
    assert ys[0] == pytest.approx(3.35e12 * xs[0] / 1e12)
    assert max(ys) == pytest.approx(989.0)
    roofs = sorted(line.get_ydata()[0] for line in _by_gid(ax, "compute-roof"))
    assert roofs == [67.0, 989.0]  # FP32 CUDA cores (the scale), FP16 tensor (the GEMM)
    points = {p.get_label().split(" ")[0]: p.get_offsets()[0] for p in _by_gid(ax, "point-")}
    scale, gemm = (r.rates for r in h100.ranges)
    assert scale is not None and gemm is not None
    assert tuple(points["memory_bound_scale"]) == pytest.approx((0.25, scale.flops_per_s / 1e12))
    assert tuple(points["compute_bound_gemm"]) == pytest.approx((8192 / 3, gemm.flops_per_s / 1e12))
    labels = _legend(plot.figure)
    assert "compute roof: 989 TFLOP/s dense FP16 tensor, NVIDIA H100 SXM datasheet" in labels
    assert any("h100aa" in t and H100 in t for t in labels)


def test_roofline_tutorial_gpu_has_no_compute_roof_and_a_measured_one(rec: Recorded) -> None:
    prof: ProfileResult = _result(rec, rec.ref_profile)
    plot = figures.roofline_figure([prof], [(RTX, "1.46 TB/s, run x", 1.46e12)])
    assert plot is not None
    ax = plot.figure.axes[0]
    assert len(_by_gid(ax, "memory-roof")) == 1 and _by_gid(ax, "compute-roof") == []
    assert len(_by_gid(ax, "measured-roof")) == 1
    assert any("no compute roof" in t.get_text() for t in ax.texts)


def test_roofline_cpu_points_only(rec: Recorded) -> None:
    prof: ProfileResult = _result(rec, rec.cpu_profile)
    plot = figures.roofline_figure([prof])
    assert plot is not None
    ax = plot.figure.axes[0]
    assert _by_gid(ax, "memory-roof") == [] and len(_by_gid(ax, "point-")) == 2
    assert "TFLOP/s" in ax.get_ylabel()  # one unit for compute rates, a CPU's too (0.174 TFLOP/s)
    assert any("no spec roofs" in t.get_text() for t in ax.texts)
    # a profile without ranges has nothing to place
    assert figures.roofline_figure([_result(rec, rec.kern03)]) is None


# --- kernels ---


def test_kernels_figure_from_fixture_03(rec: Recorded) -> None:
    prof: ProfileResult = _result(rec, rec.kern03)
    plot = figures.kernels_figure(prof)
    assert plot is not None and plot.key == f"kernels-{rec.kern03}"
    ax = plot.figure.axes[0]
    bars = _by_gid(ax, "kernel-bars")
    top = sorted(prof.kernels, key=lambda k: -k.total_ns)[:10]
    assert len(prof.kernels) > 10 and len(bars) == 10
    # one unit for the axis, from the largest bar (over a second: s)
    assert max(k.total_ns for k in top) >= 1e9
    assert [b.get_width() for b in bars] == pytest.approx([k.total_ns / 1e9 for k in top])
    assert ax.get_xlabel() == "total time (s), all instances"
    names = [t.get_text() for t in ax.get_yticklabels()]
    # the column's short names, each kernel's own (fixture 03 has gemvx kernels that differ past 60 characters)
    assert names == distinct_short_names([k.name for k in top]) and len(set(names)) == len(names)
    assert any("gemvx" in n for n in names)
    assert ax.get_title(loc="left") == f"Top GPU kernels by total time: dsocr, run {rec.kern03}"


# --- saved files ---


def test_saved_png_and_svg(rec: Recorded, tmp_path: Path) -> None:
    for plot in (
        sweepfigure.sweep_figure([_result(rec, rec.ref_sweep), _result(rec, rec.cpu_f16)]),
        figures.roofline_figure([_result(rec, rec.ref_profile)]),
        figures.kernels_figure(_result(rec, rec.kern03)),
    ):
        assert plot is not None
        png, svg = figures.save(plot, tmp_path)
        assert png.name == f"{plot.key}.png" and svg.name == f"{plot.key}.svg"
        _image_ok(png)
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg")
        assert len(list(root.iter())) > 100  # paths, text: not an empty canvas


def test_missing_matplotlib_is_a_clear_usage_error(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None  # as if the report extra were not installed\n"
        "from nsightlab.present import figures\n"
        "from nsightlab.errors import UsageError\n"
        "assert not figures.available()\n"
        "try:\n    figures.new_figure(1, 1)\n"
        "except UsageError as e:\n    print(e.exit_code.value, e.line())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2 error: plotting needs matplotlib: pip install 'nsightlab[report]'."


def test_kernel_names_are_literal_text(tmp_path: Path) -> None:
    prof = analyze_path(NSYS03)
    assert isinstance(prof, ProfileResult)
    prof.kernels[0].name = prof.kernels[0].short_name = "kernel<$x$, $y$>"
    plot = figures.kernels_figure(prof)
    assert plot is not None
    assert plot.figure.axes[0].get_yticklabels()[0].get_text() == r"kernel<\$x\$, \$y\$>"
    png, _ = figures.save(plot, tmp_path)  # mathtext would have rendered x and y in italics; it must not fail
    _image_ok(png)


def test_regime_spans() -> None:
    # halfway to the neighbours; at most one step of log2 past the first and last size
    assert sweepfigure._spans([16, 20, 22]) == [(15, 18), (18, 21), (21, 23)]
    assert sweepfigure._spans([12, 13]) == [(11.5, 12.5), (12.5, 13.5)]
    assert sweepfigure._spans([20]) == [(19.5, 20.5)]

    class Row:
        def __init__(self, log2: int, regime: str) -> None:
            self.log2, self.regime = log2, regime

    rows = [Row(16, "launch"), Row(20, "launch"), Row(24, "cache"), Row(28, "dram"), Row(30, "dram")]
    assert sweepfigure.regime_runs(rows) == [(15, 22, "launch"), (22, 26, "cache"), (26, 31, "dram")]


# --- recorded CPU runs (tests/data): two plateaus, a regime only one run reaches ---

DATA = Path(__file__).resolve().parent / "data"


def _data_sweep(dtype: str, run_id: str) -> SweepResult:
    return _data_file(f"sweep_cpu_{dtype}_epyc-2c-l3-32mib.json", run_id)


def _data_file(name: str, run_id: str) -> SweepResult:
    from nsightlab.runs.sweeps import analyze_record_file

    s = analyze_record_file(DATA / name)
    s.run_id = run_id
    return s


def test_roofline_plateaus_have_their_own_colours_and_the_remark_is_off_the_lines(tmp_path: Path) -> None:
    f16, f32 = _data_sweep("float16", "aaa111"), _data_sweep("float32", "bbb222")
    prof = analyze_path(DATA / "lesson1_cpu_float32_epyc-2c-l3-32mib.json")
    assert isinstance(prof, ProfileResult)
    plateaus = [(s.summary.device_name or "", f"run {s.run_id}", (s.summary.dram_tbps or 0) * 1e12) for s in (f16, f32)]
    plot = figures.roofline_figure([prof], plateaus)
    assert plot is not None
    fig, ax = plot.figure, plot.figure.axes[0]
    lines = _by_gid(ax, "measured-roof")
    assert len(lines) == 2
    colours = [line.get_color() for line in lines]
    assert colours[0] != colours[1]
    points = {tuple(p.get_facecolor()[0][:3]) for p in _by_gid(ax, "point-")}
    from matplotlib.colors import to_rgb

    assert not {to_rgb(c) for c in colours} & points  # nor a point's colour
    (remark,) = [t for t in ax.texts if "no spec roofs" in t.get_text()]
    fig.canvas.draw()
    box, plot_area = remark.get_window_extent(), ax.get_window_extent()
    assert box.y0 >= plot_area.y1  # above the plot area: no roof or point can run through it
    title = ax.title if ax.title.get_text() else ax._left_title
    assert box.y1 <= title.get_window_extent().y0  # and under the title, not over it
    png, _ = figures.save(plot, tmp_path)
    _image_ok(png)


def test_roofline_remarks_each_on_a_line_within_the_figure(rec: Recorded, tmp_path: Path) -> None:
    """Both remarks at once (a CPU with no spec roofs, a GPU with no compute roof): one line
    each, no line break shown as \\n, nothing wider than the figure, and both files saved
    without the layout collapsing the axes (they were: one line ran past the figure's edge)."""
    plot = figures.roofline_figure([_result(rec, rec.cpu_profile), _result(rec, rec.ref_profile)])
    assert plot is not None
    fig, ax = plot.figure, plot.figure.axes[0]
    (remark,) = [t for t in ax.texts if "no spec roofs" in t.get_text()]
    text = remark.get_text()
    assert "\\n" not in text and "no compute roof" in text.splitlines()[-1], text
    fig.canvas.draw()
    assert remark.get_window_extent().x1 <= fig.bbox.x1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png, _svg = figures.save(plot, tmp_path)
    _image_ok(png)


def test_every_step_kernel_kind_has_its_own_colour() -> None:
    """The timeline draws each kind a step's kernel can have in a colour of its own (none falls back
    to the grey of "other")."""
    from typing import get_args

    from nsightlab.parse.kinds import StepKernelKind
    from nsightlab.present.figures import KIND_COLORS

    assert set(KIND_COLORS) == set(get_args(StepKernelKind))
    assert len(set(KIND_COLORS.values())) == len(KIND_COLORS)
