"""Models from outside repscope (``repscope.models.external``): every source kind gives the same codes,
a file's input contract is read back, exports of a trained repscope encoder score as the run does, a
pickle is refused without running it, and each way a model can misfit its role is one error line naming
the option. The models are defined here (never registered)."""

from __future__ import annotations

import json
import pickle
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.external import (
    CodeGenerator,
    ImageClassifier,
    ImageDecoder,
    ImageEncoder,
    InputContract,
    check_model,
    detect_role,
    export_onnx,
    export_torchscript,
    load_model,
    parse_model_args,
    role_model,
)

# the user's model file: written into tmp_path for the factory sources, executed here for the instance
MODEL_SOURCE = textwrap.dedent(
    '''
    import torch
    from torch import nn


    class SmallEncoder(nn.Module):
        """(B, 1, 8, 8) images -> (posterior mean, log-variance), each (B, latent_dim)."""

        def __init__(self, latent_dim=3, width=6):
            super().__init__()
            self.conv = nn.Conv2d(1, width, 3, stride=2, padding=1)
            self.mean = nn.Linear(width * 16, latent_dim)
            self.log_var = nn.Linear(width * 16, latent_dim)

        def forward(self, x):
            h = torch.tanh(self.conv(x)).flatten(1)
            return self.mean(h), self.log_var(h)


    def make_encoder(latent_dim=3, width=6, seed=0):
        torch.manual_seed(seed)
        return SmallEncoder(latent_dim, width)


    def broken_factory(**kwargs):
        raise ValueError("no such checkpoint size")


    def not_a_module():
        return 42
    '''
)
SHAPE = (1, 8, 8)


def user_namespace() -> dict:
    namespace: dict = {}
    exec(compile(MODEL_SOURCE, "user_model.py", "exec"), namespace)  # noqa: S102 -- the test's own model source
    return namespace


class Scaled(nn.Module):
    """A model that reads other pixel values: ``0-255`` (divides by 255) or standardised (mean 0.5, std 0.25)."""

    def __init__(self, inner: nn.Module, input_range: str) -> None:
        super().__init__()
        self.inner, self.input_range = inner, input_range

    def forward(self, x: torch.Tensor):
        x = x / 255.0 if self.input_range == "0-255" else x * 0.25 + 0.5
        return self.inner(x)


class FirstOutput(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)[0]


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(5).integers(0, 256, size=(20, 8, 8), dtype=np.uint8)


@pytest.fixture(scope="module")
def encoder_files(tmp_path_factory):
    """The same encoder as a module, a model file, a state_dict and exports (TorchScript, ONNX); torch.export,
    whose first use costs seconds, is tested apart (slow)."""
    folder = tmp_path_factory.mktemp("external")
    (folder / "user_model_pkg.py").write_text(MODEL_SOURCE)
    namespace = user_namespace()
    # other weights than make_encoder's default seed, so that the factory sources show --weights was applied
    module = namespace["make_encoder"](seed=7).eval()
    # a Lightning-like checkpoint: the state under state_dict with a "model." prefix
    torch.save({"state_dict": {f"model.{k}": v for k, v in module.state_dict().items()}}, folder / "weights.ckpt")
    example = torch.rand(2, *SHAPE)
    export_torchscript(Scaled(module, "0-255"), folder / "encoder.pt", InputContract(SHAPE, "0-255"), example * 255)
    export_onnx(FirstOutput(module), folder / "encoder.onnx", InputContract(SHAPE), example)
    return folder, module


