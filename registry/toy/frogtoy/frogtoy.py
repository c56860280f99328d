"""frogtoy: six one-line helpers, the repository of the FrogSWE-Toy-v0 tasks."""


def add(a, b):
    """The sum of a and b."""
    return a + b


def subtract(c, d):
    """c minus d."""
    return c - d


def multiply(e, f):
    """The product of e and f."""
    return e * f


def is_less(g, h):
    """Whether g is smaller than h."""
    return g < h


def is_greater(m, n):
    """Whether m is larger than n."""
    return m > n


def is_equal(p, q):
    """Whether p equals q."""
    return p == q
