"""What a researcher sees of the Raw Zero-Shot study: progress of its trainings and projections, a
representation table that fits the page, class names on the Amalgam histograms, visible warnings."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from repscope.data.zeroshot.softlabels import SoftLabels
from repscope.report.zeroshot_figures import amalgam_histogram_grid, projection_grid
from repscope.studies.zeroshot.report import INTRO, accuracy_warnings, attack_display, representation_display

NAMES = ("cat", "dog", "ship", "truck")


def _soft_labels(seed: int, per_class=(6, 7, 5, 8)) -> SoftLabels:
    rng = np.random.default_rng(seed)
    n = len(per_class)
    loo = [rng.dirichlet(np.ones(n - 1), size=m) for m in per_class]
    full = [rng.dirichlet(np.ones(n), size=m) for m in per_class]
    return SoftLabels(loo=loo, full=full, class_names=NAMES)


def test_representation_table_is_readable_and_narrow():
    representation = pd.DataFrame(
        {
            "architecture": ["CapsNet", "LeNet"],
            "soft_label_kind": ["capsule_lengths", "probabilities"],
            "accuracy": [0.8275, 0.9012],
            "loo_accuracy": [0.84146, 0.91],
            "dbi": [0.40055, 0.51612],
            "dbi_std": [0.063237, 0.0284],
            "davies_bouldin": [1.45946, 2.0],
            "am": [111.6857, 44.1],
            "am_std": [35.389, 3.2],
            "am_per_image": [0.111686, 0.0441],
            "am_per_image_std": [0.035389, 0.0032],
        }
    )
    shown = representation_display(representation)
    assert list(shown.columns) == [
        "Architecture",
        "Accuracy",
        "Accuracy without a class",
        "DBI (Eq. 3)",
        "Davies-Bouldin",
        "AM (Eq. 4)",
        "AM per image",
    ]
    assert shown["Architecture"].tolist() == ["CapsNet (raw lengths)", "LeNet"]
    # 3 significant digits for the mean, 2 for the spread
    assert shown.loc[0, "DBI (Eq. 3)"] == "0.401 ± 0.063"
    assert shown.loc[0, "AM (Eq. 4)"] == "112 ± 35"
    assert shown.loc[1, "AM per image"] == "0.0441 ± 0.0032"
    assert shown.loc[1, "Accuracy"] == "0.901" and shown.loc[0, "Accuracy without a class"] == "0.841"


def test_attack_table_headers_are_readable_and_values_unchanged():
    attacks = pd.DataFrame(
        {
            "architecture": ["A"],
            "l0_th1": [3],
            "l0_th10": [7],
            "l0_total": [10],
            "linf_th1": [1],
            "linf_total": [1],
            "total": [11],
        }
    )
    shown = attack_display(attacks)
    assert list(shown.columns) == ["Architecture", "L0 th. 1", "L0 th. 10", "L0 total", "L∞ th. 1", "L∞ total", "Total"]
    assert shown.iloc[0].tolist() == ["A", 3, 7, 10, 1, 1, 11]


def test_a_model_under_twice_chance_is_warned_about():
    representation = pd.DataFrame({"architecture": ["A", "B", "C"], "accuracy": [0.19, 0.2, 0.85]})
    warnings = accuracy_warnings(representation, num_classes=10)
    assert len(warnings) == 1 and warnings[0].startswith("A: the full model's test accuracy 0.19 is under twice")
    # with 4 classes chance is 0.25: 0.2 and 0.19 are both under 0.5
    assert [w.split(":")[0] for w in accuracy_warnings(representation, num_classes=4)] == ["A", "B"]
    assert accuracy_warnings(representation, num_classes=0) == []


def test_the_intro_has_no_markup():
    assert "``" not in INTRO and ":mod:" not in INTRO and "n + 1 classifiers" in INTRO


def test_amalgam_histograms_name_the_known_and_the_left_out_classes():
    figure = amalgam_histogram_grid({"Net A": _soft_labels(0), "Net B": _soft_labels(1)})
    axes = np.array(figure.axes).reshape(2, 4)
    assert [ax.get_title() for ax in axes[0]] == ["without cat", "without dog", "without ship", "without truck"]
    # the bottom row names the bars: the known classes of the model without the column's class
    figure.canvas.draw()
    for i, ax in enumerate(axes[1]):
        assert [t.get_text() for t in ax.get_xticklabels()] == [n for k, n in enumerate(NAMES) if k != i]
    assert all(ax.get_xticklabels() == [] or not any(t.get_text() for t in ax.get_xticklabels()) for ax in axes[0])
    assert axes[0, 0].get_ylabel() == "Net A" and axes[1, 0].get_ylabel() == "Net B"


def test_projections_report_their_panels(monkeypatch, capsys):
    monkeypatch.setenv("REPSCOPE_PROGRESS", "lines")
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")
    projection_grid({"Net A": _soft_labels(0), "Net B": _soft_labels(1)}, "isomap", limit=8, seed=0)
    err = capsys.readouterr().err.strip().splitlines()
    counts = [int(m.group(1)) for line in err if (m := re.search(r"\(panels\): (\d+)/8 \(", line))]
    assert counts == list(range(1, 8))  # one line a panel; the 8th is the final line's
    assert err[-1].startswith("Isomap projections of the unknown classes' soft-labels (panels): 8/8 done in")


def test_each_training_names_its_model_and_the_class_left_out(monkeypatch, tmp_path):
    import repscope.train.fitting as train_run
    from repscope.studies.zeroshot.study import train_point

    seen = []

    class Stop(Exception):
        pass

    def recording_fit(config, **kwargs):
        seen.append((kwargs.get("description"), config.data.params["excluded"]))
        raise Stop

    monkeypatch.setattr(train_run, "fit", recording_fit)
    study = {
        "data": {"name": "digits", "params": {"source": "mnist-sample", "train_size": 100, "test_size": 50}},
        "architectures": [{"label": "LeNet", "name": "lenet5"}, {"label": "MLP", "name": "mlp"}],
    }
    for overrides in (["arch=MLP", "excluded=3"], ["arch=LeNet", "excluded=full"]):
        with pytest.raises(Stop):
            train_point(overrides, tmp_path / "point", False, config=study)
    assert seen == [("training MLP without class 3", 3), ("training LeNet on every class", None)]
