"""``repscope morpho``: measure, perturb and build Morpho-MNIST datasets."""

import typer

app = typer.Typer(no_args_is_help=True)
