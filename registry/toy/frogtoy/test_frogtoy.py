import pytest

from frogtoy import add, is_equal, is_greater, is_less, multiply, subtract


@pytest.mark.parametrize("a, b, total", [(2, 3, 5), (-4, 1, -3), (10, 0, 10)])
def test_add(a, b, total):
    assert add(a, b) == total


@pytest.mark.parametrize("c, d, difference", [(7, 2, 5), (3, 9, -6), (5, 0, 5)])
def test_subtract(c, d, difference):
    assert subtract(c, d) == difference


@pytest.mark.parametrize("e, f, product", [(3, 4, 12), (-2, 5, -10), (7, 1, 7)])
def test_multiply(e, f, product):
    assert multiply(e, f) == product


@pytest.mark.parametrize("g, h, expected", [(1, 2, True), (5, 3, False), (4, 4, False)])
def test_is_less(g, h, expected):
    assert is_less(g, h) is expected


@pytest.mark.parametrize("m, n, expected", [(5, 3, True), (1, 2, False), (4, 4, False)])
def test_is_greater(m, n, expected):
    assert is_greater(m, n) is expected


@pytest.mark.parametrize("p, q, expected", [(4, 4, True), (4, 5, False), (0, 0, True)])
def test_is_equal(p, q, expected):
    assert is_equal(p, q) is expected
