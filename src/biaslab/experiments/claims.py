"""The documents' arithmetic about architectures (Day 4), each number computed by library code.

Convolution's prior pays in parameters and operations: a kernel is shared over positions, so its
cost does not grow with the image, while a dense layer on a flattened image needs one weight per
input–output pair. Each figure the documents print (the lecture notes §5.1, the ML-for-physics
slides' 'Computational advantage', the inductive-bias slides' 'What if we were to work with
images?', the workshop book §4.4) is recomputed here from the library's counting functions
(``conv_parameter_count``, ``conv_operation_count``, ``linear_parameter_count``) and checked
against a closed form; where the printed figure disagrees with both, the verdict says so, with the
computation. Attention's O(T²·C) cost (the inductive-bias slides' 'Attention Step-by-Step') is
measured: the time of our ``scaled_dot_product_attention`` for growing T, fitted to a power law.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biaslab.config import check_memory, check_range
from biaslab.errors import ConfigError
from biaslab.evaluate.scaling import fit_power_law
from biaslab.evaluate.timing import time_attention
from biaslab.nn.conv import conv_operation_count, conv_parameter_count
from biaslab.nn.mlp import linear_parameter_count
from biaslab.registry import experiment
from biaslab.report import plots

NOTES_CNN = "lecture notes §5.1, eq. 5.5"  # "Grids \\rightarrow CNNs": the heading prints LaTeX
PHYSICS_SLIDES = "ML-for-physics slides, 'Computational advantage'"
IMAGES_SLIDE = "inductive-bias slides, 'What if we were to work with images?'"


@dataclass(frozen=True)
class ClaimsConfig:
    """Sizes of the attention timing; the arithmetic claims take no settings."""

    # The fit takes the largest lengths, where the T x T score matrix (64 MB at T = 4096) lives in
    # main memory: there time grows as T^2, like the arithmetic (exponent 2.0-2.2 over
    # 4096-8192 here, 2.07 over 4096-16384). Between 1024 and 4096 the matrix outgrows the
    # caches and the time jumps ~6x per doubling, which a fit across that step would mistake for
    # a steeper law. 8192 keeps the peak memory near 1 GB.
    lengths: tuple[int, ...] = (512, 1024, 2048, 4096, 8192)
    channels: int = 64  # C: the width of each query, key and value
    batch: int = 1  # sequences per pass
    repeats: int = 3  # the fastest of this many timings per length
    fit_points: int = 2  # the power law is fitted over the largest lengths

    def __post_init__(self):
        if sorted(set(self.lengths)) != list(self.lengths) or self.lengths[0] < 2:
            raise ConfigError(f"lengths={self.lengths}: must be increasing, each at least 2")
        check_range(self, "channels", 1, 4096)
        check_range(self, "batch", 1, 1024)
        check_range(self, "repeats", 1, 100)
        check_range(self, "fit_points", 2, len(self.lengths), "points of the power-law fit")
        scores = self.batch * self.lengths[-1] ** 2 * 4  # one float32 T x T matrix per sequence
        key = f"lengths={self.lengths[-1]}, batch={self.batch}"
        check_memory(key, 4 * scores, "attention's score matrices")


def arithmetic_claims(ctx) -> None:
    """Parameter and operation counts: conv vs dense, as the documents print them."""
    weights = conv_parameter_count(64, 128, 3, bias=False)
    ctx.claim_exact(
        "A 3x3 convolution from 64 to 128 channels has about 74,000 weights",
        source=NOTES_CNN,
        printed=r"3 \times 3 \times 64 \times 128 \approx 74,000",
        notes="74000",
        measured=weights,
        tolerance=500,  # printed to the thousand
        exact=lambda: 64 * 128 * 3 * 3,
        computation="64 input channels x 128 output channels x 3 x 3 kernel entries",
        shown=f"{weights:,} ({conv_parameter_count(64, 128, 3):,} with the biases)",
    )
    operations = conv_operation_count((280, 320), (1, 2))  # (height, width), a 1x2 kernel
    ctx.claim_exact(
        "The horizontal difference of a 320x280 image as a convolution costs 319·280·3 operations",
        source=PHYSICS_SLIDES,
        printed=r"319 \times 280 \times 3 = 267960",
        notes="267960",
        measured=operations,
        tolerance=0,
        exact=lambda: 319 * 280 * 3,
        computation="319 x 280 outputs, each 2 multiplications and 1 addition",
    )
    entries = linear_parameter_count(320 * 280, 319 * 280, bias=False)
    ctx.claim_exact(
        "The same map as a dense matrix has 320·280 x 319·280 entries",
        source=PHYSICS_SLIDES,
        printed=r"320 \times 280 \times 319 \times 280 > 77998592000",
        notes="77998592000",
        measured=entries,
        tolerance=0,
        exact=lambda: (320 * 280) * (319 * 280),
        computation="89,600 inputs x 89,320 outputs = 8,003,072,000 entries; the slides print "
        "'320 × 280 × 319 × 280 > 77998592000', a bound the product does not reach (the printed number "
        "is 9.75 times the true count, which no product of these sizes gives)",
        shown=f"{entries:,}",
    )
    ctx.metric(conv_weights=weights, difference_operations=operations, dense_entries=entries)
    ctx.metric(dense_to_conv_cost_ratio=entries / operations)
    for (height, width), notes, printed in (
        ((18, 16), "288", "that's already 288 input"),
        ((800, 800), "640000", "~800*800 -> 640k inputs"),
    ):
        inputs = linear_parameter_count(height * width, 1, bias=False)  # one weight per input
        ctx.claim_exact(
            f"An {height}x{width} image flattened is {int(notes):,} inputs",
            source=IMAGES_SLIDE,
            printed=printed,
            notes=notes,
            measured=inputs,
            tolerance=0,
            exact=lambda h=height, w=width: h * w,
            computation=f"{height} x {width} pixels",
        )
    megapixel = linear_parameter_count(1000 * 1000, 1000 * 1000, bias=False)
    kernel = conv_parameter_count(1, 1, 3, bias=False)
    ctx.claim(
        "A dense layer on a megapixel image needs ~10^12 weights, a 3x3 kernel 9",
        source="lecture notes §5.1, eqs. 5.1-5.3",
        printed="We’ve gone from 10^{12} to 9",
        kind="check",
        expected="~1e12 against 9",
        measured=f"{megapixel:.3g} against {kernel}",
        passed=round(np.log10(megapixel)) == 12 and kernel == 9,
    )
    orders_of_magnitude(ctx)


def orders_of_magnitude(ctx) -> None:
    """The workshop book §4.4: a dense layer on an image has "four orders of magnitude more"
    parameters than a k x k convolution between the same channels: (HW)^2 C_in C_out against
    k^2 C_in C_out, a ratio (HW)^2 / k^2 whatever the channels."""

    def ratio(side: int) -> float:
        dense = linear_parameter_count(side * side, side * side, bias=False)  # one channel in and out
        return dense / conv_parameter_count(1, 1, 3, bias=False)

    mnist, photo = ratio(28), ratio(224)
    ctx.claim_exact(
        "A dense layer on a 28x28 image has four orders of magnitude more parameters than a 3x3 "
        "convolution between the same channels",
        source="workshop book §4.4 (CNNs: translation equivariance for grids)",
        printed="four orders of magnitude more for a typical image",
        notes="4",
        measured=int(np.floor(np.log10(mnist))),
        tolerance=0,
        exact=lambda: int(np.floor(np.log10(784**2 / 9))),
        computation="(H·W)² C_in C_out / (3·3 C_in C_out) = 784²/9",
        shown=f"{mnist:,.0f}x = 10^{np.log10(mnist):.2f} (a 224x224 image: 10^{np.log10(photo):.2f}, eight "
        "orders)",
    )


@experiment(
    name="claims",
    day=7,
    step=4,
    config=ClaimsConfig,
    title="The documents' arithmetic on architectures",
    summary="parameter and operation counts of convolution vs dense layers; attention's T^2 cost",
    quick={"lengths": (64, 128, 256), "batch": 2, "repeats": 2, "fit_points": 2},
)
def run(ctx) -> None:
    cfg: ClaimsConfig = ctx.cfg
    arithmetic_claims(ctx)
    # a warm-up first: first-call allocations
    time_attention(cfg.lengths[0], cfg.channels, cfg.batch, 1, seed=0, device=ctx.device)
    seconds = [
        time_attention(t, cfg.channels, cfg.batch, cfg.repeats, ctx.seed_for("attention", str(t)), ctx.device)
        for t in cfg.lengths
    ]
    law = fit_power_law(cfg.lengths[-cfg.fit_points :], seconds[-cfg.fit_points :])
    ctx.timing(**{f"attention_T{t}_seconds": s for t, s in zip(cfg.lengths, seconds)})
    ctx.timing(attention_exponent=law.exponent)
    ctx.claim(
        "Attention costs O(T^2·C): time grows as T^2 at large T",
        source="inductive-bias slides, 'Attention Step-by-Step'; lecture notes §6, eq. 6.4 ('costs O(n^2) "
        "computation'); biaslab's target (the exponent within [1.7, 2.3])",
        printed="2*O(T^2 * C)",
        kind="finding",
        expected="the budget: a fitted exponent within [1.7, 2.3] over the largest lengths",
        measured=round(law.exponent, 2),
        passed=1.7 <= law.exponent <= 2.3,
        timing=True,
        checked_in_quick=False,
    )
    ctx.figure(
        "attention_cost",
        plots.power_law(
            cfg.lengths,
            seconds,
            law,
            fitted_from=cfg.lengths[-cfg.fit_points],
            xlabel="sequence length T",
            ylabel="seconds per forward pass",
        ),
        f"Self-attention's wall-clock cost against the sequence length T (C = {cfg.channels}) on log "
        f"axes, with the power law fitted over the largest {cfg.fit_points} lengths; the inductive-"
        "bias slides' O(T^2·C) predicts an exponent of 2. Clock readings depend on the machine.",
    )
