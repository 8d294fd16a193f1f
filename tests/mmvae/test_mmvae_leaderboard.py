"""``repscope mmvae leaderboard``: Table 4 of the CdSprites+ paper from hand-made evaluated run directories."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from repscope.errors import InvalidArgumentError, SourceNotFoundError
from repscope.studies.multimodal.leaderboard import (
    build_leaderboard,
    display_table,
    find_run_dirs,
    format_cell,
    leaderboard_table,
    read_evaluated_runs,
)

TABLE4 = (
    "text_to_image_strict",
    "text_to_image_features",
    "image_to_text_strict",
    "image_to_text_features",
    "image_to_text_letters",
    "joint_strict",
    "joint_features",
)


def make_run(folder, model, level, seed, strict=50.0, features=0.5, latent_dim=16, evaluated=True, **params):
    """A run directory as `repscope train` + `repscope mmvae evaluate` leave it (only what is read)."""
    folder.mkdir(parents=True)
    config = {
        "model": {"name": model, "params": {"latent_dim": latent_dim, **params}},
        "data": {"name": "cdsprites", "params": {"level": level, "train_size": 100, "seed": 0}},
        "trainer": {"max_epochs": 1},
        "batch_size": 64,
        "seed": seed,
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    if evaluated:
        metrics = {"model": model, "level": level, "n": 100, "seed": 0}
        metrics.update({key: strict if "features" not in key else features for key in TABLE4})
        metrics["log_likelihood_joint"] = -100.0 - seed
        metrics["linear_shape"] = 0.9 + 0.01 * seed
        (folder / "evaluation").mkdir()
        (folder / "evaluation" / "metrics.json").write_text(json.dumps(metrics))
    return folder


@pytest.fixture
def sweep(tmp_path):
    """Level 2 before level 1 on disk and the models out of the paper's order; MVAE level 1 has 3 seeds."""
    root = tmp_path / "sweep"
    make_run(root / "a-l2-mopoe", "mopoe", 2, 0, strict=10.0, features=0.8)
    make_run(root / "b-l1-dmvae", "dmvae", 1, 0, strict=4.0, features=0.0, latent_dim=10, private_dim=10)
    for seed, strict, features in ((0, 40.0, 0.5), (1, 50.0, 0.7), (2, 60.0, 0.9)):
        make_run(root / f"c-l1-mvae-{seed}", "mvae", 1, seed, strict=strict, features=features)
    make_run(root / "d-l1-mmvae", "mmvae", 1, 0, strict=47.0, features=0.5)
    (root / "logs").mkdir()  # not a run: ignored
    return root


def test_groups_are_ordered_by_level_then_the_papers_model_order_with_means_and_stds_by_hand(sweep):
    table, warnings = leaderboard_table(read_evaluated_runs([sweep]))
    assert warnings == []
    assert list(zip(table["level"], table["model"], table["dims"])) == [
        (1, "mmvae", 16),
        (1, "mvae", 16),
        (1, "dmvae", 30),  # 10 shared + 10 private per modality, as the paper counts DMVAE's dims
        (2, "mopoe", 16),
    ]
    mvae = table.iloc[1]
    assert mvae["n_seeds"] == 3 and mvae["seeds"] == "0 1 2"
    # strict 40, 50, 60: mean 50, sample std sqrt(((-10)^2 + 0 + 10^2) / 2) = 10
    assert mvae["text_to_image_strict_mean"] == pytest.approx(50.0)
    assert mvae["text_to_image_strict_std"] == pytest.approx(10.0)
    # features 0.5, 0.7, 0.9: mean 0.7, std 0.2
    assert mvae["joint_features_mean"] == pytest.approx(0.7) and mvae["joint_features_std"] == pytest.approx(0.2)
    assert mvae["log_likelihood_joint_mean"] == pytest.approx(-101.0)
    assert np.isnan(table.iloc[0]["text_to_image_strict_std"])  # one seed: no std
    shown = display_table(table)
    assert list(shown.columns) == [
        "Level",
        "Model",
        "Dims",
        "Seeds",
        "TxtImg Strict [%]",
        "TxtImg Features [ratio]",
        "ImgTxt Strict [%]",
        "ImgTxt Features [ratio]",
        "ImgTxt Letters [%]",
        "Joint Strict [%]",
        "Joint Features [ratio]",
    ]
    assert list(shown["Level"]) == ["1", "", "", "2"]  # as in the paper: the level on its first row
    assert list(shown["Model"]) == ["MMVAE", "MVAE", "DMVAE", "MoPoE"]
    assert shown.iloc[1]["TxtImg Strict [%]"] == "50.0 (10.0)"
    assert shown.iloc[1]["Joint Features [ratio]"] == "0.70 (0.20)/1"
    assert shown.iloc[0]["ImgTxt Letters [%]"] == "47.0 (n=1)"
    assert shown.iloc[3]["TxtImg Features [ratio]"] == "0.80 (n=1)/2"
    extra = display_table(table, extra=True)  # the dataset-independent numbers the runs have
    assert list(extra.columns[4:]) == ["log p(image, text) [nats]", "Linear probe: shape [accuracy]"]
    assert extra.iloc[1, 4:].tolist() == ["-101.0 (1.0)", "0.91 (0.01)"]


