"""Fixed-seed numbers of existing commands, to compare before and after the framework redesign.

Usage: python same_numbers.py OUT.json  (runs with whatever repscope is importable)
"""

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

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


out = {}
tmp = Path(tempfile.mkdtemp())
os.environ["REPSCOPE_HOME"] = str(tmp / "home")
for name, model, data in [
    (
        "lenet5",
        {"name": "lenet5", "params": {"lr": 0.002}},
        {"name": "digits", "params": {"source": "mnist-sample", "max_train": 300, "max_test": 100, "target": "label"}},
    ),
    (
        "lenet5-abnormal",
        {"name": "lenet5", "params": {"lr": 0.002}},
        {"name": "morpho-mnist", "params": {"set": "local", "target": "abnormal", "max_train": 200, "max_test": 60}},
    ),
    (
        "mlp-thickness",
        {"name": "mlp", "params": {}},
        {"name": "morpho-mnist", "params": {"set": "global", "target": "thickness", "max_train": 200, "max_test": 60}},
    ),
    (
        "beta-vae",
        {"name": "beta-vae", "params": {"latent_dim": 4, "beta": 2.0}},
        {"name": "digits", "params": {"source": "mnist-sample", "max_train": 200, "max_test": 60, "target": "none"}},
    ),
    (
        "gan",
        {"name": "gan", "params": {"latent_dim": 4}},
        {"name": "digits", "params": {"source": "mnist-sample", "max_train": 128, "max_test": 60, "target": "none"}},
    ),
    (
        "infogan",
        {"name": "infogan", "params": {}},
        {"name": "digits", "params": {"source": "mnist-sample", "max_train": 128, "max_test": 60, "target": "none"}},
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
        "data.max_train=300",
        "--set",
        "data.max_test=100",
        "--set",
        "training.trainer.max_epochs=1",
        "--set",
        "sklearn_max_train=200",
    ]
)
out["supervised"] = json.loads((tmp / "sup" / "metrics.json").read_text())["table3"]
Path(sys.argv[1]).write_text(json.dumps(out, indent=1, sort_keys=True))
print(json.dumps(out, indent=1, sort_keys=True)[:3000])
