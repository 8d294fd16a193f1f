"""Disentanglement metrics: time of our vectorised formulas against a straightforward loop, same run.

Codes: K = 5 factors of 10 classes each, L = 10 latents (5 noisy copies of the factors, 5 of noise), N
rows. IRS is timed against the per-factor / per-value / per-latent loop of the same formula
(``_irs_reference``), MIG against the per-latent / per-factor loop over scikit-learn's
``mutual_info_score`` (``_mig_reference``); both pairs must agree to 1e-9. Our IRS scores the factors on
up to one thread per usable core when N x L >= 200,000 (numpy releases the GIL in its gathers and
partitions); the loop runs on one. DCI, SAP and explicitness fit
scikit-learn models (gradient-boosted trees, linear SVMs, logistic regressions) whose cost is the same
in any implementation: their times are printed alone, DCI only up to ``--dci-max`` rows.

    python benchmarks/disentanglement_metrics.py [--sizes 10000 100000] [--dci-max 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _codes(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    factors = rng.integers(0, 10, size=(n, 5))
    codes = np.concatenate([factors + 0.3 * rng.normal(size=(n, 5)), rng.normal(size=(n, 5))], axis=1)
    return factors, codes


def _timed(function, *args, repeats: int = 1, **kwargs):
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function(*args, **kwargs)
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    from repscope.metrics.disentanglement.dci import dci
    from repscope.metrics.disentanglement.information import _mig_reference, mig, modularity_explicitness, sap
    from repscope.metrics.disentanglement.irs import _irs_reference, irs, unique_capture

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dci-max", type=int, default=10_000, help="largest N DCI is timed at (trees are slow)")
    args = parser.parse_args()
    print("# K = 5 factors x 10 classes, L = 10 latents; seconds (best of 3 for the vectorised formulas)")
    print(f"{'# metric':<28}{'N':>8}{'ours':>10}{'loop':>10}{'ratio':>8}  same values")
    for n in args.sizes:
        factors, codes = _codes(n)
        for name, fast, slow, key in (
            ("irs (diff_quantile 0.99)", irs, _irs_reference, "irs"),
            ("mig (20 bins)", mig, _mig_reference, "mig"),
        ):
            ours, fast_result = _timed(fast, factors, codes, repeats=3)
            loop, slow_result = _timed(slow, factors, codes)
            same = abs(fast_result[key] - slow_result[key]) < 1e-9
            print(f"{name:<28}{n:>8}{ours:>10.3f}{loop:>10.3f}{loop / ours:>8.1f}  {same}")
        for name, function in (
            ("uc (rho 1, 2)", unique_capture),
            ("sap (LinearSVC)", sap),
            ("modularity/explicitness", modularity_explicitness),
        ):
            seconds, _ = _timed(function, factors, codes)
            print(f"{name:<28}{n:>8}{seconds:>10.3f}")
        if n <= args.dci_max:
            seconds, _ = _timed(dci, factors, codes, n_jobs=2)
            print(f"{'dci (GBT, 2 threads)':<28}{n:>8}{seconds:>10.3f}")


if __name__ == "__main__":
    main()