@pytest.mark.slow  # torch.export's first use (dynamo) takes about 3 s
def test_a_torch_export_archive_gives_the_same_codes_with_its_recorded_contract(encoder_files, images, tmp_path):
    from repscope.models.external.contract import contract_metadata  # the recording export_* helpers write

    _, module = encoder_files
    standardised = InputContract(SHAPE, "standardised", mean=(0.5,), std=(0.25,))
    extra = {"repscope.json": json.dumps(contract_metadata(standardised))}
    example = (torch.rand(4, *SHAPE) - 0.5) / 0.25
    wrapped = Scaled(module, "standardised")
    free = torch.export.export(wrapped, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(free, tmp_path / "free.pt2", extra_files=extra)
    # an archive exported without a dynamic batch accepts 4 images only: it is run in chunks of 4
    torch.export.save(torch.export.export(wrapped, (example,)), tmp_path / "fixed.pt2")
    expected = reference_codes(module, images)
    free_loaded = load_model(tmp_path / "free.pt2")
    assert free_loaded.kind == "export" and free_loaded.contract == standardised
    fixed_loaded = load_model(tmp_path / "fixed.pt2", contract=standardised)
    assert fixed_loaded.module.fixed_batch == 4
    for loaded in (free_loaded, fixed_loaded):
        np.testing.assert_allclose(ImageEncoder(loaded, batch_size=7).encode(images), expected, atol=1e-5)


def reference_codes(module: nn.Module, images: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return module(torch.from_numpy(images).float().div(255).unsqueeze(1))[0].numpy()


def test_every_source_kind_gives_the_same_codes(encoder_files, images, monkeypatch):
    folder, module = encoder_files
    monkeypatch.syspath_prepend(str(folder))
    expected = reference_codes(module, images)
    weights = folder / "weights.ckpt"
    sources = {
        "module": load_model(module),
        "factory": load_model("user_model_pkg:make_encoder", weights=weights),
        "file factory": load_model(f"{folder}/user_model_pkg.py:make_encoder", model_args={"seed": 1}, weights=weights),
        "torchscript": load_model(folder / "encoder.pt"),
        "onnx": load_model(str(folder / "encoder.onnx")),
    }
    assert {name: loaded.kind for name, loaded in sources.items()} == {
        "module": "module",
        "factory": "factory",
        "file factory": "factory",
        "torchscript": "torchscript",
        "onnx": "onnx",
    }
    for name, loaded in sources.items():
        # batches of 7 split the 20 images unevenly: the last batch is short
        codes = ImageEncoder(loaded, batch_size=7).encode(images)
        assert codes.shape == (20, 3) and codes.dtype == np.float32, name
        np.testing.assert_allclose(codes, expected, atol=1e-5, err_msg=name)


def test_a_files_contract_is_read_back_and_explicit_values_override_it(encoder_files):
    folder, _ = encoder_files
    assert load_model(folder / "encoder.pt").contract == InputContract(SHAPE, "0-255")
    onnx = load_model(folder / "encoder.onnx")
    assert onnx.contract.image_shape == SHAPE and onnx.metadata["onnx_input_shape"] == (None, *SHAPE)
    # a mapping states exactly its keys: 0-1 over the file's 0-255
    assert load_model(folder / "encoder.pt", contract={"input_range": "0-1"}).contract.input_range == "0-1"
    with pytest.raises(InvalidArgumentError, match=r"--input-size: .* \(C, H, W\) = \(1, 8, 8\), got \(\?, 9, 9\)"):
        load_model(folder / "encoder.onnx", contract=InputContract.from_options(size=(9, 9)))
    sized = load_model(nn.Identity(), contract=InputContract.from_options(size=(28, 28)))
    assert sized.contract.image_shape == (1, 28, 28)


def test_prepare_maps_unit_images_to_the_models_range_by_hand():
    images = torch.tensor([0.0, 0.5, 1.0]).reshape(1, 3, 1, 1)  # one pixel, three channels
    assert InputContract(input_range="0-255").prepare(images).flatten().tolist() == [0.0, 127.5, 255.0]
    standardised = InputContract(input_range="standardised", mean=(0.5, 0.25, 0.0), std=(0.5, 0.25, 2.0))
    assert standardised.prepare(images).flatten().tolist() == [-1.0, 1.0, 0.5]
    with pytest.raises(InvalidArgumentError, match="--mean/--std: both are required"):
        InputContract(input_range="standardised", mean=(0.5,))
    with pytest.raises(InvalidArgumentError, match="--mean: expected 1 or 3 values"):
        InputContract((3, 4, 4), "standardised", mean=(0.5, 0.5), std=(1.0,))


def test_a_pickle_is_refused_without_running_its_payload(tmp_path):
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # unpickling this creates the marker file

    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(pickle.dumps(Payload()))
    zipped = tmp_path / "model.pt"
    torch.save(Payload(), zipped)
    assert zipfile.is_zipfile(zipped)
    # each format named for what it is (the messages name the file, whose folder may hold any word)
    expected = {legacy: "is not a TorchScript or torch.export archive (a legacy torch.save pickle",
                zipped: "is a torch.save pickle (a whole model or a state_dict)"}  # fmt: skip
    for path, text in expected.items():
        with pytest.raises(InvalidArgumentError, match=r"^--model: ") as refused:
            load_model(path)
        assert f"{path} {text}" in str(refused.value)
        assert "pickles can run code when loaded and are refused" in str(refused.value)
    assert not marker.exists()


def test_weights_that_hold_a_pickled_object_are_refused_without_running_it(tmp_path):
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # unpickling this creates the marker file

    weights = tmp_path / "weights.pt"
    torch.save({"weight": Payload()}, weights)
    with pytest.raises(InvalidArgumentError, match=r"^--weights"):
        load_model(nn.Linear(2, 2), weights=weights)
    assert not marker.exists()


class Fixed(nn.Module):
    """Returns ``values`` (one row repeated per image), whatever it is given."""

    def __init__(self, values) -> None:
        super().__init__()
        self.values = torch.as_tensor(values, dtype=torch.float32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.values.expand(len(x), *self.values.shape)


def test_each_misfit_is_one_error_line_naming_the_option(tmp_path, monkeypatch):
    seven = load_model(Fixed(torch.arange(7.0)), contract=InputContract((1, 28, 28)))
    with pytest.raises(InvalidArgumentError, match="^--model: expected 10 logits, got 7$"):
        check_model(seven, "classifier", num_classes=10)
    nan = load_model(Fixed([0.0, float("nan")]), contract=InputContract((1, 28, 28)))
    with pytest.raises(InvalidArgumentError, match="^--model: .* returned 4 NaN or infinite values of 8$"):
        check_model(nan, "encoder")
    linear = load_model(nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 4)), contract=InputContract((1, 32, 32)))
    with pytest.raises(
        InvalidArgumentError, match=r"^--input-size/--channels: .* shape \(4, 1, 32, 32\) \(RuntimeError"
    ):
        check_model(linear, "classifier")
    (tmp_path / "user_model_err.py").write_text(MODEL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    failures = {
        "user_model_err:broken_factory": "user_model_err:broken_factory raised ValueError: no such checkpoint size",
        "user_model_err:not_a_module": "returned int, not a torch.nn.Module",
        "no_such_package_xyz.models:make": "cannot import 'no_such_package_xyz.models' (ModuleNotFoundError",
        str(tmp_path / "missing.onnx"): "no such file or folder",
        "user_model_err:absent": "has no attribute 'absent'",
    }
    for source, message in failures.items():
        with pytest.raises(InvalidArgumentError) as caught:
            load_model(source, option="--decoder" if "absent" in source else "--model")
        text = str(caught.value)
        assert "\n" not in text and message in text, text
        assert text.startswith("--decoder: " if "absent" in source else "--model: "), text


def test_weights_that_do_not_fit_name_weights_and_the_first_key(tmp_path, monkeypatch):
    (tmp_path / "user_model_w.py").write_text(MODEL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    other = user_namespace()["make_encoder"](width=6)
    state = other.state_dict()
    state.pop("log_var.bias")
    torch.save(state, tmp_path / "partial.pt")
    with pytest.raises(
        InvalidArgumentError, match=r"^--weights: .* missing key 'log_var.bias' \(1 missing, 0 unexpected\)$"
    ):
        load_model("user_model_w:make_encoder", weights=tmp_path / "partial.pt")
    torch.save(other.state_dict(), tmp_path / "wide.pt")
    with pytest.raises(InvalidArgumentError, match=r"^--weights: .*size mismatch for conv.weight"):
        load_model("user_model_w:make_encoder", model_args={"width": 4}, weights=tmp_path / "wide.pt")


def test_model_args_are_read_with_their_types():
    assert parse_model_args(["depth=3", "rate=0.5", "bn=true", "sizes=[1, 2]", "name=wide"]) == {
        "depth": 3,
        "rate": 0.5,
        "bn": True,
        "sizes": [1, 2],
        "name": "wide",
    }
    with pytest.raises(InvalidArgumentError, match="--model-arg"):
        parse_model_args(["depth"])


def test_classifier_probabilities_and_decoder_logits_are_recognised():
    logits = torch.tensor([2.0, 0.0, -1.0])
    grey = np.zeros((3, 4, 4), np.float32)
    expected = torch.softmax(logits, 0).numpy()
    for outputs in (logits, torch.softmax(logits, 0)):
        classifier = ImageClassifier(load_model(Fixed(outputs), contract=InputContract((1, 4, 4))))
        np.testing.assert_allclose(classifier.soft_labels(grey), np.tile(expected, (3, 1)), atol=1e-6)
        assert classifier.predict(grey).tolist() == [0, 0, 0] and classifier.num_classes == 3
        assert classifier.probabilities == (outputs.min() >= 0).item()
        np.testing.assert_allclose(
            torch.softmax(classifier.network(torch.zeros(2, 1, 4, 4)), 1)[0], expected, atol=1e-6
        )
    # logits 0 and log(3) -> sigmoid 0.5 and 0.75 -> 128 and 191 (round(255 p))
    decoder = ImageDecoder(load_model(Fixed([[0.0, np.log(3.0)]])))
    assert decoder.decode(np.zeros((2, 5))).tolist() == [[[128, 191]]] * 2 and decoder.logits


def test_a_generator_samples_the_same_bytes_for_the_same_seed():
    net = nn.Sequential(nn.Linear(4, 36), nn.Unflatten(1, (1, 6, 6)))
    generator = role_model(load_model(net, contract=InputContract((1, 6, 6))), "generator", latent_dim=4)
    assert isinstance(generator, CodeGenerator)
    first, again, other = generator.sample(5, seed=3), generator.sample(5, seed=3), generator.sample(5, seed=4)
    assert first.shape == (5, 6, 6) and first.dtype == np.uint8
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    report = check_model(net, "generator", latent_dim=4, images=np.zeros((2, 6, 6), np.uint8))
    assert report.output_shape == (4, 1, 6, 6) and report.outputs_are_logits is True
    with pytest.raises(InvalidArgumentError, match=r"expected images \(B, 1, 7, 7\)"):
        check_model(net, "generator", latent_dim=4, images=np.zeros((2, 7, 7), np.uint8))


def test_colour_images_reach_the_model_channels_first_as_stored():
    class Pixels(nn.Module):
        """Codes: channel 0 at (row 0, column 1) and channel 2 at (row 1, column 0), as the model sees them."""

        def forward(self, x):
            return torch.stack([x[:, 0, 0, 1], x[:, 2, 1, 0]], dim=1)

    image = np.zeros((1, 3, 4, 3), np.uint8)  # (N, H, W, C): 3 rows, 4 columns
    image[0, 0, 1, 0] = 51  # row 0, column 1, red: 0.2
    image[0, 1, 0, 2] = 204  # row 1, column 0, blue: 0.8
    encoder = ImageEncoder(load_model(Pixels(), contract=InputContract((3, 3, 4))))
    np.testing.assert_allclose(encoder.encode(image), [[0.2, 0.8]], atol=1e-6)


def test_colour_images_in_any_layout_give_the_same_codes():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 5 * 5, 2))
    encoder = ImageEncoder(load_model(net, contract=InputContract((3, 5, 5))))
    last = np.random.default_rng(1).integers(0, 256, (4, 5, 5, 3), dtype=np.uint8)
    codes = encoder.encode(last)
    np.testing.assert_allclose(encoder.encode(last.transpose(0, 3, 1, 2)), codes, atol=1e-6)
    np.testing.assert_allclose(encoder.encode(last / 255.0), codes, atol=1e-5)


def test_progress_is_reported_per_batch_and_options_that_do_not_apply_are_refused(encoder_files, images, tmp_path):
    folder, module = encoder_files
    seen = []
    ImageEncoder(module, batch_size=8, progress=lambda done, total: seen.append((done, total))).encode(images)
    assert seen == [(8, 20), (16, 20), (20, 20)]
    with pytest.raises(InvalidArgumentError, match="^--weights: only a factory's or a module's network takes weights"):
        load_model(folder / "encoder.pt", weights=folder / "weights.ckpt")
    with pytest.raises(InvalidArgumentError, match="^--model-arg: only a factory takes arguments"):
        load_model(folder / "encoder.onnx", model_args={"width": 3})
    with pytest.raises(InvalidArgumentError, match="^--model: .* not a repscope run directory"):
        load_model(tmp_path)


def test_onnx_without_onnxruntime_says_how_to_install_it(encoder_files, monkeypatch):
    folder, _ = encoder_files
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(InvalidArgumentError, match=r"pip install 'repscope\[onnx\]'"):
        load_model(folder / "encoder.onnx")


@pytest.mark.slow  # a training and the train layer's imports: 3-8 s on 2 shared cores
def test_exports_of_a_trained_beta_vae_score_as_its_run(tmp_path):
    """A TorchScript and an ONNX export of a repscope beta-VAE's encoder give the run's MIG, SAP and IRS."""
    from repscope.metrics.disentanglement.information import mig, sap
    from repscope.metrics.disentanglement.irs import irs
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    config = TrainConfig(
        model=Named(name="beta-vae", params={"latent_dim": 4}),
        data=Named(name="dsprites", params={"train_size": 64, "test_size": 96}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run", report=False)
    test = outcome.data.batch("test", np.arange(96), ["image", "factors"])
    factors = test["factors"][:, test["factors"].max(0) > test["factors"].min(0)]
    contract = InputContract((1, 64, 64))
    example = torch.rand(2, 1, 64, 64)
    export_torchscript(outcome.task.encoder, tmp_path / "vae.pt", contract, example)
    export_onnx(FirstOutput(outcome.task.encoder), tmp_path / "vae.onnx", contract, example)
    run = load_model(tmp_path / "run")
    assert run.kind == "run" and run.contract.image_shape == (1, 64, 64) and detect_role(run) == "encoder"
    assert role_model(run, "encoder") is run.task and detect_role(tmp_path / "vae.pt") is None
    report = check_model(run, "encoder", images=test["image"])
    assert report.code_dim == 4 and report.input_shape == (4, 1, 64, 64)
    with pytest.raises(
        InvalidArgumentError, match=r"^--role classifier: .* beta-vae \(vae family\), which has no soft_labels"
    ):
        check_model(run, "classifier")

    def scores(codes):
        return (mig(factors, codes)["mig"], sap(factors, codes)["sap"], irs(factors, codes)["irs"])

    expected = scores(run.task.encode(test["image"]))
    for path in (tmp_path / "vae.pt", tmp_path / "vae.onnx"):
        loaded = load_model(path)
        assert loaded.contract == contract
        np.testing.assert_allclose(scores(ImageEncoder(loaded).encode(test["image"])), expected, atol=1e-5)
