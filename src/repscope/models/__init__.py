"""Models: plain ``torch.nn.Module`` networks (how they are trained lives in :mod:`repscope.train`).

Modules
-------
``repscope.models.morpho.infogan``
    The generator / discriminator architecture of the InfoGAN MNIST experiments (Chen et al., 2016):
    ``Generator``, ``DiscriminatorTrunk``, ``Discriminator``, the VAE ``Encoder`` mirroring the
    generator, and InfoGAN's ``RecognitionHead``.
``repscope.models.morpho.infogan_codes``
    ``CodeSpec``, InfoGAN latent codes (categorical, continuous, binary, noise): sampling, the
    generator input layout, column names in the paper's numbering, the mutual-information bound;
    ``INFOGAN_SETTINGS`` of Morpho-MNIST Table 2.
``repscope.models.morpho.baselines``
    ``LeNet5``, ``MLP`` and the scikit-learn baselines ``knn_baseline``, ``svm_baseline`` of
    Morpho-MNIST Appendix D.
``repscope.models.zeroshot`` (``all_conv``, ``network_in_network``, ``resnet``, ``capsnet``)
    The Raw Zero-Shot paper's architectures beside LeNet: All-CNN-C (Springenberg et al., 2015),
    Network-in-Network (Lin et al., 2013), the CIFAR ResNet (He et al., 2016) and CapsNet with dynamic
    routing (Sabour et al., 2017); their sizes are ``network_params`` of the supervised task.
``repscope.models.networks``
    Networks by name (what a task's ``network`` picks), built for the data's image shape; an import path
    ``pkg.module:factory`` builds a user's own.
``repscope.models.external``
    Models from outside repscope (a module, an import path, TorchScript, ``torch.export``, ONNX, a run
    directory): ``load_model``, the input contract, the probe checks and the role adapters that
    ``repscope assess`` drives.

Which task trains which network, by name (what a config's ``model.name`` picks), is the train layer's
registry, :mod:`repscope.train.registry`.
"""
