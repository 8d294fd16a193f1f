"""Fixed-seed numbers of existing commands, to compare before and after a change of the code.

Usage: python tools/same_numbers.py OUT.json  (runs with whatever repscope is importable; ~2.5 min)

Records trained weights' hashes and test metrics of `repscope train` for every model family, the
CdSprites+ classifiers' weights, accuracies and predictions, Table 3 of `morpho supervised --quick`,
the metrics of shrunk `morpho diversity` and `morpho disentangle` runs, and the bytes of `morpho
measure`, `morpho build` and `sprites generate` (CdSprites+ levels 1 and 5, the dSprites grid). To
compare two versions, run it once with each on PYTHONPATH (`PYTHONPATH=old/src python
tools/same_numbers.py old.json`) and diff the files: only timings (`fit_seconds`) may differ.
"""

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from repscope.cli import main


def run(argv):
    try:
        main(argv)
    except SystemExit as e:
        if e.code not in (0, None):
            raise


def state_hash(path):
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    h = hashlib.sha256()
    for k in sorted(ckpt["state_dict"]):
        h.update(k.encode())
        h.update(ckpt["state_dict"][k].numpy().tobytes())
    return h.hexdigest()[:16]


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


out = {}
tmp = Path(tempfile.mkdtemp())
os.environ["REPSCOPE_HOME"] = str(tmp / "home")
for name, model, data in [
    (
        "lenet5",
        {"name": "lenet5", "params": {"lr": 0.002}},
        {
            "name": "digits",
            "params": {"source": "mnist-sample", "train_size": 300, "test_size": 100, "target": "label"},
        },
    ),
    (
        "lenet5-abnormal",
        {"name": "lenet5", "params": {"lr": 0.002}},
        {"name": "morpho-mnist", "params": {"set": "local", "target": "abnormal", "train_size": 200, "test_size": 60}},
    ),
    (
        "mlp-thickness",
        {"name": "mlp", "params": {}},
        {
            "name": "morpho-mnist",
            "params": {"set": "global", "target": "thickness", "train_size": 200, "test_size": 60},
        },
    ),
    (
        "beta-vae",
        {"name": "beta-vae", "params": {"latent_dim": 4, "beta": 2.0}},
        {"name": "digits", "params": {"source": "mnist-sample", "train_size": 200, "test_size": 60, "target": "none"}},
    ),
    (
        "gan",
        {"name": "gan", "params": {"latent_dim": 4}},
        {"name": "digits", "params": {"source": "mnist-sample", "train_size": 128, "test_size": 60, "target": "none"}},
    ),
    (
        "infogan",
        {"name": "infogan", "params": {}},
        {"name": "digits", "params": {"source": "mnist-sample", "train_size": 128, "test_size": 60, "target": "none"}},
    ),
]:
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(
        yaml.safe_dump({"model": model, "data": data, "trainer": {"max_epochs": 2}, "batch_size": 32, "seed": 3})
    )
    run(["train", str(cfg), "--out", str(tmp / name)])
    metrics = json.loads((tmp / name / "metrics.json").read_text())
    out[name] = {
        "state": state_hash(tmp / name / "checkpoints" / "final.ckpt"),
        **{k: v for k, v in metrics.items() if k.startswith("test_")},
        "final": metrics["final"],
    }
run(
    [
        "sprites",
        "train-classifiers",
        "--level",
        "2",
        "--train-size",
        "256",
        "--val-size",
        "128",
        "--epochs",
        "1",
        "--seed",
        "1",
    ]
)
folder = tmp / "home" / "classifiers" / "cdsprites-level2"
meta = json.loads((folder / "classifiers.json").read_text())
out["classifiers"] = {
    a: {"state": state_hash(folder / f"{a}.ckpt"), "val_accuracy": e["val_accuracy"]}
    for a, e in meta["attributes"].items()
}
run(
    [
        "morpho",
        "supervised",
        "--quick",
        "--out",
        str(tmp / "sup"),
        "--set",
        "data.train_size=300",
        "--set",
        "data.test_size=100",
        "--set",
        "training.trainer.max_epochs=1",
        "--set",
        "sklearn_max_train=200",
    ]
)
out["supervised"] = json.loads((tmp / "sup" / "metrics.json").read_text())["table3"]

run(["morpho", "measure", "mnist-sample", "-o", str(tmp / "m.csv"), "--workers", "2"])
table = pd.read_csv(tmp / "m.csv")
out["measure"] = {c: round(float(table[c].sum()), 9) for c in table.columns if table[c].dtype.kind == "f"}
build = tmp / "build"
run(
    ["morpho", "build", "--source", "mnist-sample", "--out", str(build), "--seed", "3"]
    + ["--train-size", "300", "--test-size", "100", "--workers", "2"]
)
out["build"] = {
    str(p.relative_to(build)): digest(p) for p in sorted(build.rglob("*")) if p.is_file() and p.name != "dataset.json"
}
for level in (1, 5):
    folder = tmp / f"l{level}"
    run(
        [
            "sprites",
            "generate",
            "--level",
            str(level),
            "--n",
            "480",
            "--split",
            "test",
            "--seed",
            "4",
            "--out",
            str(folder),
        ]
    )
    out[f"generate-l{level}"] = {p.name: digest(p) for p in sorted(folder.iterdir()) if p.name != "dataset.json"}
run(["sprites", "generate", "--dataset", "dsprites", "--out", str(tmp / "d.npz")])
with np.load(tmp / "d.npz", allow_pickle=False) as grid:
    out["dsprites"] = {
        k: hashlib.sha256(grid[k].tobytes()).hexdigest()[:16] for k in ("imgs", "latents_classes", "latents_values")
    }
run(
    ["sprites", "train-classifiers", "--level", "5", "--train-size", "512", "--val-size", "128", "--epochs", "1"]
    + ["--seed", "1"]
)
run(["sprites", "classify", str(tmp / "l5"), "--out", str(tmp / "cls")])
out["classify"] = digest(tmp / "cls" / "predictions.csv")
shrink = ["--set", "data.train_size=256", "--set", "data.test_size=100", "--set", "training.trainer.max_epochs=1"]
run(
    ["morpho", "diversity", "--quick", "--out", str(tmp / "div"), *shrink, "--set", "samples=300"]
    + ["--set", "permutations=50"]
)
out["diversity"] = json.loads((tmp / "div" / "metrics.json").read_text())
run(["morpho", "disentangle", "--quick", "--out", str(tmp / "dis"), *shrink, "--set", "generated_samples=200"])
out["disentangle"] = json.loads((tmp / "dis" / "metrics.json").read_text())

Path(sys.argv[1]).write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
print(json.dumps(out, indent=1, sort_keys=True)[:3000])
