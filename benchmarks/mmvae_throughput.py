"""Training throughput of the multimodal VAEs on CdSprites+ level 1 (CPU): samples/s per model, ours and MultiVae's.

Each model trains ``--steps`` optimisation steps on the same pre-drawn batches (images and captions of
level 1, batch ``--batch-size``, latent ``--latent-dim``) with the shipped config's networks, after two
warm-up steps; the plain loop measures the models themselves, not data loading (the CdSprites+
loader delivers ~12,000 level-5 samples/s with 2 workers; see the README). MMVAE runs with K = 1
(ELBO) and with the DReG objective at ``--k`` samples. Samples/s = batch size / the median time of one
step (forward, backward, Adam step), which other processes on shared cores disturb less than a total.

Side by side, the same models of the MultiVae library (1.0.3) at equal network sizes: its MVAE, MMVAE
(K = 1 with its ``iwae_looser`` loss, which is the ELBO at K = 1; and its ``dreg_looser`` loss, DReG at
``--k`` samples), MoPoE and DMVAE, given OUR encoders and decoders (the same ``fc-image`` and
``text-transformer`` networks, wrapped in MultiVae's ``BaseEncoder`` / ``BaseDecoder`` API), so that
only the library's training-step code differs. Both sides run the same harness: the same batches, the
same warm-up and timed steps, the same torch threads; the two sides alternate step by step (so that both
see the same load from other processes), ``--repeats`` passes over the batches. The parameter counts of
the two sides' networks are checked to be equal.

MultiVae is not a dependency: a plain install replaces our torch (through torchvision). Install it
beside our torch and point the benchmark at it (or set ``MULTIVAE_SITE``)::

    .venv/bin/python -m pip install --no-deps --target /work/multivae-site multivae==1.0.3 pythae

(its other pure-Python dependencies -- pydantic, cloudpickle, scikit-learn, pandas, torchmetrics, tqdm,
imageio, matplotlib -- are already in our venv). It imports torchvision and nltk at load time (for its
datasets, metrics and trainer, none used here); where they are missing, placeholder modules stand in.

    .venv/bin/python benchmarks/mmvae_throughput.py [--steps 30] [--batch-size 32] [--threads 2]
        [--multivae-site DIR] [--repeats 1]
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

WARMUP = 2
MODELS = (  # model, objective, K (None: --k), mixture estimator (MMVAE / MoPoE)
    ("mvae", "elbo", 1, "stratified"),
    ("mmvae", "elbo", 1, "stratified"),
    ("mmvae", "dreg", None, "stratified"),
    ("mopoe", "elbo", 1, "stratified"),
    ("mopoe", "elbo", 1, "sampled"),
    ("dmvae", "elbo", 1, "stratified"),
)
# imported by MultiVae at load time for its datasets, metrics and trainer; placeholders where missing
OPTIONAL_IMPORTS = ("torchvision", "nltk", "matplotlib", "PIL")
# what the table's rows do not say: where the two sides' training steps do different amounts of work
NOTES = (
    "mopoe: MultiVae decodes one z per example (each example gets one subset's product of experts), as ours with "
    "estimator sampled; ours by default three (the objective stratified over all subsets)",
    "caption: MultiVae scores the characters only (the tensor the encoder reads), ours also two end-of-caption marks",
)
INSTALL = ".venv/bin/python -m pip install --no-deps --target /work/multivae-site multivae==1.0.3 pythae"


def _batches(n_batches: int, batch_size: int) -> list[dict[str, torch.Tensor]]:
    from repscope.data.multimodal.datasets import cdsprites_dataset
    from repscope.train.datamodule import field_to_tensor

    data = cdsprites_dataset(level=1, train_size=n_batches * batch_size, val_size=1, test_size=1, seed=0)
    arrays = data.batch("train", np.arange(n_batches * batch_size), ["image", "text", "mask"])
    tensors = {name: field_to_tensor(values, data.fields[name].kind) for name, values in arrays.items()}
    return [{k: v[i * batch_size : (i + 1) * batch_size] for k, v in tensors.items()} for i in range(n_batches)]


def _field_specs() -> dict[str, dict[str, Any]]:
    from repscope.data.multimodal.datasets import cdsprites_dataset

    fields = cdsprites_dataset(level=1, train_size=1, val_size=1, test_size=1).fields
    return {name: {"shape": list(spec.shape), "classes": spec.classes} for name, spec in fields.items()}


def _parameters(*modules: torch.nn.Module) -> int:
    return sum(p.numel() for module in modules for p in module.parameters())


def _rates(sides: list[tuple[Callable[[Any], None], list, int]], batch_size: int, repeats: int) -> list[float]:
    """The harness of both sides: ``WARMUP`` steps each, then the timed steps alternating between the sides,
    ``repeats`` passes; samples/s of each side from its median step time."""
    for step, inputs, _ in sides:
        for batch in inputs[:WARMUP]:
            step(batch)
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(max(1, repeats)):
        for index in range(WARMUP, len(sides[0][1])):
            for (step, inputs, _), spent in zip(sides, times):
                started = time.perf_counter()
                step(inputs[index])
                spent.append(time.perf_counter() - started)
    return [batch_size / statistics.median(spent) for spent in times]


def _adam_step(loss_of: Callable[[Any], torch.Tensor], module: torch.nn.Module) -> Callable[[Any], None]:
    optimiser = torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=1e-3)

    def step(batch):
        loss = loss_of(batch)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    return step


def _ours(
    model: str, objective: str, k: int, batches, latent_dim: int, specs, estimator: str = "stratified"
) -> tuple[Callable, list, int]:
    from repscope.train.registry import task_class

    torch.manual_seed(0)
    cls = task_class(model)
    # the mixture estimator is a setting of MMVAE and MoPoE only
    settings = {"estimator": estimator} if "estimator" in cls.config_fields() else {}
    task = cls(latent_dim=latent_dim, objective=objective, k=k, field_specs=specs, **settings)
    step = _adam_step(lambda batch: task.losses(batch)["loss"], task)
    return step, batches, _parameters(task.net.encoders, task.net.decoders)


# -- MultiVae -------------------------------------------------------------------------------


class _Placeholder(types.ModuleType):
    """A stand-in package: any attribute is an inert class (callable, subclassable), any submodule another."""

    __path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        stub = type(name, (), {"__init__": lambda self, *a, **k: None, "__call__": lambda self, *a, **k: None})
        setattr(self, name, stub)
        return stub


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots: set[str]) -> None:
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Placeholder(spec.name)

    def exec_module(self, module) -> None:
        pass


def _load_multivae(site: str | None) -> tuple[types.SimpleNamespace | None, str]:
    """MultiVae's models and base classes (None and the reason when it is not importable), and the
    placeholders used. ``site`` goes on sys.path after our site-packages, so that our torch wins."""
    if site:
        if not os.path.isdir(site):
            return None, f"{site} is not a directory"
        if site not in sys.path:
            sys.path.append(site)
    missing = sorted(name for name in OPTIONAL_IMPORTS if importlib.util.find_spec(name) is None)
    finder = _PlaceholderFinder(set(missing))
    if missing:
        sys.meta_path.append(finder)
    threads = torch.get_num_threads()
    try:
        import multivae
        from multivae import models
        from multivae.models.nn.base_architectures import BaseMultilatentEncoder
        from pythae.data.datasets import DatasetOutput
        from pythae.models.base.base_utils import ModelOutput
        from pythae.models.nn.base_architectures import BaseDecoder, BaseEncoder
    except ImportError as error:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        return None, f"{type(error).__name__}: {error}"
    torch.set_num_threads(threads)
    try:
        version = importlib.metadata.version("multivae")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    where = os.path.dirname(os.path.dirname(multivae.__file__))
    placeholders = f"placeholders for {', '.join(missing)}" if missing else "no placeholders"
    return types.SimpleNamespace(
        models=models,
        BaseEncoder=BaseEncoder,
        BaseDecoder=BaseDecoder,
        BaseMultilatentEncoder=BaseMultilatentEncoder,
        ModelOutput=ModelOutput,
        DatasetOutput=DatasetOutput,
    ), f"MultiVae {version} from {where} ({placeholders}; torch {torch.__version__})"


def _multivae_networks(mv, network_dim: int, shared_dim: int | None, specs) -> tuple[dict, dict]:
    """Our networks (as our benchmark builds them) in MultiVae's encoder / decoder API. ``shared_dim``:
    split the encoder's code into the shared latent and a private ("style") one (DMVAE)."""
    from repscope.models.multimodal.networks import build_modality_networks
    from repscope.train.tasks.multimodal import CDSPRITES_MODALITIES

    class Encoder(mv.BaseEncoder):
        def __init__(self, net):
            mv.BaseEncoder.__init__(self)
            self.net = net

        def forward(self, x):
            mu, logvar = self.net(x)
            return mv.ModelOutput(embedding=mu, log_covariance=logvar)

    class PrivateSharedEncoder(mv.BaseMultilatentEncoder):
        def __init__(self, net):
            mv.BaseMultilatentEncoder.__init__(self)
            self.net, self.latent_dim, self.style_dim = net, shared_dim, network_dim - shared_dim

        def forward(self, x):
            mu, logvar = self.net(x)
            s = self.latent_dim
            return mv.ModelOutput(
                embedding=mu[:, :s],
                log_covariance=logvar[:, :s],
                style_embedding=mu[:, s:],
                style_log_covariance=logvar[:, s:],
            )

    class Decoder(mv.BaseDecoder):
        def __init__(self, net):
            mv.BaseDecoder.__init__(self)
            self.net = net

        def forward(self, z):
            return mv.ModelOutput(reconstruction=self.net(z))

    encoders, decoders = {}, {}
    for name, spec in CDSPRITES_MODALITIES.items():
        shape = tuple(specs[spec.get("field", name)]["shape"])
        encoder, decoder = build_modality_networks(spec["network"], shape, network_dim, **(spec.get("params") or {}))
        encoders[name] = PrivateSharedEncoder(encoder) if shared_dim is not None else Encoder(encoder)
        decoders[name] = Decoder(decoder)
    return encoders, decoders


