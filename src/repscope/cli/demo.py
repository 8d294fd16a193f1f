"""``repscope demo``."""


def demo() -> None:
    """Build a small Morpho-MNIST set from the embedded digits, measure it, write a report."""
    raise NotImplementedError