def test_the_three_files_are_written_and_the_csv_reads_back(sweep, tmp_path):
    out = tmp_path / "board"
    result = build_leaderboard([sweep], out)
    assert result["runs"] == 6 and [p.name for p in result["files"]] == [
        "leaderboard.md",
        "leaderboard.csv",
        "leaderboard.html",
        "paper_table4.csv",  # the paper has rows for these levels and models
    ]
    markdown = (out / "leaderboard.md").read_text()
    assert "| Level | Model | Dims | Seeds | TxtImg Strict [%] |" in markdown
    assert "| 1 | MMVAE | 16 | 1 | 47.0 (n=1) | 0.50 (n=1)/1 |" in markdown
    assert "|  | MVAE | 16 | 3 | 50.0 (10.0) | 0.70 (0.20)/1 |" in markdown
    csv = pd.read_csv(out / "leaderboard.csv")
    pd.testing.assert_frame_equal(csv, result["table"], check_dtype=False)
    assert csv.loc[csv["model"] == "mvae", "image_to_text_letters_std"].item() == pytest.approx(10.0)
    page = (out / "leaderboard.html").read_text()
    assert "50.0 (10.0)" in page and "0.91 (0.01)" in page and str(sweep / "c-l1-mvae-2") in page
    # the same runs named one by one give the same table
    runs = sorted(p for p in sweep.iterdir() if p.name != "logs")
    again, _ = leaderboard_table(read_evaluated_runs(runs))
    pd.testing.assert_frame_equal(again, result["table"])


def test_a_run_evaluated_before_metrics_json_is_read_from_its_coherency_json(tmp_path):
    run = make_run(tmp_path / "old", "mvae", 3, 0, evaluated=False)
    (run / "evaluation").mkdir()
    coherency = {
        "level": 3,
        "model": "mvae",
        "text_to_image": {"strict": 8.0, "features": 1.3},
        "image_to_text": {"strict": 59.0, "features": 2.5, "letters": 93.0},
        "joint": {"strict": 0.0, "features": 0.5},
    }
    (run / "evaluation" / "coherency.json").write_text(json.dumps(coherency))
    table, _ = leaderboard_table(read_evaluated_runs([run]))
    assert table.iloc[0]["image_to_text_letters_mean"] == 93.0
    assert "log_likelihood_joint_mean" not in table  # no run has it
    assert display_table(table).iloc[0]["TxtImg Features [ratio]"] == "1.30 (n=1)/3"