def _multivae(mv, model: str, objective: str, k: int, batches, latent_dim: int, specs) -> tuple[Callable, list, int]:
    from repscope.train.tasks.multimodal import CDSPRITES_MODALITIES, DMVAETask

    m = mv.models
    names = list(CDSPRITES_MODALITIES)
    fields = {name: spec.get("field", name) for name, spec in CDSPRITES_MODALITIES.items()}
    # Likelihoods as close as MultiVae allows: the image Gaussian with our fixed scale 0.75 ("normal"); the
    # caption "categorical", which MultiVae scores as one-hot target * log_softmax(logits + 1e-6) summed over
    # every position, reading the tensor that the encoder reads. Zero padding rows therefore count zero: the
    # real characters are scored, but not the two end-of-caption space marks that our task also scores (MultiVae
    # has no separate likelihood target); the arithmetic is the same. Weights 1 on both sides (no rescaling).
    common = {
        "n_modalities": len(names),
        "latent_dim": latent_dim,
        "input_dims": {name: tuple(specs[fields[name]]["shape"]) for name in names},
        "decoders_dist": {
            name: "normal" if spec["likelihood"] == "gaussian" else spec["likelihood"]
            for name, spec in CDSPRITES_MODALITIES.items()
        },
        "decoder_dist_params": {
            name: {"scale": float(spec.get("scale", 0.75))}
            for name, spec in CDSPRITES_MODALITIES.items()
            if spec["likelihood"] == "gaussian"
        },
    }
    private_dim = inspect.signature(DMVAETask).parameters["private_dim"].default
    torch.manual_seed(0)
    if model == "dmvae":
        # as ours: shared latent, a private one per modality, the joint and each unimodal ELBO; MultiVae takes
        # analytic KL terms (ours Monte-Carlo) and draws the private codes anew for each ELBO (ours once)
        encoders, decoders = _multivae_networks(mv, latent_dim + private_dim, latent_dim, specs)
        config = m.DMVAEConfig(**common, modalities_specific_dim=dict.fromkeys(names, private_dim))
        net = m.DMVAE(config, encoders, decoders)
    else:
        encoders, decoders = _multivae_networks(mv, latent_dim, None, specs)
        if model == "mvae":
            # joint + unimodal ELBOs (the subsampling paradigm), beta = 1 from the start (no warm-up);
            # MultiVae's KL is analytic, ours Monte-Carlo
            net = m.MVAE(m.MVAEConfig(**common, use_subsampling=True, k=0, warmup=0, beta=1.0), encoders, decoders)
        elif model == "mmvae":
            # Gaussian posteriors and a fixed N(0, I) prior as ours (MultiVae's default is a learnt Laplace prior
            # with softmax scales); "iwae_looser" at K = 1 is the ELBO, "dreg_looser" MultiVae's DReG
            loss = "dreg_looser" if objective == "dreg" else "iwae_looser"
            config = m.MMVAEConfig(**common, K=k, loss=loss, prior_and_posterior_dist="normal", learn_prior=False)
            net = m.MMVAE(config, encoders, decoders)
        else:
            # MultiVae's MoPoE (as the original code) gives each example ONE subset's product of experts, in
            # equal shares of the batch, and decodes one z per example; ours is stratified over all three
            # subsets, i.e. decodes three z per example (three times the decoder work)
            net = m.MoPoE(m.MoPoEConfig(**common, beta=1.0), encoders, decoders)
    net.train()
    inputs = [mv.DatasetOutput(data={name: batch[fields[name]] for name in names}) for batch in batches]
    step = _adam_step(lambda batch: net(batch).loss, net)
    return step, inputs, _parameters(net.encoders, net.decoders)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--latent-dim", type=int, default=16)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--multivae-site",
        default=os.environ.get("MULTIVAE_SITE"),
        help="directory MultiVae was installed into with pip --target (default: $MULTIVAE_SITE, else a plain import)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="passes over the timed batches")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    mv, about = _load_multivae(args.multivae_site)
    torch.set_num_threads(args.threads)
    batches = _batches(args.steps + WARMUP, args.batch_size)
    specs = _field_specs()
    print(
        f"# multimodal VAEs on CdSprites+ level 1, batch {args.batch_size}, latent {args.latent_dim}, "
        f"{args.threads} threads: training samples/s"
    )
    if mv is None:
        print(
            f"# MultiVae not importable ({about}); for the side-by-side columns install it beside our torch with "
            f"`{INSTALL}` and pass --multivae-site /work/multivae-site (or set MULTIVAE_SITE)"
        )
    else:
        print(f"# {about}; {args.steps} x {args.repeats} timed steps after {WARMUP} warm-up, alternating")
        print(f"{'# model':<32}{'ours':>10}{'MultiVae':>10}{'ours/MV':>9}")
    mismatched = []
    for model, objective, k, estimator in MODELS:
        k = args.k if k is None else k
        label = f"{model} ({objective}, K = {k}{', sampled' if estimator == 'sampled' else ''})"
        sides = [_ours(model, objective, k, batches, args.latent_dim, specs, estimator)]
        if mv is not None:
            sides.append(_multivae(mv, model, objective, k, batches, args.latent_dim, specs))
        rates = _rates(sides, args.batch_size, args.repeats)
        if mv is None:
            print(f"{label:<32}{rates[0]:>10.1f}")
            continue
        print(f"{label:<32}{rates[0]:>10.1f}{rates[1]:>10.1f}{rates[0] / rates[1]:>9.2f}")
        if sides[0][2] != sides[1][2]:
            mismatched.append(f"{label}: ours {sides[0][2]:,}, MultiVae {sides[1][2]:,}")
    if mv is not None:
        print(
            "# network parameters: " + ("; ".join(mismatched) if mismatched else "equal on both sides for every model")
        )
        for note in NOTES:
            print(f"# {note}")


if __name__ == "__main__":
    main()
