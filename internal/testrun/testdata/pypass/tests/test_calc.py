import sys

import pytest

sys.path.insert(0, ".")
import calc  # noqa: E402


def test_add():
    assert calc.add(2, 2) == 4


@pytest.mark.parametrize("a,b,want", [(1, 1, 2), (2, 3, 5)])
def test_add_table(a, b, want):
    assert calc.add(a, b) == want


@pytest.mark.skip(reason="not today")
def test_later():
    assert False