def test_mixed_up_inputs_are_refused_with_the_run_named(tmp_path):
    unevaluated = make_run(tmp_path / "fresh", "mmvae", 1, 0, evaluated=False)
    # a training stopped half-way (an interrupted sweep): finish it, evaluating it would not help
    with pytest.raises(SourceNotFoundError, match="training did not finish") as info:
        read_evaluated_runs([unevaluated])
    assert str(unevaluated) in str(info.value) and "--resume" in str(info.value)
    assert "mmvae evaluate" not in str(info.value)
    (unevaluated / "metrics.json").write_text("{}")  # trained, not evaluated
    with pytest.raises(SourceNotFoundError, match="repscope mmvae evaluate") as info:
        read_evaluated_runs([unevaluated])
    assert str(unevaluated) in str(info.value)
    first = make_run(tmp_path / "first", "mvae", 1, 3)
    second = make_run(tmp_path / "second", "mvae", 1, 3)
    with pytest.raises(InvalidArgumentError, match="seed 3") as info:
        leaderboard_table(read_evaluated_runs([first, second]))
    assert str(first) in str(info.value) and str(second) in str(info.value)
    assert len(read_evaluated_runs([first, first, tmp_path / "first"])) == 1  # one run named twice counts once
    mixed = make_run(tmp_path / "mixed", "mvae", 2, 0)
    metrics = json.loads((mixed / "evaluation" / "metrics.json").read_text())
    (mixed / "evaluation" / "metrics.json").write_text(json.dumps({**metrics, "level": 1}))
    with pytest.raises(InvalidArgumentError, match="level"):
        read_evaluated_runs([mixed])
    with pytest.raises(SourceNotFoundError, match="nowhere"):
        find_run_dirs([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgumentError, match="no run directory"):
        find_run_dirs([tmp_path / "empty"])
    other = make_run(tmp_path / "mnist", "mvae", 1, 0)
    (other / "config.yaml").write_text(yaml.safe_dump({"model": {"name": "lenet5"}, "data": {"name": "morpho-mnist"}}))
    with pytest.raises(InvalidArgumentError, match="not cdsprites"):
        read_evaluated_runs([other])


def test_runs_of_a_group_that_differ_beyond_the_seed_are_flagged(tmp_path):
    make_run(tmp_path / "s" / "a", "mopoe", 1, 0, beta=1.0)
    make_run(tmp_path / "s" / "b", "mopoe", 1, 1, beta=2.0)
    table, warnings = leaderboard_table(read_evaluated_runs([tmp_path / "s"]))
    assert len(table) == 1 and table.iloc[0]["n_seeds"] == 2
    assert len(warnings) == 1 and "model.params.beta" in warnings[0]


def test_format_cell():
    assert format_cell(47.04, 14.2, "percent", 1, 5) == "47.0 (14.2)"
    assert format_cell(1.75, 0.5, "features", 5, 5) == "1.75 (0.50)/5"
    assert format_cell(3.0, float("nan"), "percent", 2, 1) == "3.0 (n=1)"
    assert format_cell(float("nan"), float("nan"), "percent", 2, 1) == "-"
    assert format_cell(-8332.25, 12.34, "nats", 1, 3) == "-8332.2 (12.3)"
    assert format_cell(0.975, 0.0125, "fraction", 1, 3) == "0.97 (0.01)"


def test_leaderboard_command_follows_the_output_rule(sweep, tmp_path, capsys):
    from typer.testing import CliRunner

    from repscope.cli import app, main

    out = tmp_path / "board"
    result = CliRunner().invoke(app, ["mmvae", "leaderboard", str(sweep), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "| 1 | MMVAE | 16 | 1 | 47.0 (n=1)" in result.output and (out / "leaderboard.csv").is_file()
    (out / "leaderboard.md").write_text("mine")
    with pytest.raises(SystemExit) as info:
        main(["mmvae", "leaderboard", str(sweep), "-o", str(out)])
    assert info.value.code == 1 and "--overwrite" in capsys.readouterr().err
    assert (out / "leaderboard.md").read_text() == "mine"
    again = CliRunner().invoke(app, ["mmvae", "leaderboard", str(sweep), "-o", str(out), "--overwrite"])
    assert again.exit_code == 0 and (out / "leaderboard.md").read_text().startswith("# CdSprites+ leaderboard")
    with pytest.raises(SystemExit):
        main(["mmvae", "leaderboard", str(tmp_path / "nowhere"), "-o", str(tmp_path / "x")])
    assert "nowhere" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_each_cell_is_set_beside_the_papers_table_4_with_its_spread_by_hand(sweep, tmp_path):
    """The sweep's cells against Table 4 as printed, worked out by hand: within <=> |ours - paper| <= std + 0.5
    (percent) or + 0.05 (features)."""
    result = build_leaderboard([sweep], tmp_path / "board")
    comparison = result["comparison"]
    within = {(r["level"], r["model"], r["metric"]): r["within"] for r in comparison.to_dict("records")}
    expected_within = {
        # MMVAE L1, one seed, 47 / 0.5 everywhere: 47 vs 47 (14); 0.5 vs 0.5 (0.1)
        (1, "mmvae"): {"text_to_image_strict", "text_to_image_features"},
        # MVAE L1, means 50 / 0.7: 50 vs 52 (3); 0.7 vs 0.6 (0.1) (0.1 <= 0.15); 0.7 vs 0.5 (0.0) is out
        (1, "mvae"): {"text_to_image_strict", "image_to_text_features"},
        # DMVAE L1, 4 / 0.0: 4 vs 4 (5), 0.0 vs 0.0 (0.0), 4 vs 4 (6), 0.0 vs 0.0 (0.1); 4 vs 33 (4) is out
        (1, "dmvae"): {"image_to_text_strict", "image_to_text_features", "joint_strict", "joint_features"},
        # MoPoE L2, 10 / 0.8: 10 vs 10 (3), 0.8 vs 0.8 (0.0), 10 vs 8 (7), 0.8 vs 0.7 (0.1); letters 10 vs 40 out
        (2, "mopoe"): {
            "text_to_image_strict",
            "text_to_image_features",
            "image_to_text_strict",
            "image_to_text_features",
        },
    }
    assert len(within) == 4 * len(TABLE4)
    for (level, model, metric), inside in within.items():
        assert inside == (metric in expected_within[(level, model)]), (level, model, metric)
    rows = comparison.set_index(["level", "model", "metric"])
    assert rows.loc[(1, "mmvae", "joint_strict"), ["paper_mean", "paper_std"]].tolist() == [17, 10]
    assert rows.loc[(1, "dmvae", "joint_strict"), ["dims", "paper_dims"]].tolist() == [30, 30]
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "12 of 28 cells within the paper's spread." in markdown
    assert "| 1 | MVAE | 16 / 16 | TxtImg Strict [%] | ours | 50.0 (10.0) | 52 (3) | yes |" in markdown
    assert "| 1 | MVAE | 16 / 16 | TxtImg Features [ratio] | ours | 0.70 (0.20)/1 | 0.5 (0.0)/1 | no |" in markdown
    saved = pd.read_csv(tmp_path / "board" / "paper_table4.csv")
    assert saved["within"].sum() == 12 and len(saved) == 28


def test_within_spread_is_inclusive_at_the_papers_std_plus_half_its_rounding_unit():
    from repscope.studies.multimodal.paper_table4 import within_spread

    assert within_spread(51.5, 47, 4, "percent") and not within_spread(51.6, 47, 4, "percent")
    assert within_spread(42.5, 47, 4, "percent") and not within_spread(42.4, 47, 4, "percent")
    assert within_spread(0.65, 0.5, 0.1, "features") and not within_spread(0.66, 0.5, 0.1, "features")
    assert within_spread(0.04, 0.0, 0.0, "features") and not within_spread(0.06, 0.0, 0.0, "features")


def test_the_paper_table_is_the_printed_one():
    """Spot checks against the printed Table 4 (corners, DMVAE's dims, level 2's MVAE printed with 12 dims)."""
    from repscope.studies.multimodal.paper_table4 import PAPER_METRICS, PAPER_TABLE4

    assert len(PAPER_TABLE4) == 20 and {model for _, model in PAPER_TABLE4} == {"mmvae", "mvae", "mopoe", "dmvae"}
    assert all(len(cells) == len(PAPER_METRICS) for _, cells in PAPER_TABLE4.values())
    assert PAPER_TABLE4[(1, "mmvae")][1][0] == (47, 14) and PAPER_TABLE4[(5, "dmvae")][1][-1] == (0.7, 0.1)
    assert PAPER_TABLE4[(3, "mvae")] == (32, ((8, 2), (1.3, 0.0), (59, 4), (2.5, 0.1), (93, 1), (0, 0), (0.5, 0.1)))
    assert {dims for (_, model), (dims, _) in PAPER_TABLE4.items() if model == "dmvae"} == {30}
    assert PAPER_TABLE4[(2, "mvae")][0] == 12


def test_runs_scored_by_the_toolkits_rules_too_are_compared_with_the_paper_by_those(tmp_path):
    """The paper's numbers come from its toolkit's rules: where a run has them, the comparison reads them (ours
    at 0 would be far out), and the page shows them in their own table."""
    root = tmp_path / "sweep"
    for seed, toolkit_strict in ((0, 50.0), (1, 54.0)):
        run = make_run(root / f"mvae-{seed}", "mvae", 1, seed, strict=0.0, features=0.0)
        path = run / "evaluation" / "metrics.json"
        metrics = json.loads(path.read_text())
        metrics.update({f"{key}_toolkit": toolkit_strict if "features" not in key else 0.5 for key in TABLE4})
        metrics.update({"joint_traversal_strict": 12.0, "joint_traversal_features": 0.25})
        path.write_text(json.dumps(metrics))
    result = build_leaderboard([root], tmp_path / "board")
    rows = result["comparison"].set_index("metric")
    assert set(rows["rules"]) == {"toolkit"}
    # toolkit strict: mean 52 vs 52 (3); ours (0) would be out
    assert rows.loc["text_to_image_strict", "ours_mean"] == pytest.approx(52.0)
    assert rows.loc["text_to_image_strict", "within"]
    assert rows.loc["text_to_image_features", "within"]  # 0.5 vs 0.5 (0.0)
    assert not rows.loc["image_to_text_letters", "within"]  # 52 vs 86 (2)
    toolkit = display_table(result["table"], toolkit=True)
    assert toolkit.iloc[0]["TxtImg Strict [%]"] == "52.0 (2.8)"  # sample std of 50, 54: 2.83
    assert toolkit.iloc[0]["Joint by traversals Strict [%]"] == "12.0 (0.0)"
    page = (tmp_path / "board" / "leaderboard.html").read_text()
    assert "scored by the authors&#x27;" in page or "scored by the authors'" in page
