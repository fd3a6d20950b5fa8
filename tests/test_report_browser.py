"""report.html in a real headless browser (Debian's chromium): it renders and its images load.

The product page is never changed; for the load check a copy gets a small script that
writes, once the page has loaded, `complete && naturalWidth > 0` and the natural size of
every image into the document (and the copy's Content-Security-Policy lets that one
inline script run; images stay limited to data: URIs). Skipped where chromium is absent
(`.ci/run` installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from reportstore import Recorded, cli_json, copy_home, recorded

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

CHROMIUM = next(
    (
        p
        for p in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
        if p and os.path.exists(p)
    ),
    None,
)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth, h: i.naturalHeight,
    left: i.getBoundingClientRect().left, right: i.getBoundingClientRect().right, page: document.documentElement.clientWidth}));
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(imgs);
  document.body.appendChild(out);
  document.title = "probe-done";
});
</script>
"""  # noqa: E501


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
        f"--user-data-dir={tmp / 'profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.html of the lab session's runs and a CPU sweep: every kind of figure."""
    rec = recorded(tmp_path_factory)
    tmp = tmp_path_factory.mktemp("browser")
    with pytest.MonkeyPatch.context() as mp:
        mine: Recorded = copy_home(rec, tmp, mp)
        files = cli_json(
            "report",
            mine.ref_sweep,
            mine.cpu_f16,
            mine.ref_profile,
            mine.kern03,
            mine.ncu05,
            "--out",
            str(tmp / "report"),
        )
    assert [f["key"] for f in files["figures"]] == ["sweep", "roofline", f"kernels-{mine.kern03}"]
    return Path(files["html"])


def test_dom_has_every_figure(page: Path, tmp_path: Path) -> None:
    proc = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<h1>nsightlab report: 2 sweeps, 2 profiles, 1 ncu run</h1>" in dom
    srcs = re.findall(r'<img src="([^"]{0,40})', dom)
    assert len(srcs) == 3 and all(s.startswith("data:image/png;base64,") for s in srcs)
    for section in ("Bandwidth sweep", "Profiles", "Nsight Compute"):
        assert f">{section}</h2>" in dom
    # the CPU's float16 sweep is no bandwidth test: not drawn, and the caption says so
    caption = re.search(r'<figure id="fig-sweep">.*?<figcaption>(.*?)</figcaption>', dom, flags=re.S)
    assert caption and "Not drawn, as not bandwidth tests: float16 (run " in caption.group(1), dom[-3000:]


def test_images_load(page: Path, tmp_path: Path) -> None:
    text = page.read_text()
    probe = tmp_path / "probe.html"
    csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
    assert csp in text
    probe.write_text(text.replace(csp, csp + "; script-src 'unsafe-inline'").replace("</body>", PROBE + "</body>"))
    proc = _chromium(
        tmp_path, "--virtual-time-budget=5000", "--run-all-compositor-stages-before-draw", "--dump-dom", probe.as_uri()
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, flags=re.S)
    assert found, proc.stdout[-1500:]
    images = json.loads(found.group(1).replace("&quot;", '"'))
    pngs = re.findall(r'<img src="data:image/png;base64,([^"]+)"', text)
    assert len(images) == len(pngs) >= 3
    assert all(i["ok"] for i in images), images
    # each figure is on the page whole: none runs past its right edge
    assert all(i["left"] >= 0 and i["right"] <= i["page"] for i in images), images
    # each image is as large as the PNG written beside the page
    import base64
    import struct

    for i, b64 in zip(images, pngs, strict=True):
        w, h = struct.unpack(">II", base64.b64decode(b64)[16:24])  # the IHDR chunk
        assert (i["w"], i["h"]) == (w, h)


def test_screenshot_shows_the_figures(page: Path, tmp_path: Path) -> None:
    import numpy as np
    from matplotlib import image

    shot = tmp_path / "shot.png"
    proc = _chromium(
        tmp_path, "--virtual-time-budget=5000", "--window-size=1200,3000", f"--screenshot={shot}", page.as_uri()
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    img = image.imread(shot)
    assert img.shape[:2] == (3000, 1200)
    rgb = (img[..., :3] * 255).round().reshape(-1, 3)
    assert rgb.mean(axis=1).std() > 20  # text, tables and figures, not an empty page

    def pixels(colour: tuple[int, int, int], tol: int) -> int:
        return int(np.all(np.abs(rgb - np.array(colour)) <= tol, axis=1).sum())

    # the sweep figure is on screen: its one run's DRAM-bound shading (#c7e9c0 at 60% over
    # white) and its series' colour (#0072B2); no strip of regimes (the panel has one run:
    # its background is that run's), so no solid #c7e9c0
    assert pixels((221, 242, 217), 4) > 5000
    assert pixels((0, 114, 178), 12) > 200
    assert pixels((199, 233, 192), 2) < 200
