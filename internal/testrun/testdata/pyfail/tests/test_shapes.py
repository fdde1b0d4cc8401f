import sys

sys.path.insert(0, ".")
import shapes  # noqa: E402


def test_area():
    assert shapes.area(2, 3) == 6, "area of a 2x3 rectangle"


def test_positive():
    assert shapes.area(1, 1) > 0


def test_error():
    raise RuntimeError("boom")
