"""The one formatting module: three significant figures, one unit per column."""

from __future__ import annotations

import math

import pytest

from nsightlab import units


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.4619, "1.46"),
        (0.053612, "0.0536"),
        (10.0, "10.0"),
        (9.996, "10.0"),
        (173.9, "174"),
        (12345.0, "12300"),
        (0.25, "0.250"),
        (0.0, "0.00"),
        (-2.345, "-2.35"),
        (999.6, "1000"),
    ],
)
def test_three_significant_figures(x: float, text: str) -> None:
    assert units.sig(x) == text


def test_nan_and_infinity_are_written_as_such() -> None:
    assert units.sig(math.nan) == "nan" and units.sig(math.inf) == "inf"


def test_a_column_takes_one_unit_from_its_largest_value() -> None:
    u = units.time_unit([5.9e-6, 2.4e-6, 1.1e-3])
    assert u.name == "ms"
    assert [u.value(v) for v in (5.9e-6, 1.1e-3)] == ["0.00590", "1.10"]
    assert units.time_unit([None, 3e-9]).name == "ns"
    assert units.time_unit([]).name == "ns"


def test_sizes_are_binary_and_weights_decimal() -> None:
    assert units.size(16 * 2**20) == "16.0 MiB"
    assert units.size(0.25 * 2**20) == "256 KiB"
    assert units.size(2**30) == "1.00 GiB"
    assert units.size_unit([2**20, 2**31]).name == "GiB"
    assert units.gigabytes(16e9) == "16.0 GB"


def test_rates_have_one_unit_each() -> None:
    assert units.tbps(53.6e9) == "0.0536 TB/s"
    assert units.tbps(1.46e12) == "1.46 TB/s"
    assert units.tflops(173.9e9) == "0.174 TFLOP/s"
    assert units.duration(5.9e-6) == "5.90 us"
    assert units.percent(92.4) == "92%" and units.percent(5.21) == "5.2%"
    # less than all never reads as all: 99.5 up to 100 keeps a decimal, rounded down
    assert units.percent(99.512) == "99.5%" and units.percent(99.96) == "99.9%" and units.percent(100.0) == "100%"
    assert units.ratio(2.1) == "2.10x"
