"""The disentanglement study writes the paper's Table 2 layout from real trainings on dSprites."""

from __future__ import annotations

import json

import pandas as pd

from repscope.studies.common import MemberModel
from repscope.studies.disentangle_study import DisentangleStudyConfig, quick, run_disentangle_study


def test_the_study_trains_scores_and_writes_table_2(tmp_path):
    config = DisentangleStudyConfig(
        data={"name": "dsprites", "params": {"size": 256, "test_size": 64}},
        models=[MemberModel(label="beta-VAE", name="beta-vae", params={"latent_dim": 4})],
        evaluation_n=40,
        classifier_epochs=1,
    )
    config.training.trainer.max_epochs = 1
    report = run_disentangle_study(config, out=tmp_path / "study")
    assert report.exists()
    table = pd.read_csv(tmp_path / "study" / "tables" / "table2.csv")
    assert list(table.columns) == [
        "model", "irs", "uc_rho1", "cg_rho1", "uc_rho2", "cg_rho2", "mig", "dci_disentanglement", "sap"
    ]  # fmt: skip
    # UC at rho = 1 with 5 factors on 4 latents: at least two factors share a latent, so UC < 1
    assert 0.0 <= table["uc_rho1"].iloc[0] < 1.0 and 0.0 <= table["cg_rho1"].iloc[0] <= 1.0
    metrics = json.loads((tmp_path / "study" / "metrics.json").read_text())
    assert set(metrics["classifier_accuracy"]) == {"shape", "scale", "orientation", "posX", "posY"}
    assert (tmp_path / "study" / "figures" / "traversal_beta-vae.png").exists()
    # --quick never grows the sizes
    shrunk = quick(DisentangleStudyConfig())
    assert shrunk.data.params["size"] == 2000 and shrunk.training.trainer.max_epochs == 1
