"""tests/parallel.py: which tests of a module go to one worker together."""

from __future__ import annotations

from pathlib import Path

import parallel

MODULE = """
import pytest

@pytest.fixture(scope="module")
def recorded():
    return 1

@pytest.fixture
def derived(recorded):
    return recorded + 1

@pytest.fixture
def own(tmp_path):
    return tmp_path

def test_reads_it(recorded): ...
def test_reads_it_through_another(derived): ...
def test_alone(own): ...
def helper(recorded): ...

class TestGroup:
    def test_in_a_class(self, recorded): ...
    def test_in_a_class_alone(self): ...
"""


def test_the_tests_that_share_a_wide_fixture_are_found(tmp_path: Path) -> None:
    path = tmp_path / "test_sample.py"
    path.write_text(MODULE)
    assert parallel.shared_tests(path) == {
        "test_reads_it",
        "test_reads_it_through_another",
        "TestGroup::test_in_a_class",
    }


def test_an_autouse_wide_fixture_shares_every_test(tmp_path: Path) -> None:
    path = tmp_path / "test_sample.py"
    path.write_text(MODULE.replace('scope="module"', 'scope="module", autouse=True'))
    assert parallel.shared_tests(path) is None


def test_a_module_that_cannot_be_read_shares_nothing(tmp_path: Path) -> None:
    path = tmp_path / "test_broken.py"
    path.write_text("def test_x(:\n")
    assert parallel.shared_tests(path) == frozenset()
    assert parallel.shared_tests(tmp_path / "missing.py") == frozenset()
