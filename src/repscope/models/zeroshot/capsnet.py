"""CapsNet with dynamic routing between capsules (Sabour, Frosst & Hinton, 2017), the architecture the
Raw Zero-Shot comparison (Vargas & Su) finds to have the best representation.

The network takes float images ``(B, C, H, W)`` in [0, 1] (28x28 grey digits and 32x32 colour CIFAR
images, any size of at least 17 pixels) and returns ``(B, num_outputs)`` class-capsule lengths in
[0, 1): how present each class is. :meth:`CapsNet.capsules` gives the class capsules themselves and
:meth:`CapsNet.reconstruct` the decoder's image from them; the margin and reconstruction losses live
with the task that trains it (:mod:`repscope.train.tasks.capsule`).

References
----------
S. Sabour, N. Frosst and G. E. Hinton, "Dynamic routing between capsules", NeurIPS 2017 (Section 2,
Procedure 1, Section 4).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.morpho.baselines import check_flag, check_image_shape, check_outputs, check_positive
from repscope.validation import check_positive_int

EPSILON = 1e-8  # inside square roots: keeps squash and lengths differentiable at the zero vector
KERNEL = 9


def squash(vectors: torch.Tensor, dim: int = -1, eps: float = EPSILON) -> torch.Tensor:
    """The capsule non-linearity (Sabour et al., Eq. 1): ``v = |s|^2 / (1 + |s|^2) * s / |s|``.

    Short vectors shrink to almost zero length, long ones to a length just below 1; the direction is
    kept. Computed as ``s * |s|^2 / ((1 + |s|^2) * sqrt(|s|^2 + eps))``, so the zero vector maps to
    zero with finite gradients.

    Parameters
    ----------
    vectors : torch.Tensor
        Capsule inputs ``s``, any shape.
    dim : int, default=-1
        The axis holding each capsule's components.
    eps : float, default=1e-8
        Added to ``|s|^2`` inside the square root.

    Returns
    -------
    torch.Tensor
        ``v``, the shape of ``vectors``, each capsule of length in [0, 1).
    """
    squared = (vectors**2).sum(dim, keepdim=True)
    return vectors * (squared / ((1.0 + squared) * torch.sqrt(squared + eps)))


def capsule_lengths(capsules: torch.Tensor, eps: float = EPSILON) -> torch.Tensor:
    """The length ``sqrt(|v|^2 + eps)`` of each capsule (the last axis), differentiable at zero.

    Parameters
    ----------
    capsules : torch.Tensor
        ``(..., D)`` capsules.
    eps : float, default=1e-8
        Added inside the square root (a zero capsule has length 1e-4).

    Returns
    -------
    torch.Tensor
        ``(...)`` lengths; below 1 for squashed capsules (float32 rounding reaches 1 only for inputs
        ``|s|`` beyond about 5,000, which the margin loss never asks for: it stops pushing at 0.9).
    """
    return torch.sqrt((capsules**2).sum(-1) + eps)


def dynamic_routing(predictions: torch.Tensor, iterations: int) -> torch.Tensor:
    """Routing by agreement (Sabour et al., Procedure 1), batched over images, inputs and classes.

    With ``u_hat[b, i, j]`` the prediction of input capsule ``i`` for class capsule ``j``: start from
    logits ``b_ij = 0``; each iteration takes coupling coefficients ``c_ij = softmax_j(b_ij)``, the
    weighted sums ``s_j = sum_i c_ij u_hat_ij``, the outputs ``v_j = squash(s_j)``, and (except after
    the last iteration) adds the agreement ``u_hat_ij . v_j`` to ``b_ij``. Gradients flow through every
    iteration, as in the paper's description.

    Parameters
    ----------
    predictions : torch.Tensor
        ``u_hat``, ``(B, N, K, D)``: ``N`` input capsules' predictions for ``K`` class capsules of
        dimension ``D``.
    iterations : int
        Routing iterations, at least 1 (one iteration: uniform coupling ``1 / K``).

    Returns
    -------
    torch.Tensor
        ``(B, K, D)`` class capsules ``v``.
    """
    iterations = check_positive_int(iterations, "routing_iterations")
    logits = predictions.new_zeros(predictions.shape[:3])
    for iteration in range(iterations):
        coupling = torch.softmax(logits, dim=2)
        # broadcast products rather than einsum: about twice as fast on CPU for these shapes
        capsules = squash((coupling.unsqueeze(-1) * predictions).sum(1))
        if iteration < iterations - 1:
            logits = logits + (predictions * capsules.unsqueeze(1)).sum(-1)
    return capsules


class CapsNet(nn.Module):
    """Sabour et al.'s three-layer CapsNet with its reconstruction decoder.

    Layers: 9x9 convolution to ``conv_channels`` maps (256), ReLU; PrimaryCaps: 9x9 convolution with
    stride 2 to ``primary_types * primary_dim`` maps (32 types of 8-D capsules), regrouped into one
    capsule per type and grid position (channels ``t*primary_dim`` to ``(t+1)*primary_dim - 1`` are
    type ``t``) and squashed; class capsules (``class_dim``, 16-D): each primary capsule ``i``
    predicts ``u_hat_ij = W_ij u_i`` for class ``j`` with its own matrix ``W_ij`` (no bias), and
    :func:`dynamic_routing` (``routing_iterations``, 3) combines the predictions. The output is the
    class capsules' lengths. Neither convolution pads: 28x28 digits give 20x20 maps and a 6x6 primary
    grid (1,152 primary capsules), 32x32 images 24x24 and 8x8 (2,048).

    Decoder (``reconstruction=True``): the class capsules with all but one set to zero (the true
    class while training, the longest capsule otherwise), flattened, through fully connected layers
    of 512 and 1,024 units with ReLU and ``C*H*W`` sigmoid units: the image, ``(B, C, H, W)`` in
    [0, 1].

    Choices the paper leaves open: the routing matrices start as normal draws with standard deviation
    ``K / sqrt(N * primary_dim)`` (``N`` primary capsules; 0.10 for the published network on digits),
    so that the first routing iteration's sums have components of the primary capsules' scale (a
    fan-in scaling; with a fixed 0.01 the class capsules start about 100 times shorter, and a network
    of 32 maps and 8 primary types reached 0.48 test accuracy after one epoch on 1,000 digits, against
    0.79 with this scale); the other layers use torch's default initialisation. ``conv_channels``,
    ``primary_types`` and the capsule sizes are parameters to shrink the network for CPU studies; the
    defaults are the published sizes.

    Parameters (``C`` input channels, ``K`` classes, ``G`` primary grid positions, published sizes):
    ``(C*256*81 + 256) + (256*256*81 + 256) + 32*G*K*16*8`` and the decoder
    ``(16*K*512 + 512) + (512*1024 + 1024) + (1024*C*H*W + C*H*W)``: 6,804,224 + 1,411,344 =
    8,215,568 for 28x28 digits and ``K = 10`` (the paper's 6.8M without and 8.2M with the decoder).

    Parameters
    ----------
    num_outputs : int, default=10
        Classes (class capsules); at least 2.
    image_shape : tuple of int, default=(1, 28, 28)
        ``(C, H, W)`` of the input images, sides of at least 17 pixels.
    conv_channels : int, default=256
        Maps of the first convolution.
    primary_types : int, default=32
        Capsule types of PrimaryCaps (its maps: ``primary_types * primary_dim``).
    primary_dim : int, default=8
        Dimension of a primary capsule.
    class_dim : int, default=16
        Dimension of a class capsule.
    routing_iterations : int, default=3
        Iterations of routing by agreement.
    reconstruction : bool, default=True
        Build the reconstruction decoder.
    """

    def __init__(
        self,
        num_outputs: int = 10,
        image_shape: tuple[int, ...] = (1, 28, 28),
        conv_channels: int = 256,
        primary_types: int = 32,
        primary_dim: int = 8,
        class_dim: int = 16,
        routing_iterations: int = 3,
        reconstruction: bool = True,
    ) -> None:
        super().__init__()
        self.num_outputs = check_outputs(num_outputs, minimum=2)
        self.image_shape = check_image_shape(image_shape, minimum=2 * KERNEL - 1)
        conv_channels = check_positive(conv_channels, "conv_channels", integer=True)
        self.primary_types = check_positive(primary_types, "primary_types", integer=True)
        self.primary_dim = check_positive(primary_dim, "primary_dim", integer=True)
        self.class_dim = check_positive(class_dim, "class_dim", integer=True)
        self.routing_iterations = check_positive(routing_iterations, "routing_iterations", integer=True)
        reconstruction = check_flag(reconstruction, "reconstruction")
        channels, height, width = self.image_shape
        self.conv = nn.Conv2d(channels, conv_channels, KERNEL)
        self.primary = nn.Conv2d(conv_channels, self.primary_types * self.primary_dim, KERNEL, stride=2)
        grid = ((height - KERNEL + 1 - KERNEL) // 2 + 1) * ((width - KERNEL + 1 - KERNEL) // 2 + 1)
        self.num_primary = self.primary_types * grid
        # with the first iteration's uniform coupling 1/K, s_j sums N predictions of P components each:
        # this scale gives s_j's components the variance of the primary capsules' components
        scale = self.num_outputs / math.sqrt(self.num_primary * self.primary_dim)
        self.routing_weights = nn.Parameter(
            torch.randn(self.num_primary, self.num_outputs, self.class_dim, self.primary_dim) * scale
        )
        self.decoder: nn.Module | None = None
        if reconstruction:
            self.decoder = nn.Sequential(
                nn.Linear(self.num_outputs * self.class_dim, 512),
                nn.ReLU(),
                nn.Linear(512, 1024),
                nn.ReLU(),
                nn.Linear(1024, channels * height * width),
                nn.Sigmoid(),
            )

    def primary_capsules(self, images: torch.Tensor) -> torch.Tensor:
        """The squashed PrimaryCaps capsules ``u`` of float images ``(B, C, H, W)`` in [0, 1].

        Parameters
        ----------
        images : torch.Tensor
            ``(B, C, H, W)`` floats in [0, 1].

        Returns
        -------
        torch.Tensor
            ``(B, N, primary_dim)``, ``N = primary_types * grid height * grid width``, ordered by type,
            then grid row, then grid column.
        """
        maps = self.primary(F.relu(self.conv(images)))
        batch, _, rows, columns = maps.shape
        grouped = maps.view(batch, self.primary_types, self.primary_dim, rows, columns).permute(0, 1, 3, 4, 2)
        return squash(grouped.reshape(batch, self.num_primary, self.primary_dim))

    def capsules(self, images: torch.Tensor) -> torch.Tensor:
        """The class capsules ``v`` of float images ``(B, C, H, W)`` in [0, 1], after routing.

        Parameters
        ----------
        images : torch.Tensor
            ``(B, C, H, W)`` floats in [0, 1].

        Returns
        -------
        torch.Tensor
            ``(B, num_outputs, class_dim)``; each capsule's length (in [0, 1)) says how present its
            class is.
        """
        predictions = torch.einsum("nkdp,bnp->bnkd", self.routing_weights, self.primary_capsules(images))
        return dynamic_routing(predictions, self.routing_iterations)

    def reconstruct(self, capsules: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """The decoder's image from the class capsules, all but one masked out.

        Parameters
        ----------
        capsules : torch.Tensor
            ``(B, num_outputs, class_dim)`` class capsules (:meth:`capsules`).
        labels : torch.Tensor, optional
            ``(B,)`` int classes whose capsule is kept (the true classes, in training); the longest
            capsule of each image when omitted.

        Returns
        -------
        torch.Tensor
            ``(B, C, H, W)`` reconstructed images in [0, 1].

        Raises
        ------
        InvalidArgumentError
            When the network was built with ``reconstruction=False``.
        """
        if self.decoder is None:
            raise InvalidArgumentError("reconstruction: this CapsNet was built without its decoder")
        if labels is None:
            labels = capsule_lengths(capsules).argmax(1)
        mask = F.one_hot(labels.long(), self.num_outputs).to(capsules.dtype)
        flat = self.decoder((capsules * mask.unsqueeze(-1)).flatten(1))
        return flat.view(len(capsules), *self.image_shape)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return capsule_lengths(self.capsules(images))


__all__ = ["CapsNet", "squash", "capsule_lengths", "dynamic_routing"]
