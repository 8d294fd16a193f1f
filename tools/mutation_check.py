"""Do the tests catch realistic bugs? Inject each one into a copy of the code and run its tests.

Each mutation is a one-line change a redesign could plausibly make (an off-by-one, a flipped target,
an ignored argument, the wrong split), with the tests that must fail because of it. For each one
this script copies ``src/`` and ``tests/`` (and ``pyproject.toml``) into a temporary directory,
replaces the original snippet by the mutated one (the snippet must occur exactly once in the
listed files, else the code moved and the mutation must be rewritten), runs

    python -m pytest -x -q -m "" -p no:cacheprovider -p no:xdist <tests>

from the copy with ``PYTHONPATH`` pointing at the copy's ``src``, and prints one line per mutation:
``caught``, ``MISSED`` or ``snippet-not-found``. The exit status is 1 when any was missed or not
found, 0 when every mutation was caught.

    .venv/bin/python tools/mutation_check.py                 # all mutations, on the working tree
    .venv/bin/python tools/mutation_check.py vae-beta-ignored gan-generator-target
    .venv/bin/python tools/mutation_check.py --list
    .venv/bin/python tools/mutation_check.py --baseline      # also run each test set unmutated first

``--baseline`` first checks that the named tests pass on the unmutated copy, so a test that fails
for another reason is not counted as a catch. Slow (minutes: some tests train small models); not
part of ``make test``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    files: tuple[str, ...]  # where the snippet may live (old and new homes during a refactor)
    original: str
    mutated: str
    tests: tuple[str, ...]
    why: str


MUTATIONS: list[Mutation] = [
    Mutation(
        "morpho-tiling-row-gap",
        ("src/repscope/data/morpho/pipeline.py",),
        "            row += shelf_height + gap\n",
        "            row += shelf_height + gap - 1\n",
        ("tests/morpho/test_morphometrics.py::test_fast_path_agrees_with_reference_on_200_real_digits",),
        "shelves of the crop tiling touch: strokes of neighbouring digits merge in the skeleton",
    ),
    Mutation(
        "gan-generator-target",
        ("src/repscope/train/tasks/gan.py", "src/repscope/train/tasks.py"),
        "return F.binary_cross_entropy_with_logits(fake_logits, torch.ones_like(fake_logits))",
        "return F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits))",
        ("tests/test_losses.py::test_generator_loss_is_minus_log_d_of_the_fakes",),
        "the generator is trained to look fake",
    ),
    Mutation(
        "vae-beta-ignored",
        ("src/repscope/train/tasks/vae.py",),
        'return {"regulariser": self.hparams.beta * kl, "kl": kl}',
        'return {"regulariser": kl, "kl": kl}',
        ("tests/test_losses.py::test_vae_loss_is_reconstruction_plus_beta_times_kl",),
        "every beta-VAE trains as a plain VAE",
    ),
    Mutation(
        "diversity-reference-is-training-digits",
        ("src/repscope/studies/morpho/diversity.py",),
        "    test_morpho = measured(digits.test_images, ",
        "    test_morpho = measured(digits.train_images, ",
        ("tests/morpho/test_studies.py::test_diversity_compares_samples_with_the_test_digits",),
        "samples compared with the digits the model was trained on",
    ),
    Mutation(
        "supervised-local-column-on-plain",
        ("src/repscope/studies/morpho/supervised.py",),
        "else load_morpho_mnist(set=test_name, target=target, **task_params)",
        "else load_morpho_mnist(set=train_set, target=target, **task_params)",
        ("tests/morpho/test_studies.py::test_supervised_columns_use_the_right_test_split",),
        "Table 3's LOCAL column measured on the PLAIN test digits",
    ),
    Mutation(
        "cdsprites-red-green-swapped",
        ("src/repscope/data/multimodal/attributes.py",),
        '    "red": (192, 64, 0),\n    "green": (10, 107, 60),\n',
        '    "red": (10, 107, 60),\n    "green": (192, 64, 0),\n',
        ("tests/sprites/test_cdsprites.py::test_colour_words_name_the_hue_of_the_shape",),
        "captions say red on green shapes",
    ),
    Mutation(
        "train-seed-ignored",
        ("src/repscope/train/fitting.py",),
        "pl.seed_everything(config.seed, workers=True, verbose=False)",
        "pl.seed_everything(0, workers=True, verbose=False)",
        ("tests/test_seeds.py::test_train_seed_sets_the_initial_weights",),
        "every seed of `repscope train` starts from the same weights",
    ),
    Mutation(
        "classifier-init-seed-ignored",
        ("src/repscope/studies/multimodal/judges.py",),
        "        batch_size=batch_size,\n        seed=seed,\n        num_workers=",
        "        batch_size=batch_size,\n        seed=0,\n        num_workers=",
        ("tests/test_seeds.py::test_classifier_seed_sets_the_weights_whatever_the_global_state",),
        "attribute classifiers start from the same weights whatever --seed",
    ),
    # a few more on hot modules
    Mutation(
        "mmd-bandwidth-one-sample",
        ("src/repscope/metrics/mmd.py",),
        "squared = scott_bandwidths(x) ** 2 + scott_bandwidths(y) ** 2",
        "squared = scott_bandwidths(x) ** 2 + scott_bandwidths(x) ** 2",
        ("tests/morpho/test_mmd.py::test_linear_default_bandwidth_adds_squared_scott_bandwidths",),
        "the kernel bandwidth ignores the second sample (Appendix C adds both)",
    ),
    Mutation(
        "partial-correlation-y-not-residualised",
        ("src/repscope/metrics/partial_correlations.py",),
        "residual_y = _residual(y, design)",
        "residual_y = y - y.mean()",
        ("tests/morpho/test_partial_correlation.py::test_small_example_by_hand",),
        "only one variable is corrected for the controls",
    ),
    Mutation(
        "caption-mask-one-short",
        ("src/repscope/data/multimodal/captions.py",),
        "mask[row, : len(codes)] = True",
        "mask[row, : len(codes) - 1] = True",
        (
            "tests/sprites/test_captions.py::test_encode_one_hot_layout_by_hand",
            "tests/sprites/test_captions.py::test_round_trip_with_and_without_mask",
        ),
        "the last character of every caption is masked out",
    ),
    Mutation(
        "idx-header-little-endian",
        ("src/repscope/data/idx.py",),
        'shape = struct.unpack(f">{ndim}I", data[4:header_size])',
        'shape = struct.unpack(f"<{ndim}I", data[4:header_size])',
        ("tests/test_idx.py::test_real_fashion_mnist_labels_and_images",),
        "IDX dimensions read in the wrong byte order",
    ),
    Mutation(
        "dsprites-window-too-small",
        ("src/repscope/data/dsprites.py",),
        "PATCH_PX = int(np.ceil(2 * extent_px(SPRITE_RADIUS_PX))) + 2",
        "PATCH_PX = int(np.ceil(2 * extent_px(SPRITE_RADIUS_PX))) - 1",
        ("tests/sprites/test_dsprites.py::test_window_drawing_equals_whole_frame_drawing",),
        "the drawing window clips the largest shapes",
    ),
    Mutation(
        "textures-unseeded",
        ("src/repscope/data/multimodal/textures.py",),
        "procedural_photo(name, np.random.default_rng([self.seed, 7331, index, k]))",
        "procedural_photo(name, np.random.default_rng())",
        ("tests/sprites/test_cdsprites.py::test_loader_gives_the_same_bytes_with_zero_or_two_workers",),
        "each process (DataLoader worker) draws its own textures",
    ),
    Mutation(
        "cdsprites-position-class-4-used",
        ("src/repscope/data/multimodal/cdsprites.py",),
        "NEAR_CLASSES: tuple[int, ...] = (1, 2, 3, 5, 6, 7, 8, 9)",
        "NEAR_CLASSES: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)",
        ("tests/sprites/test_cdsprites.py::test_position_words_pick_the_reference_position_classes",),
        "left / top positions no longer the reference's dSprites classes",
    ),
    Mutation(
        "cdsprites-small-scale-class",
        ("src/repscope/data/multimodal/cdsprites.py",),
        "SIZE_SCALE_CLASSES: tuple[int, ...] = (5, 0)",
        "SIZE_SCALE_CLASSES: tuple[int, ...] = (5, 1)",
        ("tests/sprites/test_cdsprites.py::test_sizes_are_the_reference_scale_classes_and_level_1_is_big",),
        "small shapes drawn at dSprites scale 0.6 instead of 0.5",
    ),
    Mutation(
        "dark-background-without-the-wrap",
        ("src/repscope/data/multimodal/textures.py",),
        "out[low] = (out[low].astype(np.int64) - DARKEN_BELOW) % 256",
        "out[low] = 0",
        ("tests/sprites/test_cdsprites.py::test_brightness_rules_by_hand",),
        "dark backgrounds black instead of the reference's wrapped 56",
    ),
    Mutation(
        "published-rounds-instead-of-truncating",
        ("src/repscope/data/morpho/published.py",),
        "upscaled = upscaled.astype(np.uint8).astype(np.float64)",
        "upscaled = np.rint(upscaled)",
        ("tests/morpho/test_morpho_published.py::test_every_published_value_is_reproduced",),
        "the hi-res image rounded to uint8 instead of truncated as the released code did",
    ),
    Mutation(
        "published-symmetric-border",
        ("src/repscope/data/morpho/published.py",),
        "return np.where(folded < size, folded, period - folded)",
        "return np.clip(index, 0, size - 1)",
        ("tests/morpho/test_morpho_published.py::test_cubic_convolution_taps_by_hand",),
        "the cubic convolution reads past the border by edge repetition instead of mirror reflection",
    ),
    Mutation(
        "copies-share-one-perturbation",
        ("src/repscope/data/morpho/build.py",),
        "key = [seed, PERTURBATION_CODES[kind], SPLIT_CODES[split], index] + ([copy] if copy else [])",
        "key = [seed, PERTURBATION_CODES[kind], SPLIT_CODES[split], index]",
        ("tests/morpho/test_build.py::test_copies_draw_each_digit_k_times_with_its_own_perturbation",),
        "every copy of a digit gets the same perturbation: --copies adds no information",
    ),
    Mutation(
        "plain-digits-keep-source-bytes",
        ("src/repscope/data/morpho/build.py",),
        '    if plain_render == "rendered":\n',
        '    if plain_render == "never":\n',
        ("tests/morpho/test_build.py::test_plain_and_perturbed_digits_share_the_render_path",),
        "plain digits written with the source's bytes: a model tells them from perturbed ones by rendering",
    ),
    Mutation(
        "dreg-without-the-hook",
        ("src/repscope/models/multimodal/objectives.py",),
        "        latents.register_hook(lambda grad: normalised.unsqueeze(-1) * grad)\n",
        "        pass\n",
        ("tests/mmvae/test_multimodal_experts.py::test_dreg_gradient_agrees_with_the_iwae_gradient_in_expectation",),
        "the encoder gets w~ instead of w~^2: a biased gradient of the IWAE bound",
    ),
    Mutation(
        "task-config-forgets-the-parents",
        ("src/repscope/train/tasks/base.py",),
        "if parent is not None and parent not in inherited and not (own is not None and issubclass(own, parent)):",
        "if parent is not None and parent not in inherited and own is None:",
        (
            "tests/test_contracts.py::test_a_subclass_field_reloads_with_its_value_not_the_default",
            "tests/test_contracts.py::test_a_subclass_constructor_is_its_parents_fields_plus_its_own",
        ),
        "a task whose Config does not derive from its parent's loses the parent's hyper-parameters",
    ),
    Mutation(
        "constant-factor-accepted-alone",
        ("src/repscope/validation.py",),
        "    if constant:\n",
        "    if len(constant) > 1:\n",
        ("tests/candle/test_metric_contract.py::test_every_metric_refuses_the_same_bad_input_naming_the_argument",),
        "one constant factor reaches the metrics (MIG divides by its zero entropy)",
    ),
    Mutation(
        "open-run-without-metrics",
        ("src/repscope/train/reader.py",),
        "        metrics=read_metrics(root),",
        "        metrics={},",
        ("tests/test_run_reader.py::test_open_run_gives_back_the_config_metrics_and_task_that_fit_trained",),
        "a run read back without its metrics.json",
    ),
    Mutation(
        "epoch-mean-unweighted",
        ("src/repscope/train/tasks/base.py",),
        "        weighted = value.mean() * batch_size\n",
        "        weighted = value.mean() * 8\n",
        ("tests/test_train_logging.py::test_epoch_means_and_logged_rows_are_lightnings",),
        "a training value's epoch mean weights a short last batch like a full one",
    ),
    Mutation(
        "device-batches-all-drawn-at-once",
        ("src/repscope/train/datamodule.py",),
        "        for rows in self.order:\n",
        "        for rows in list(self.order):\n",
        ("tests/test_device_batches.py::test_steps_on_the_device_path_give_the_loader_paths_losses_and_weights",),
        "the device path draws an epoch's whole order up front: the sampler's generator then runs ahead of "
        "the DataLoader's whenever a Trainer stops at len(loader), and the next epoch's batches differ",
    ),
    Mutation(
        "mmvae-m-elbo-weight-not-detached",
        ("src/repscope/models/multimodal/models.py",),
        "                log_weight = log_normal(z_d, mu[r], logvar[r]) - log_normal(z_d, mu[d], logvar[d]).detach()\n",
        "                log_weight = log_normal(z_d, mu[r], logvar[r]) - log_normal(z_d, mu[d], logvar[d])\n",
        (
            "tests/mmvae/test_toolkit_objectives.py::"
            "test_mmvae_m_elbo_gradient_detaches_the_weights_sample_and_the_other_experts_density",
        ),
        "the toolkit's m_elbo importance weight passes gradients into the sampling expert's density",
    ),
    Mutation(
        "toolkit-letters-over-the-generated-length",
        ("src/repscope/metrics/multimodal/toolkit_coherency.py",),
        "        letters = sum(a == b for a, b in zip(caption, true_caption)) / len(true_caption)\n",
        "        letters = sum(a == b for a, b in zip(caption, true_caption)) / max(len(caption), 1)\n",
        ("tests/sprites/test_toolkit_coherency.py",),
        "the toolkit's Letters divided by the generated caption's length: a truncated caption scores 100%",
    ),
    Mutation(
        "paper-spread-without-rounding",
        ("src/repscope/studies/multimodal/paper_table4.py",),
        "    return abs(ours - paper_mean) <= paper_std + ROUNDING[kind] + 1e-9\n",
        "    return abs(ours - paper_mean) <= paper_std + 1e-9\n",
        ("tests/mmvae/test_mmvae_leaderboard.py",),
        "a cell printed 0 (0) by the paper accepts only exactly 0: the rounding of the printed table is ignored",
    ),
    Mutation(
        "per-model-settings-of-the-files-model",
        ("src/repscope/studies/multimodal/train.py",),
        '        if key.strip() == "model":\n',
        '        if key.strip() == "model" and False:\n',
        ("tests/mmvae/test_mmvae_train.py::test_the_paper_config_holds_the_papers_and_the_authors_settings",),
        "per_model settings are chosen by the file's model, not the --set one: --set model=dmvae trains 16 shared "
        "latents and the mixture bound",
    ),
    Mutation(
        "compile-only-the-child-networks",
        ("src/repscope/train/fitting.py",),
        '    methods = getattr(task, "compiled_methods", ())\n',
        "    methods = ()\n",
        ("tests/mmvae/test_no_host_sync.py::test_trainer_compile_traces_the_whole_multimodal_loss",),
        "trainer.compile compiles the multimodal task's child network, which its step never calls as a "
        "module (it calls net.loss): nothing is traced and the run is as slow as uncompiled",
    ),
    Mutation(
        "multimodal-adam-not-fused",
        ("src/repscope/train/tasks/multimodal.py",),
        "weight_decay=hp.weight_decay, **optimiser_options(self))",
        "weight_decay=hp.weight_decay)",
        ("tests/test_contracts.py::test_every_models_optimisers_take_the_device_options",),
        "the multimodal VAEs' Adam without the device options: several kernels per parameter tensor on a GPU "
        "instead of one fused update, with every CPU number unchanged",
    ),
    Mutation(
        "semi-supervised-stream-term-averaged",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "supervised = supervised_xent(mean, targets, hp.dims_per_factor).sum()",
        "supervised = supervised_xent(mean, targets, hp.dims_per_factor).mean()",
        (
            "tests/candle/test_semi_supervised_reference.py::"
            "test_the_stream_term_is_the_sum_over_the_labelled_batch_with_labels_over_k",
        ),
        "the labelled stream's supervised term averaged over the batch where the reference sums it: "
        "batch-size times weaker supervision, the bug the stream was built to remove",
    ),
    Mutation(
        "semi-supervised-stream-skips-a-row",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "self.position = (self.position + int(size)) % len(self)",
        "self.position = (self.position + int(size) - 1) % len(self)",
        ("tests/candle/test_semi_supervised_reference.py::test_the_stream_recycles_the_subset_in_its_seeded_order",),
        "the labelled stream advances one row short: each batch repeats the previous one's last example",
    ),
    Mutation(
        "uc-reference-first-maximum",
        ("src/repscope/metrics/disentanglement/irs.py",),
        "last_max = count - 1 - int(np.argmax(values[::-1]))",
        "last_max = int(np.argmax(values))",
        ("tests/candle/test_reference_modes.py::test_the_fork_selection_by_hand",),
        "the fork's argpartition selection takes the first of tied maxima where numpy's introselect takes the "
        "last: UC rho 2 in reference mode picks other latents than the paper's code",
    ),
    Mutation(
        "irs-reference-upper-bin-edges",
        ("src/repscope/metrics/disentanglement/discretize.py",),
        "left_edges = np.histogram_bin_edges(row, bins=num_bins)[:-1]",
        "left_edges = np.histogram_bin_edges(row, bins=num_bins)[1:]",
        ("tests/candle/test_reference_modes.py::test_histogram_discretize_by_hand",),
        "disentanglement_lib's histogram discretiser against the upper bin edges: every value one bin lower, "
        "the maximum alone in the top bin",
    ),
    Mutation(
        "cg-judge-at-the-threshold-called-weak",
        ("src/repscope/metrics/disentanglement/counterfactual.py",),
        "math.isnan(value) or value < threshold",
        "math.isnan(value) or value <= threshold",
        ("tests/candle/test_disentanglement_cg.py::test_the_result_carries_its_judges_and_flags_a_weak_one",),
        "a factor classifier exactly at min_judge_accuracy flagged as a weak judge",
    ),
    Mutation(
        "ml4ml-reference-centre-fill-wrong-neighbour",
        ("src/repscope/metrics/invariance/features.py",),
        "flipped[centre[2] + 1, centre[2]]) / 2",
        "flipped[centre[2] + 1, centre[1]]) / 2",
        ("tests/invariance/test_features_reference.py::test_each_reference_feature_by_hand",),
        "the released code's centre 3x3 fill averages another neighbour: every reference feature of the "
        "filled matrix moves",
    ),
    Mutation(
        "ml4ml-reference-diagonal-skips-two-rows",
        ("src/repscope/metrics/invariance/features.py",),
        "for r in range(1, size) if r != middle])",
        "for r in range(1, size) if r not in (middle, middle + 1)])",
        ("tests/invariance/test_features_reference.py::test_each_reference_feature_by_hand",),
        "the reference 'diagonal' gradient (the vertical map) skips the second centre row as the vertical "
        "one does; the released code skips only one",
    ),
    Mutation(
        "table5-spearman-ordinal-ranks",
        ("src/repscope/studies/invariance/correlate.py",),
        "pearson(rankdata(np.asarray(x, dtype=np.float64)), ",
        'pearson(rankdata(np.asarray(x, dtype=np.float64), method="ordinal"), ',
        ("tests/invariance/test_invariance_correlate.py::test_pearson_and_spearman_by_hand",),
        "Spearman's rho with ties ranked in order of appearance instead of averaged",
    ),
    Mutation(
        "cnn5-without-its-second-dropout",
        ("src/repscope/models/invariance/simplenet.py",),
        "        x = self.pool(torch.relu(self.dropout(self.conv2(x))))",
        "        x = self.pool(torch.relu(self.conv2(x)))",
        ("tests/invariance/test_assess_reference.py::test_cnn5_forward_puts_dropout_where_the_reference_does",),
        "the ML4ML CNN5 (SimpleNet) without the dropout its second convolution has in the authors' model.py",
    ),
    Mutation(
        "ml4ml-reference-folds-without-the-hold-out",
        ("src/repscope/studies/invariance/assess_reference.py",),
        "        (np.concatenate([fold1, fixed]), fold2),",
        "        (fold1, fold2),",
        (
            "tests/invariance/test_assess_reference.py::test_reference_folds_keep_the_hold_out_as_one_fold_and_halve_the_rest",
        ),
        "the released assessor protocol's second fold trains without the fixed hold-out models",
    ),
    Mutation(
        "ml4ml-max-mean-transposed",
        ("src/repscope/studies/invariance/testing.py",),
        ".amax(dim=2).mean(dim=1)",
        ".mean(dim=2).amax(dim=1)",
        (
            "tests/invariance/test_assess_reference.py::test_max_mean_is_the_mean_over_channels_of_each_channels_maximum",
        ),
        "max_mean read as the largest per-channel mean instead of the mean of per-channel maxima",
    ),
    Mutation(
        "paper-coded-labels-not-flipped",
        ("src/repscope/studies/invariance/labels.py",),
        "return labels01 if LABEL_CODINGS[label_coding] == 1 else 1 - labels01",
        "return labels01",
        ("tests/invariance/test_assess_reference.py::test_to_our_coding_flips_the_papers_labels_only",),
        "labels in the paper's coding (0 = invariant) read as ours: the robust-accuracy baseline inverts",
    ),
    Mutation(
        "human-labels-coding-ignored",
        ("src/repscope/studies/invariance/commands.py",),
        "given[annotator] = to_our_coding(given[annotator], coding)",
        "given[annotator] = given[annotator].astype(int)",
        ("tests/invariance/test_invariance_assess.py::test_label_and_assess_from_the_cli_then_a_verdict",),
        "annotators' labels in the paper's coding compared with the rules as ours: every kappa with the rules "
        "flips sign",
    ),
    Mutation(
        "dqa-candidates-rounded",
        ("src/repscope/studies/zeroshot/attack_study.py",),
        "    genes = candidates.astype(int)  # truncation toward zero",
        "    genes = np.rint(candidates).astype(int)  # truncation toward zero",
        (
            "tests/zeroshot/test_zeroshot_reference_modes.py::test_dqa_search_scores_one_generation_of_400_candidates_as_dqa_builds_them",
        ),
        "DQA's candidate images rounded where its code truncates them (astype(int))",
    ),
    Mutation(
        "dqa-threshold-genes-channel-first",
        ("src/repscope/studies/zeroshot/attack_study.py",),
        "    values = image.ravel().astype(np.float64)",
        "    values = image.transpose(2, 0, 1).ravel().astype(np.float64)",
        (
            "tests/zeroshot/test_zeroshot_reference_modes.py::test_dqa_search_scores_one_generation_of_400_candidates_as_dqa_builds_them",
        ),
        "the DQA threshold attack's genes in channel-first order where DQA reads the image height x width x channels",
    ),
    Mutation(
        "exact-spearman-p-strict-count",
        ("src/repscope/metrics/zeroshot.py",),
        "np.count_nonzero(statistics >= observed)",
        "np.count_nonzero(statistics > observed)",
        ("tests/zeroshot/test_zeroshot_reference_modes.py::test_exact_p_value_at_five_models",),
        "the exact permutation p-value leaves out the pairings as extreme as the observed one",
    ),
    Mutation(
        "capsnet-reference-lengths-epsilon",
        ("src/repscope/train/tasks/capsule.py",),
        "KERAS_EPSILON = 1e-7",
        "KERAS_EPSILON = 1e-8",
        (
            "tests/zeroshot/test_zeroshot_reference_modes.py::test_capsnet_reference_soft_labels_are_the_raw_keras_lengths",
        ),
        "CapsNet's raw lengths with our epsilon instead of the Keras Length layer's 1e-7",
    ),
    Mutation(
        "judge-square-symmetry-180",
        ("src/repscope/data/symmetries.py",),
        "_DSPRITES_PERIOD_DEG = np.array([90.0, 180.0, 360.0])",
        "_DSPRITES_PERIOD_DEG = np.array([180.0, 180.0, 360.0])",
        (
            "tests/candle/test_judge_symmetries.py::test_a_turned_square_is_the_same_image_and_the_rule_accepts_exactly_those",
        ),
        "a square judged with the ellipse's 180-degree symmetry: its 90-degree turn counted wrong",
    ),
    Mutation(
        "judge-invisible-rotation-counted",
        ("src/repscope/data/symmetries.py",),
        "    counted = period > 0",
        "    counted = period >= 0",
        ("tests/candle/test_judge_symmetries.py::test_candle_rotation_counts_only_objects_that_show_it",),
        "a sphere's rotation, which no image shows, counted against the judge",
    ),
    Mutation(
        "judge-held-to-raw-accuracy",
        ("src/repscope/studies/candle/cg.py",),
        'return {name: record["identifiable_accuracy"] for name, record in judge_records(folder).items()}',
        'return {name: record["accuracy"] for name, record in judge_records(folder).items()}',
        (
            "tests/candle/test_judge_symmetries.py::test_a_judge_record_holds_raw_and_identifiable_accuracy",
            "tests/candle/test_disentangle_score.py::test_cg_of_a_run_is_the_metric_on_its_decoder_and_the_judges",
        ),
        "CG's judges held to their raw accuracy, symmetric orientations counted wrong",
    ),
    Mutation(
        "raw-lengths-renormalised-in-am",
        ("src/repscope/metrics/zeroshot.py",),
        "        h.append(e.sum(axis=0))",
        "        h.append((e / e.sum(axis=1, keepdims=True)).sum(axis=0))",
        ("tests/zeroshot/test_capsule_lengths.py::test_the_metrics_on_raw_lengths_equal_the_hand_computed_values",),
        "AM renormalises CapsNet's raw lengths that the reference sums as they are",
    ),
    Mutation(
        "study-reference-lengths-not-raw",
        ("src/repscope/studies/zeroshot/study.py",),
        '        return task.soft_labels(images, compat="reference")',
        "        return task.soft_labels(images)",
        ("tests/zeroshot/test_capsule_lengths.py::test_soft_labels_reference_reaches_the_capsnet_of_a_training_point",),
        "soft_labels: reference stores CapsNet's normalised lengths instead of the raw ones",
    ),
    Mutation(
        "worker-parent-death-signal-cleared",
        ("src/repscope/resources.py",),
        "return prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0",
        "return prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) == 0",
        ("tests/test_worker_lifetime.py::test_pool_workers_end_when_their_parent_is_killed",),
        "pool workers never ask for a signal when their parent dies: orphans keep the cores",
    ),
    Mutation(
        "sweep-worker-watches-the-grandparent",
        ("src/repscope/pools.py",),
        "initargs=(os.getpid(), setup, setup_args),",
        "initargs=(os.getppid(), setup, setup_args),",
        ("tests/test_worker_lifetime.py::test_sweep_workers_end_when_the_driver_is_killed",),
        "sweep workers check the wrong parent and exit at once or never",
    ),
    Mutation(
        "reference-inputs-not-centred",
        ("src/repscope/models/inputs.py",),
        'return images if input_range == "unit" else images * 2.0 - 1.0',
        'return images if input_range == "unit" else images * 2.0 - 0.5',
        (
            "tests/invariance/test_assess_reference.py::test_a_symmetric_input_network_is_the_unit_one_on_normalised_images",
        ),
        "the reference's [-1, 1] normalisation shifted by half: black reads as -0.5",
    ),
    Mutation(
        "mig-gap-to-last-latent",
        ("src/repscope/metrics/disentanglement/information.py",),
        "        top_two = -np.sort(-information, axis=0)[:2]",
        "        top_two = -np.sort(-information, axis=0)[[0, -1]]",
        ("tests/candle/test_metric_hand_cases.py::test_mig_three_latents_gap_to_second_best",),
        "MIG's gap taken to the worst latent instead of the second best",
    ),
    Mutation(
        "sap-gap-to-last-latent",
        ("src/repscope/metrics/disentanglement/information.py",),
        "    top_two = -np.sort(-scores, axis=0)[:2]",
        "    top_two = -np.sort(-scores, axis=0)[[0, -1]]",
        ("tests/candle/test_metric_hand_cases.py::test_sap_continuous_three_latents_gap_to_second_best",),
        "SAP's gap taken to the worst latent instead of the second best",
    ),
    Mutation(
        "dci-importance-transposed",
        ("src/repscope/metrics/disentanglement/dci.py",),
        "    importance = np.stack([importances for importances, _, _ in fitted], axis=1)",
        "    importance = np.stack([importances for importances, _, _ in fitted], axis=0)",
        ("tests/candle/test_metric_hand_cases.py::test_dci_importance_rows_are_codes_columns_are_factors",),
        "DCI's importance matrix stacked factors x codes: disentanglement and completeness swap",
    ),
    Mutation(
        "cg-baseline-nearest-value",
        ("src/repscope/metrics/disentanglement/counterfactual.py",),
        "        baseline = np.where(np.abs(z - low) >= np.abs(z - high), low, high)",
        "        baseline = np.where(np.abs(z - low) >= np.abs(z - high), high, low)",
        ("tests/candle/test_metric_hand_cases.py::test_cg_three_factors_three_latents_soft_judges_by_hand",),
        "CG's counterfactual baseline is the nearest dataset value, not the farthest",
    ),
    Mutation(
        "cg-judged-on-the-first-factor",
        ("src/repscope/metrics/disentanglement/counterfactual.py",),
        "            p0 = _true_class_probability(predict_proba, original, i, truth[:, i])",
        "            p0 = _true_class_probability(predict_proba, original, i, truth[:, 0])",
        ("tests/candle/test_metric_hand_cases.py::test_cg_three_factors_three_latents_soft_judges_by_hand",),
        "every factor's judge scored against the first factor's classes",
    ),
    Mutation(
        "multimodal-beta-on-likelihood",
        ("src/repscope/models/multimodal/objectives.py",),
        "    return (log_likelihood - beta * (log_posterior - log_prior)).mean(0)",
        "    return (beta * log_likelihood - (log_posterior - log_prior)).mean(0)",
        ("tests/mmvae/test_objective_terms.py::test_elbo_weights_only_the_kl_part_by_hand",),
        "beta weighs the likelihood instead of the KL in the multimodal ELBO",
    ),
    Mutation(
        "mmvae-plus-prior-without-private-code",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "            log_p = log_prior(self.prior, z) + log_prior(self.prior, w)",
        "            log_p = log_prior(self.prior, z)",
        ("tests/mmvae/test_objective_terms.py::test_mmvae_plus_elbo_by_hand_with_every_weight_away_from_one",),
        "MMVAE+'s prior leaves out the private code",
    ),
    Mutation(
        "mmvae-plus-likelihood-weight-dropped",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "spec.kind, output, target, scale=spec.scale, weight=spec.weight, mask=feature_mask, batch_dims=2",
        "spec.kind, output, target, scale=spec.scale, weight=1.0, mask=feature_mask, batch_dims=2",
        ("tests/mmvae/test_objective_terms.py::test_mmvae_plus_elbo_by_hand_with_every_weight_away_from_one",),
        "MMVAE+ ignores the modalities' likelihood weights",
    ),
    Mutation(
        "mmvae-plus-cross-private-code-swapped",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "            code = w if name == source else self.auxiliary_sample(name, tuple(z.shape[:2]), generator)",
        "            code = w if name != source else self.auxiliary_sample(name, tuple(z.shape[:2]), generator)",
        ("tests/mmvae/test_objective_terms.py::test_mmvae_plus_elbo_by_hand_with_every_weight_away_from_one",),
        "MMVAE+ decodes a modality with the other's private code",
    ),
    Mutation(
        "multimodal-task-ignores-beta",
        ("src/repscope/train/tasks/multimodal.py",),
        "k=hp.k, beta=hp.beta, feature_masks=masks",
        "k=hp.k, beta=1.0, feature_masks=masks",
        (
            "tests/mmvae/test_objective_terms.py::test_the_task_loss_is_the_models_objective_with_its_beta_weights_and_scales",
        ),
        "the training task drops the configured beta",
    ),
    Mutation(
        "candle-scene-light-swapped",
        ("src/repscope/data/candle/dataset.py",),
        'FACTOR_NAMES: tuple[str, ...] = ("object", "color", "size", "rotation", "scene", "light")',
        'FACTOR_NAMES: tuple[str, ...] = ("object", "color", "size", "rotation", "light", "scene")',
        ("tests/candle/test_candle_factor_order.py::test_read_folder_and_dataset_fields_by_hand",),
        "CANDLE's scene and light columns swapped",
    ),
    Mutation(
        "candle-scenes-sorted",
        ("src/repscope/data/candle/dataset.py",),
        '    scenes = list(SCENES) + sorted({r["scene"] for r in records} - set(SCENES))',
        '    scenes = sorted(set(SCENES) | {r["scene"] for r in records})',
        ("tests/candle/test_candle_factor_order.py::test_folder_records_columns_by_hand",),
        "the paper's three scenes lose their class numbers among extra scenes",
    ),
    Mutation(
        "invariance-identity-first-step",
        ("src/repscope/studies/invariance/testing.py",),
        "    identity = steps // 2",
        "    identity = 0",
        (
            "tests/invariance/test_invariance_glue_values.py::test_signals_kept_rows_robust_accuracy_and_a_matrix_entry_by_hand",
        ),
        "the identity transformation taken as the family's first step",
    ),
    Mutation(
        "invariance-kept-rows-all-correct",
        ("src/repscope/studies/invariance/testing.py",),
        "    kept = correct[:, identity] if correct_only else np.ones(count, bool)",
        "    kept = correct.all(axis=1) if correct_only else np.ones(count, bool)",
        (
            "tests/invariance/test_invariance_glue_values.py::test_signals_kept_rows_robust_accuracy_and_a_matrix_entry_by_hand",
        ),
        "correct-only keeps examples right under every transformation, not at the identity",
    ),
    Mutation(
        "robust-accuracy-over-transformations",
        ("src/repscope/studies/invariance/testing.py",),
        "    return float(np.mean(np.all(np.asarray(correct, bool), axis=1)))",
        "    return float(np.mean(np.all(np.asarray(correct, bool), axis=0)))",
        (
            "tests/invariance/test_invariance_glue_values.py::test_signals_kept_rows_robust_accuracy_and_a_matrix_entry_by_hand",
        ),
        "robust accuracy averaged over transformations instead of examples",
    ),
    Mutation(
        "assessor-check-skipped",
        ("src/repscope/studies/invariance/testing.py",),
        "    if assessor is not None:  # a broken or mismatched file is refused before the test runs",
        "    if False:  # a broken or mismatched file is refused before the test runs",
        ("tests/invariance/test_invariance_bad_inputs.py::test_a_broken_assessor_is_refused_before_the_test_runs",),
        "a broken --assessor is noticed only after the whole test",
    ),
    Mutation(
        "negative-variances-accepted",
        ("src/repscope/studies/invariance/commands.py",),
        "    if (values < 0).any():",
        "    if (values < -1).any():",
        ("tests/invariance/test_invariance_bad_inputs.py::test_features_refuses_matrices_that_are_no_variances",),
        "negative variance matrices scored",
    ),
    Mutation(
        "assessor-pickle-accepted",
        ("src/repscope/studies/invariance/assessor_files.py",),
        "    if not zipfile.is_zipfile(path):",
        "    if False:",
        ("tests/invariance/test_invariance_bad_inputs.py::test_a_pickle_is_refused_without_running_its_code",),
        "a pickle given as assessors is not refused by its format",
    ),
    Mutation(
        "rows-per-class-boundary",
        ("src/repscope/validation.py",),
        "        if per_class < MIN_ROWS_PER_CLASS:",
        "        if per_class <= MIN_ROWS_PER_CLASS:",
        (
            "tests/candle/test_score_bad_inputs.py::test_fewer_than_five_rows_per_class_on_average_is_refused_and_five_are_accepted",
        ),
        "factors with exactly the minimum rows a class (5, check_factor_classes) refused",
    ),
    Mutation(
        "bootstrap-estimate-at-the-end",
        ("src/repscope/metrics/disentanglement/bootstrap.py",),
        "        if b == 0 and on_first is not None:",
        "        if b == int(resamples) - 1 and on_first is not None:",
        (
            "tests/candle/test_score_bad_inputs.py::test_the_bootstrap_estimate_comes_after_the_first_resample_and_before_the_second",
        ),
        "the bootstrap time estimate printed after the work it estimates",
    ),
    Mutation(
        "soft-labels-every-class-two-images",
        ("src/repscope/data/zeroshot/softlabels.py",),
        "    if all(len(values) < MIN_IMAGES for values in checked_loo):",
        "    if any(len(values) < MIN_IMAGES for values in checked_loo):",
        ("tests/zeroshot/test_zeroshot_bad_inputs.py::test_one_class_with_two_images_is_enough_and_scores_as_by_hand",),
        "soft labels refused when any one class has a single image",
    ),
    Mutation(
        "candle-bounds-axes-swapped",
        ("src/repscope/data/candle/dataset.py",),
        "if x0 >= width or y0 >= height or x1 <= 0 or y1 <= 0:",
        "if x0 >= height or y0 >= width or x1 <= 0 or y1 <= 0:",
        ("tests/candle/test_candle_bad_inputs.py::test_bounds_entirely_outside_the_image_are_refused",),
        "CANDLE boxes checked against the image's height as width",
    ),
    Mutation(
        "candle-inverted-y-unchecked",
        ("src/repscope/data/candle/dataset.py",),
        "    if box[2] < box[0] or box[3] < box[1]:",
        "    if box[2] < box[0] or box[3] < box[0]:",
        ("tests/candle/test_candle_bad_inputs.py::test_inverted_bounds_are_refused",),
        "inverted y bounds compared with x0",
    ),
    Mutation(
        "h5-read-errors-escape",
        ("src/repscope/data/multimodal/h5.py",),
        "    except (OSError, RuntimeError, ValueError) as error:",
        "    except (RuntimeError, ValueError) as error:",
        ("tests/sprites/test_image_bad_inputs.py::test_import_h5_names_the_rows_of_the_bad_chunk",),
        "a corrupt h5 chunk is a traceback",
    ),
    Mutation(
        "sweep-resume-counts-points-only",
        ("src/repscope/sweeps.py",),
        "        if sorted(map(_sorted_items, before)) != sorted(map(_sorted_items, now)):",
        "        if len(before) != len(now):",
        ("tests/test_sweeps.py::test_a_restart_with_other_settings_or_points_is_refused_naming_them",),
        "a sweep resumed with another grid of the same size reuses stale points",
    ),
    Mutation(
        "mmvae-finite-check-any",
        ("src/repscope/studies/multimodal/evaluate.py",),
        "not bool(torch.isfinite(tensor).all())",
        "not bool(torch.isfinite(tensor).any())",
        (
            "tests/mmvae/test_mmvae_bad_inputs.py::test_nan_weights_are_refused_naming_the_checkpoint_and_nothing_is_written",
        ),
        "weights partly NaN are evaluated",
    ),
    Mutation(
        "mmvae-sweep-without-identity",
        ("src/repscope/studies/multimodal/run_commands.py",),
        '        identity=config.model_dump(mode="json"),',
        "        identity=None,",
        ("tests/mmvae/test_mmvae_bad_inputs.py::test_a_sweep_continued_with_another_set_or_grid_is_refused_naming_it",),
        "mmvae sweep --resume compares no settings",
    ),
    Mutation(
        "resume-loader-shuffle-state-lost",
        ("src/repscope/train/fitting.py",),
        "                generator.set_state(state)",
        "                pass  # generator.set_state(state)",
        ("tests/test_train_epoch_checkpoints.py::test_resume_ends_where_an_uninterrupted_run_ends",),
        "a resumed run reshuffles in the first epoch's order",
    ),
    Mutation(
        "dropped-interrupt-not-raised",
        ("src/repscope/progress_display.py",),
        "        interrupt_guard.check()  # a Ctrl-C dropped in a finalizer since the last update stops the work here",
        "        pass",
        (
            "tests/candle/test_study_interrupt.py::test_an_interrupt_dropped_in_a_finalizer_stops_the_loop_at_the_next_update",
        ),
        "a Ctrl-C Python drops in a finalizer lets the work run on",
    ),
    Mutation(
        "ctrl-c-line-without-epoch",
        ("src/repscope/cli/__init__.py",),
        'how = f"--resume to go on from epoch {epoch} or --overwrite to replace it"',
        'how = "--resume to go on or --overwrite to replace it"',
        ("tests/test_train_epoch_checkpoints.py::test_the_ctrl_c_line_names_the_epoch_resume_continues_from",),
        "the Ctrl-C line no longer says from which epoch --resume continues",
    ),
    Mutation(
        "progress-time-left-counts-earlier-steps",
        ("src/repscope/progress_text.py",),
        '(done - initial))} left"',
        'done)} left"',
        ("tests/test_progress_truth.py::test_time_left_uses_the_steps_done_since_the_start_only",),
        "a resumed bar's time left divides by the steps done before this process too",
    ),
    Mutation(
        "fit-seconds-only-since-resume",
        ("src/repscope/train/fitting.py",),
        '"fit_seconds": round(seconds + (before or 0.0), 2)',
        '"fit_seconds": round(seconds, 2)',
        ("tests/test_progress_truth.py::test_a_resumed_training_reports_its_whole_training_time",),
        "a resumed training reports only the time since the resume",
    ),
    Mutation(
        "sweep-bar-ignores-reused-runs",
        ("src/repscope/sweeps.py",),
        "enabled=progress, initial=len(record.reused))",
        "enabled=progress)",
        (
            "tests/test_progress_truth.py::test_a_continued_sweep_counts_from_the_reused_runs_and_its_rate_is_this_calls",
        ),
        "a continued sweep's bar restarts at 0 of m",
    ),
    Mutation(
        "dsprites-npz-count-lags",
        ("src/repscope/data/dsprites.py",),
        "update(min(start + chunk, count))",
        "update(start)",
        ("tests/sprites/test_sprites_visibility.py::test_writing_the_npz_layout_counts_drawing_then_compressing",),
        "the dSprites npz writer ends with a false count",
    ),
    Mutation(
        "texture-cache-digest-unchecked",
        ("src/repscope/data/multimodal/textures.py",),
        'if meta.get("sha256") != _arrays_digest(key, arrays):',
        "if False:",
        ("tests/sprites/test_sprites_visibility.py::test_a_damaged_cache_file_is_drawn_again_not_trusted",),
        "an altered texture-bank cache file is trusted",
    ),
    Mutation(
        "quick-wins-over-set",
        ("src/repscope/studies/registry.py",),
        "config = reapply_after_quick(shrink(config), overrides, given, source)",
        "config = shrink(config)",
        ("tests/test_cli_rules.py::test_set_wins_over_quick_in_the_reported_commands",),
        "--quick overrides what --set asked for",
    ),
    Mutation(
        "shipped-name-needs-suffix",
        ("src/repscope/config.py",),
        'if str(given.parent) in ("", ".") and given.name and shipped.is_file():',
        'if str(given.parent) in ("", ".") and given.name and shipped.is_file() and given.suffix:',
        ("tests/test_cli_rules.py::test_train_by_name_reads_the_shipped_file",),
        "a shipped config's bare name is not found",
    ),
    Mutation(
        "morpho-predict-count-lags",
        ("src/repscope/studies/morpho/supervised.py",),
        "update(min(start + PREDICT_CHUNK, len(images)))",
        "update(start)",
        ("tests/morpho/test_morpho_visibility.py::test_prediction_is_counted_in_chunks_and_matches_one_call",),
        "the prediction bar lags a chunk behind and never reaches n of n",
    ),
    Mutation(
        "resume-config-diff-stops-at-shorter",
        ("src/repscope/studies/morpho/resume.py",),
        "for k in range(max(len(stored), len(current))):",
        "for k in range(min(len(stored), len(current))):",
        ("tests/morpho/test_morpho_visibility.py::test_first_difference_names_the_first_differing_key_in_order",),
        "a key added to the config is not seen as a difference on --resume",
    ),
    Mutation(
        "zeroshot-std-digits",
        ("src/repscope/studies/zeroshot/report.py",),
        "{_significant(d, 2)}",
        "{_significant(d)}",
        ("tests/zeroshot/test_zeroshot_visibility.py::test_representation_table_is_readable_and_narrow",),
        "the representation table's spreads carry spurious digits",
    ),
    Mutation(
        "amalgam-known-class-labels-shifted",
        ("src/repscope/report/zeroshot_figures.py",),
        "[n for k, n in enumerate(data.class_names) if k != i]",
        "list(data.class_names)[: data.num_classes - 1]",
        (
            "tests/zeroshot/test_zeroshot_visibility.py::test_amalgam_histograms_name_the_known_and_the_left_out_classes",
        ),
        "the Amalgam histograms name the wrong known classes",
    ),
    Mutation(
        "report-scientific-threshold",
        ("src/repscope/report/formatting.py",),
        "PLAIN_FROM = 1e-3",
        "PLAIN_FROM = 1e-4",
        ("tests/test_report_formatting_digits.py::test_format_number_keeps_significant_digits",),
        "small numbers lose significant digits in reports",
    ),
    Mutation(
        "report-long-words-unbroken",
        ("src/repscope/report/html.py",),
        'classes = ["num"] if numeric else ["long"] if _has_long_token(text) else []',
        'classes = ["num"] if numeric else []',
        ("tests/test_report_formatting_digits.py::test_a_cell_with_a_long_word_may_break_inside_it",),
        "a long word in a table cell widens the table past the page",
    ),
    Mutation(
        "invariance-quick-grid-anomalies",
        ("src/repscope/studies/invariance/repo.py",),
        'out.lr, out.epochs, out.batch_size, out.optimizer, out.anomaly = [1e-3], [3], [32], ["adam"], ["none"]',
        'out.lr, out.epochs, out.batch_size, out.optimizer = [1e-3], [3], [32], ["adam"]',
        (
            "tests/invariance/test_quick_path.py::test_the_quick_grid_holds_four_models_the_rules_can_call_invariant_and_four_they_cannot",
        ),
        "the quick repository's models may carry anomalies, so none is invariant",
    ),
    Mutation(
        "candle-limit-takes-first-points",
        ("src/repscope/data/candle/grid.py",),
        "order = order[(np.arange(int(limit)) * len(order)) // int(limit)]",
        "order = order[: int(limit)]",
        ("tests/candle/test_candle_visibility.py::test_limit_takes_points_across_the_whole_grid",),
        "candle render --limit renders only the first object of the grid",
    ),
    Mutation(
        "uc-membership-order-reversed",
        ("src/repscope/report/candle_figures.py",),
        "key=lambda item: item[0], reverse=True)",
        "key=lambda item: item[0])",
        ("tests/candle/test_study_visibility.py::test_uc_membership_and_flat_images_by_hand",),
        "the UC heatmap marks a latent with the largest rho whose set holds it",
    ),
    Mutation(
        "command-clock-not-restarted",
        ("src/repscope/progress_display.py",),
        "        if clock.command_last_line is not None:\n            clock.command_last_line = now\n",
        "        pass\n",
        ("tests/test_progress_truth.py::test_short_steps_after_a_long_silence_in_a_command_say_they_finished",),
        "every short step of a command prints after the first silence: lines pile up",
    ),
    Mutation(
        "command-lines-over-open-bars",
        ("src/repscope/progress.py",),
        "        if DISPLAY.active or clock.open_bars or clock.command_silent_for() < due:",
        "        if DISPLAY.active or clock.command_silent_for() < due:",
        ("tests/test_progress_truth.py::test_work_outside_any_bar_in_a_silent_command_gets_its_lines",),
        "the command's own lines interleave with an open bar's",
    ),
    Mutation(
        "diversity-measure-count-per-chunk",
        # the running total the study's bar takes is added up inside measure() now
        ("src/repscope/data/morpho/morphometrics.py", "src/repscope/studies/morpho/diversity.py"),
        "            finished += len(task[0])\n",
        "            finished = len(task[0])\n",
        (
            "tests/morpho/test_morpho_visibility.py::test_measure_reports_the_running_total_of_digits_done",
            "tests/morpho/test_morpho_visibility.py::test_measuring_samples_counts_the_digits_done_so_far",
        ),
        "the diversity study's bar shows one chunk's size as its count (500/2000 done)",
    ),
    Mutation(
        "measure-progress-per-chunk",
        ("src/repscope/data/morpho/morphometrics.py",),
        "                progress(finished)\n",
        "                progress(len(task[0]))\n",
        ("tests/morpho/test_morpho_visibility.py::test_measure_reports_the_running_total_of_digits_done",),
        "measure() reports each chunk's size, so a bar reads 500/2000 done",
    ),
    Mutation(
        "traversal-title-unwrapped",
        ("src/repscope/report/figures.py",),
        "        width = max(int(fig.get_figwidth() * 13), 20)\n",
        "        width = 10_000\n",
        ("tests/morpho/test_morpho_figures.py::test_traversal_grid_title_names_what_it_traverses_and_fits_the_figure",),
        "a traversal grid's title runs past the figure's edge",
    ),
    Mutation(
        "ray-address-error-raw",
        ("src/repscope/sweeps.py",),
        "    except ConnectionError as exc:  # Ray's own message ends in a traceback otherwise\n",
        "    except ImportError as exc:\n",
        ("tests/test_sweeps.py::test_a_ray_address_where_no_cluster_answers_is_one_line_naming_it",),
        "a Ray address with no cluster ends in Ray's traceback",
    ),
    Mutation(
        "leaderboard-unfinished-sent-to-evaluate",
        ("src/repscope/studies/multimodal/leaderboard.py",),
        '    unfinished = [run for run in unevaluated if not (Path(run) / "metrics.json").is_file()]\n',
        "    unfinished = []\n",
        ("tests/mmvae/test_mmvae_leaderboard.py::test_mixed_up_inputs_are_refused_with_the_run_named",),
        "a run whose training stopped half-way is sent to mmvae evaluate",
    ),
    Mutation(
        "terminal-clock-stops-at-n-of-n",
        ("src/repscope/progress_display.py",),
        "                    RunningTimeColumn(),\n",
        "                    TimeElapsedColumn(),\n",
        ("tests/test_progress_truth.py::test_a_bar_at_n_of_n_still_open_keeps_its_clock_running_on_a_terminal",),
        "a bar at n of n freezes the terminal while the step writes its files",
    ),
    Mutation(
        "interrupt-untouched-unrecorded",
        ("src/repscope/outputs.py",),
        "        _untouched.append((path, option, True))\n",
        "",
        ("tests/test_cli_conventions.py::test_an_interrupt_before_anything_was_written_says_so",),
        "Ctrl-C during an --overwrite run does not say the old output is kept",
    ),
    Mutation(
        "coherency-reject-ignored",
        ("src/repscope/metrics/multimodal/coherency.py",),
        "    result = _scores(level, (predicted == truth) & mask[:, None])\n",
        "    result = _scores(level, predicted == truth)\n",
        ("tests/sprites/test_coherency.py::test_an_unrecognised_image_is_wrong_on_every_attribute_by_hand",),
        "an image the judge rejects still counts right on the attributes its arg-max matches",
    ),
    Mutation(
        "joint-strict-ignores-reject",
        ("src/repscope/metrics/multimodal/coherency.py",),
        "        bool(seen)\n        and isinstance(caption, str)\n",
        "        isinstance(caption, str)\n",
        ("tests/sprites/test_coherency.py::test_an_unrecognised_image_is_wrong_on_every_attribute_by_hand",),
        "joint Strict counts a pair right whose image the judge rejects",
    ),
    Mutation(
        "evaluate-drops-recognised",
        ("src/repscope/studies/multimodal/coherency.py",),
        "                self.level, truth, judgement.table, judgement.recognised\n",
        "                self.level, truth, judgement.table\n",
        (
            "tests/sprites/test_toolkit_coherency.py::test_images_the_judge_rejects_count_wrong_by_our_rules_and_are_reported",
        ),
        "sprites evaluate scores text->image without the judge's reject option",
    ),
    Mutation(
        "unusable-cache-unsaid",
        ("src/repscope/studies/multimodal/judges.py",),
        "            if folder.exists():\n                print(\n",
        "            if False:\n                print(\n",
        (
            "tests/sprites/test_classifier_robustness.py::test_without_a_cache_the_packaged_classifiers_are_loaded_untrained",
        ),
        "a broken cache is silently passed over for the package's classifiers",
    ),
    Mutation(
        "checkpoint-garbage-indexerror",
        ("src/repscope/train/reader.py",),
        "        IndexError,\n",
        "",
        ("tests/test_train.py::test_corrupt_and_mismatched_checkpoints_are_clear_errors",),
        "a garbage checkpoint that torch's unpickler fails on with IndexError escapes as a traceback",
    ),
    Mutation(
        "cli-warning-with-source-line",
        ("src/repscope/cli/__init__.py",),
        '    if "repscope" in Path(str(filename)).parts:\n',
        "    if False:\n",
        ("tests/test_cli_conventions.py::test_our_warnings_show_as_one_line_and_other_libraries_as_python_shows_them",),
        "our warnings show with a file, line number and source line on the command line",
    ),
    Mutation(
        "candle-render-count-stands-still",
        ("src/repscope/data/candle/render.py",),
        "        while not stop.wait(every_seconds):\n            update(written_images(out, points))\n",
        "        while not stop.wait(every_seconds):\n            pass\n",
        ("tests/candle/test_candle_render.py::test_the_parallel_render_counts_images_as_they_are_written",),
        "a parallel render's bar stands at 0 until every part has ended",
    ),
    Mutation(
        "candle-render-counts-images-without-record",
        ("src/repscope/data/candle/render.py",),
        "    return sum(f\"{image_stem(point['index'])}.json\" in names for point in points)\n",
        "    return sum(f\"{image_stem(point['index'])}.png\" in names for point in points)\n",
        ("tests/candle/test_candle_render.py::test_the_parallel_render_counts_images_as_they_are_written",),
        "an image counts as rendered before its record is written",
    ),
    Mutation(
        "judges-image-size-unchecked",
        ("src/repscope/studies/candle/cg.py",),
        "        if trained != size:\n",
        "        if False:\n",
        (
            "tests/candle/test_disentangle_study.py::test_a_judge_of_another_image_size_or_factor_or_unfinished_is_refused",
        ),
        "classifiers trained at another image size judge a study's images",
    ),
    Mutation(
        "judges-dataset-unchecked",
        ("src/repscope/studies/candle/cg.py",),
        "        if run.data_name != data:\n",
        "        if False:\n",
        (
            "tests/candle/test_disentangle_study.py::"
            "test_judges_of_other_data_or_factors_are_refused_before_anything_is_written",
        ),
        "judges of another dataset judge a study's images",
    ),
    Mutation(
        "candle-nested-manifest-read",
        ("src/repscope/data/candle/dataset.py",),
        'and path.name != "render.json"\n',
        'and path.relative_to(data_dir) != Path("render.json")\n',
        ("tests/candle/test_candle_render.py::test_render_writes_images_and_candle_json_the_dataset_reads",),
        "a folder of several renders fails on the second render's manifest, read as an image record",
    ),
    Mutation(
        "candle-render-interrupt-counts-parts",
        ("src/repscope/data/candle/render.py",),
        '                    describe_interrupted_sweep(state, f"{done} of {len(points)} images rendered")\n',
        "",
        ("tests/candle/test_candle_render.py::test_an_interrupted_parallel_render_counts_the_images_it_made",),
        "Ctrl-C in a parallel render says '0 of 2 runs complete' after a thousand images",
    ),
    Mutation(
        "packaged-judges-any-dataset",
        ("src/repscope/studies/candle/cg.py",),
        "    if data not in PACKAGED_JUDGES:\n",
        "    if False:\n",
        ("tests/candle/test_packaged_dsprites_judges.py::test_packaged_names_the_dsprites_judges_and_no_others",),
        "dSprites judges would judge CANDLE or CdSprites+ images",
    ),
    Mutation(
        "packaged-judges-read-as-a-folder",
        ("src/repscope/studies/candle/disentanglement.py",),
        "    folder = judges_folder(config.judges_dir, config.data.name)\n",
        "    folder = Path(config.judges_dir).expanduser()\n",
        (
            "tests/candle/test_packaged_dsprites_judges.py::"
            "test_a_study_judged_by_the_packaged_judges_trains_none_and_says_whose_they_are",
        ),
        "judges_dir: packaged is looked for as a folder of that name in the working directory",
    ),
    Mutation(
        "score-packaged-judges-unresolved",
        ("src/repscope/studies/candle/cg.py",),
        '    folder = judges_folder(judges_dir, open_run(run_dir).data_name, "--judges")\n',
        "    folder = Path(judges_dir)\n",
        (
            "tests/candle/test_packaged_dsprites_judges.py::"
            "test_a_study_judged_by_the_packaged_judges_trains_none_and_says_whose_they_are",
        ),
        "disentangle score --judges packaged looks for a folder called packaged",
    ),
    Mutation(
        "packaged-judge-weights-of-another-factor",
        ("src/repscope/studies/candle/cg.py",),
        "    return [open_run(folder / name).task() for name in names]\n",
        "    return [open_run(folder / names[0]).task() for name in names]\n",
        (
            "tests/candle/test_packaged_dsprites_judges.py::"
            "test_a_study_judged_by_the_packaged_judges_trains_none_and_says_whose_they_are",
        ),
        "every factor judged by the first factor's classifier",
    ),
    Mutation(
        "attribute-cnn-first-stride-ignored",
        ("src/repscope/models/multimodal/judge_cnn.py",),
        "stride=int(first_stride) if k == 0 else 2)",
        "stride=2)",
        ("tests/sprites/test_sprite_classifiers.py::test_attribute_cnn_full_resolution_and_max_readout_options",),
        "first_stride=1 builds the usual stride-2 network",
    ),
    Mutation(
        "attribute-cnn-max-readout-averages",
        ("src/repscope/models/multimodal/judge_cnn.py",),
        "        anywhere = maps.amax(dim=(2, 3))\n",
        "        anywhere = maps.mean(dim=(2, 3))\n",
        ("tests/sprites/test_sprite_classifiers.py::test_the_max_readout_does_not_see_where_an_object_is",),
        "the maps averaged instead of their maximum: a small object's features are diluted by the scene",
    ),
    Mutation(
        "classifiers-model-params-dropped",
        ("src/repscope/cli/disentangle.py",),
        "            model_params=model_params or None,",
        '            model_params={"network_params": network} if network else None,',
        (
            "tests/candle/test_judge_symmetries.py::"
            "test_the_train_judges_command_trains_candle_judges_and_prints_both_accuracies",
        ),
        "disentangle train-judges --model-param is checked, then the model trains with its defaults",
    ),
    Mutation(
        "shift-axes-swapped",
        ("src/repscope/data/invariance/transforms.py",),
        "    rows = (torch.arange(height, device=images.device)[None, :] - moves[:, 1:2])",
        "    rows = (torch.arange(height, device=images.device)[None, :] - moves[:, 0:1])",
        (
            "tests/invariance/test_invariance_matrices.py::test_shift_moves_each_image_by_whole_pixels_and_repeats_the_edges",
        ),
        "a shift moves the rows by the right offset: images move along the diagonal only",
    ),
    Mutation(
        "shift-one-offset-for-both-axes",
        ("src/repscope/train/tasks/supervised.py",),
        "        values = draw_values(self.augment_ranges, len(images) * per_image).to(images.device)\n",
        "        values = draw_values(self.augment_ranges, len(images)).repeat_interleave(per_image)\n",
        (
            "tests/invariance/test_invariance_matrices.py::"
            "test_a_shift_augmented_task_draws_two_offsets_an_image_from_the_ranges",
        ),
        "one value drawn per image moves it right and down alike",
    ),
    Mutation(
        "outer-bar-repeats-beside-nested-bar",
        ("src/repscope/progress_display.py",),
        "                if clock.open_bars > self._depth:\n",
        "                if False:\n",
        (
            "tests/test_progress_truth.py::"
            "test_a_bar_with_a_speaking_nested_bar_adds_no_lines_of_its_own_but_speaks_for_a_quiet_one",
        ),
        "an outer bar repeats its unchanged count between every line of the training nested in it",
    ),
    Mutation(
        "bar-closed-before-its-end-line",
        ("src/repscope/progress.py",),
        "            clock.open_bars -= counted\n            if guarded:",
        "            if guarded:",
        ("tests/test_progress_truth.py::test_work_outside_any_bar_in_a_silent_command_gets_its_lines",),
        "a bar never counted as closed: the command stays silent after its first bar",
    ),
    Mutation(
        "nested-bar-grace-dropped",
        ("src/repscope/progress_display.py",),
        "NESTED_GRACE = 1.5\n",
        "NESTED_GRACE = 1.0\n",
        (
            "tests/test_progress_truth.py::"
            "test_a_bar_with_a_speaking_nested_bar_adds_no_lines_of_its_own_but_speaks_for_a_quiet_one",
        ),
        "an outer bar speaks at the nested bar's own interval, racing its lines",
    ),
    Mutation(
        "attribute-cnn-width-ignored",
        ("src/repscope/models/multimodal/judge_cnn.py",),
        "        channels = (shape[0], *(c * width for c in CHANNELS[1:]))\n",
        "        channels = (shape[0], *CHANNELS[1:])\n",
        ("tests/sprites/test_sprite_classifiers.py::test_attribute_cnn_width_multiplies_every_block",),
        "--network-param width=4 is accepted and recorded but trains the default 16-32-64-64 network",
    ),
    Mutation(
        "packed-candle-bounds-not-rescaled",
        ("benchmarks/candle_parts.py",),
        '                    entry["bounds"] = (np.asarray(entry["bounds"], float) * scale).round(4).tolist()\n',
        '                    entry["bounds"] = np.asarray(entry["bounds"], float).round(4).tolist()\n',
        ("tests/candle/test_candle_dataset.py::test_packed_parts_unpack_to_the_same_images_factors_boxes_and_split",),
        "renders packed for a device keep the full-size boxes beside images at the study's size",
    ),
    Mutation(
        "device-data-validation-serves-training-rows",
        ("src/repscope/train/datamodule.py",),
        "        return [] if self.val_set is None else self._serve(self.val_set, EVAL_BATCH, False, False)",
        "        return [] if self.val_set is None else self._serve(self.train_set, EVAL_BATCH, False, False)",
        (
            "tests/test_device_data_values.py::test_the_validation_split_serves_the_held_out_rows_and_training_the_others",
        ),
        "validation loss and early stopping read the rows the model trains on",
    ),
    Mutation(
        "device-data-hold-out-is-the-first-rows",
        ("src/repscope/train/datamodule.py",),
        'self.val_set = SplitView(dataset, "train", self.fields, np.sort(order[:n_val])) if n_val else None',
        'self.val_set = SplitView(dataset, "train", self.fields, np.arange(n_val)) if n_val else None',
        (
            "tests/test_device_data_values.py::test_the_validation_split_serves_the_held_out_rows_and_training_the_others",
        ),
        "the validation split is the first rows of the training data, not a seeded sample of all of them",
    ),
    Mutation(
        "device-data-store-cached-by-split-name",
        ("src/repscope/train/datamodule.py",),
        "        key = id(view)",
        "        key = view.split",
        (
            "tests/test_device_data_values.py::test_the_validation_split_serves_the_held_out_rows_and_training_the_others",
        ),
        "rows held on the device are cached by split name: a hold-out of train is served the training rows",
    ),
    Mutation(
        "device-data-store-fills-the-first-rows",
        ("src/repscope/train/datamodule.py",),
        "batch = view.dataset.batch(view.split, view.rows[positions], view.fields)",
        "batch = view.dataset.batch(view.split, np.asarray(positions), view.fields)",
        (
            "tests/test_device_data_values.py::test_the_validation_split_serves_the_held_out_rows_and_training_the_others",
        ),
        "the device holds the split's first rows instead of the view's rows: validation on training rows",
    ),
    Mutation(
        "device-data-hold-out-truncated",
        ("src/repscope/train/datamodule.py",),
        "n_val = int(round(n * val_fraction))",
        "n_val = int(n * val_fraction)",
        (
            "tests/test_device_data_values.py::test_the_validation_split_serves_the_held_out_rows_and_training_the_others",
        ),
        "the hold-out truncates its share of the rows (13 of 50 at 0.27) where the documented rule rounds it",
    ),
    Mutation(
        "device-data-hold-out-seed-ignored",
        ("src/repscope/train/datamodule.py",),
        "order = np.random.default_rng([seed, 17]).permutation(n)",
        "order = np.random.default_rng([0, 17]).permutation(n)",
        ("tests/test_device_data_values.py::test_the_hold_out_follows_its_seed",),
        "every seed holds out the same validation rows",
    ),
    Mutation(
        "device-memory-uint8-images-as-float32",
        ("src/repscope/train/datamodule.py",),
        "itemsize = 1  # held as uint8, converted per batch",
        "itemsize = 4  # held as uint8, converted per batch",
        ("tests/test_device_data_values.py::test_the_bytes_held_are_counted_field_by_field_and_row_by_row",),
        "the estimate counts uint8 images at 4 bytes: auto leaves data that fit on the host",
    ),
    Mutation(
        "device-memory-validation-rows-not-counted",
        ("src/repscope/train/datamodule.py",),
        "needed = sum(v.nbytes_held() for v in views)",
        "needed = views[0].nbytes_held()",
        ("tests/test_device_data_values.py::test_auto_places_the_rows_when_they_fit_the_share_of_the_free_memory",),
        "auto weighs only the training rows against the free memory, then also places the validation rows",
    ),
    Mutation(
        "device-memory-share-ignored",
        ("src/repscope/train/datamodule.py",),
        "return needed <= DEVICE_MEMORY_SHARE * free",
        "return needed <= free",
        ("tests/test_device_data_values.py::test_auto_places_the_rows_when_they_fit_the_share_of_the_free_memory",),
        "auto fills all of the free memory with data, leaving none for the model and its activations",
    ),
    Mutation(
        "device-memory-one-row-counted",
        ("src/repscope/train/datamodule.py",),
        "total += len(self) * int(np.prod(spec.shape, dtype=np.int64)) * itemsize",
        "total += int(np.prod(spec.shape, dtype=np.int64)) * itemsize",
        ("tests/test_device_data_values.py::test_the_bytes_held_are_counted_field_by_field_and_row_by_row",),
        "the estimate is the bytes of one row: any data set 'fits'",
    ),
    Mutation(
        "device-memory-float64-at-8-bytes",
        ("src/repscope/train/datamodule.py",),
        "                itemsize = 4",
        "                itemsize = np.dtype(spec.dtype).itemsize",
        ("tests/test_device_data_values.py::test_the_bytes_held_are_counted_field_by_field_and_row_by_row",),
        "float64 fields counted at their stored 8 bytes though they are held as float32",
    ),
    Mutation(
        "device-memory-int32-at-4-bytes",
        ("src/repscope/train/datamodule.py",),
        "                itemsize = 8",
        "                itemsize = np.dtype(spec.dtype).itemsize",
        ("tests/test_device_data_values.py::test_the_bytes_held_are_counted_field_by_field_and_row_by_row",),
        "integer fields counted at their stored size though they are held as int64 (uint8 captions 8 times)",
    ),
    Mutation(
        "device-placement-refuses-an-exact-fit",
        ("src/repscope/train/datamodule.py",),
        "if free is not None and needed > free:",
        "if free is not None and needed >= free:",
        (
            "tests/test_device_data_values.py::test_device_placement_is_refused_only_when_the_rows_exceed_the_free_memory",
        ),
        "data_placement: device refuses rows that exactly fit the free memory",
    ),
    Mutation(
        "strict-json-tuples-refused",
        ("src/repscope/fileio.py",),
        "    if isinstance(obj, list | tuple):",
        "    if isinstance(obj, list):",
        ("tests/test_strict_json_types.py::test_tuples_and_nested_lists_note_each_non_finite_number_at_its_position",),
        "a tuple in a record (a shape, a range) is refused as a type JSON cannot hold",
    ),
    Mutation(
        "strict-json-keys-in-python-spelling",
        ("src/repscope/fileio.py",),
        "    return json.dumps(key) if not isinstance(key, str) else key",
        "    return str(key)",
        ("tests/test_strict_json_types.py::test_keys_are_written_as_json_writes_them_and_their_notes_follow",),
        "non-string keys written as Python spells them (True, None) where json writes true, null",
    ),
    Mutation(
        "strict-json-numpy-scalars-as-floats",
        ("src/repscope/fileio.py",),
        "        plain = value.tolist()",
        "        plain = float(value) if value.ndim == 0 else value.tolist()",
        ("tests/test_strict_json_types.py::test_numpy_scalars_are_written_as_the_plain_numbers_they_hold",),
        "numpy integers and bools written as floats: counts read -7.0, flags 1.0, a uint64 loses its digits",
    ),
    Mutation(
        "strict-json-long-double-recursion",
        ("src/repscope/fileio.py",),
        "            return float(plain)  # the nearest double",
        "            return plain  # the nearest double",
        ("tests/test_strict_json_types.py::test_long_doubles_are_written_as_the_nearest_double",),
        "a long double is handed back as itself: the writer recurses until Python's limit",
    ),
    Mutation(
        "strict-json-infinity-sign-lost",
        ("src/repscope/fileio.py",),
        'return None, "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")',
        'return None, "nan" if math.isnan(obj) else "inf"',
        (
            "tests/test_strict_json_types.py::"
            "test_non_finite_numpy_scalars_of_every_float_kind_are_null_with_their_note",
        ),
        "minus infinity noted as inf",
    ),
    Mutation(
        "strict-json-positions-inner-first",
        ("src/repscope/fileio.py",),
        '                positions.update({f"[{index}]{where}": what for where, what in note.items()})',
        '                positions.update({f"{where}[{index}]": what for where, what in note.items()})',
        ("tests/test_strict_json_types.py::test_two_dimensional_arrays_note_row_then_column",),
        "the position of a non-finite value in a 2-D array is noted column first",
    ),
    Mutation(
        "ml4ml-test-sensitivity-seed-unused",
        ("src/repscope/studies/invariance/testing.py",),
        "    matrices, features = matrices_and_features(signals, seed=seed)\n",
        "    matrices, features = matrices_and_features(signals)\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_seed_of_a_test_draws_both_sensitivity_subsamples",
        ),
        "invariance test records its --seed but the paper's sensitivity subsample is always drawn with seed 0",
    ),
    Mutation(
        "ml4ml-test-reference-sensitivity-seed-unused",
        ("src/repscope/studies/invariance/testing.py",),
        '    features_reference = reference_features(signals, seed=seed) if compat == "reference" else None\n',
        '    features_reference = reference_features(signals) if compat == "reference" else None\n',
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_seed_of_a_test_draws_both_sensitivity_subsamples",
        ),
        "invariance test --compat reference draws the released code's sensitivity subsample with seed 0 "
        "whatever --seed",
    ),
    Mutation(
        "ml4ml-subsample-size-truncated",
        ("src/repscope/metrics/invariance/variance_matrix.py",),
        "    size = int(round(fraction * count))\n",
        "    size = int(fraction * count)\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_subsample_rows_are_pinned_by_count_fraction_and_seed",
        ),
        "the sensitivity subsample of 0.9 x 15 rows holds 13, not round(13.5) = 14",
    ),
    Mutation(
        "ml4ml-paper-subsample-fraction-unused",
        ("src/repscope/studies/invariance/testing.py",),
        "        rows = subsample_rows(len(values), subsample_fraction, seed)\n",
        "        rows = subsample_rows(len(values), 0.9, seed)\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_paper_features_read_the_fraction_seed_and_tau_given",
        ),
        "the paper features' subsample_fraction is taken but the subsample is always 90%",
    ),
    Mutation(
        "ml4ml-paper-features-tau-unused",
        ("src/repscope/studies/invariance/testing.py",),
        "        features[name] = matrix_features(matrices[name], subsample, tau=tau)\n",
        "        features[name] = matrix_features(matrices[name], subsample)\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_paper_features_read_the_fraction_seed_and_tau_given",
        ),
        "matrices_and_features takes tau but counts significant variance above 0.15",
    ),
    Mutation(
        "ml4ml-reference-subsample-fraction-unused",
        ("src/repscope/studies/invariance/testing.py",),
        "    drawn = released_subsample_rows(len(signals.kept), subsample_fraction, seed)\n",
        "    drawn = released_subsample_rows(len(signals.kept), 0.9, seed)\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_reference_features_read_the_fraction_and_tau_given",
        ),
        "the released code's sensitivity subsample ignores subsample_fraction",
    ),
    Mutation(
        "ml4ml-reference-features-tau-unused",
        ("src/repscope/studies/invariance/testing.py",),
        'variance_matrix(values[rows]), tau=tau, compat="reference")',
        'variance_matrix(values[rows]), compat="reference")',
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_reference_features_read_the_fraction_and_tau_given",
        ),
        "reference_features takes tau but its significant variance counts above 0.15",
    ),
    Mutation(
        "ml4ml-matrix-features-reference-tau-dropped",
        ("src/repscope/metrics/invariance/features.py",),
        "        return reference_matrix_features(matrix, subsample_matrix, tau)\n",
        "        return reference_matrix_features(matrix, subsample_matrix)\n",
        ("tests/invariance/test_feature_parameter_values.py::test_matrix_features_hand_tau_to_both_modes",),
        "matrix_features(compat='reference') drops tau: invariance features --compat reference --tau X records "
        "X, counts above 0.15",
    ),
    Mutation(
        "ml4ml-features-command-tau-dropped",
        ("src/repscope/studies/invariance/commands.py",),
        '"features": matrix_features(read_variance_matrix(matrix), tau=tau)}',
        '"features": matrix_features(read_variance_matrix(matrix))}',
        ("tests/invariance/test_feature_parameter_values.py::test_the_features_command_records_and_uses_its_tau",),
        "invariance features --tau is written into the result but the feature counts above 0.15",
    ),
    Mutation(
        "ml4ml-reference-assessors-seed-not-per-repeat",
        ("src/repscope/studies/invariance/assess_reference.py",),
        "            for name, model in reference_assessors(seed + repeat).items():\n",
        "            for name, model in reference_assessors(seed).items():\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_reference_protocol_seeds_the_ensembles_by_repeat",
        ),
        "every repeat of the released protocol grows the same random forest: the repeats' spread shrinks",
    ),
    Mutation(
        "ml4ml-assess-train-reference-seed-dropped",
        ("src/repscope/studies/invariance/assess.py",),
        'features, merged["label"], merged["robust_accuracy"], mask, repeats=repeats, seed=seed\n',
        'features, merged["label"], merged["robust_accuracy"], mask, repeats=repeats\n',
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_assess_train_reference_hands_its_seed_and_hold_out_to_the_protocol",
        ),
        "assess train --compat reference --seed S cross-validates with seed 0",
    ),
    Mutation(
        "ml4ml-assess-train-holdout-ignored",
        ("src/repscope/studies/invariance/assess.py",),
        '            mask = merged["name"].isin(set(holdout)).to_numpy()\n',
        '            mask = reference_holdout(merged["name"])\n',
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_assess_train_reference_hands_its_seed_and_hold_out_to_the_protocol",
        ),
        "assess train --holdout names are checked but the default last third is held out",
    ),
    Mutation(
        "mopoe-subsets-singles-and-the-full-one",
        ("src/repscope/models/multimodal/experts.py",),
        "for size in range(1, n_modalities + 1) for s in itertools.combinations",
        "for size in (1, n_modalities) for s in itertools.combinations",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_mopoe_mixes_every_available_subset_of_three_modalities",),
        "MoPoE mixes the single modalities and the full set only: the pairs of three modalities are left out",
    ),
    Mutation(
        "mopoe-prior-expert-in-every-joint-subset",
        ("src/repscope/models/multimodal/experts.py",),
        'prior_expert=prior_expert == "full_subset" and len(subset) == mu.shape[0],',
        'prior_expert=prior_expert == "full_subset" and len(subset) > 1,',
        ("tests/mmvae/test_toolkit_three_modalities.py::test_mopoe_mixes_every_available_subset_of_three_modalities",),
        "the toolkit's MoPoE gives the prior expert to every subset of two or more, not only to the one of all "
        "modalities",
    ),
    Mutation(
        "mopoe-subset-available-with-any-modality",
        ("src/repscope/models/multimodal/experts.py",),
        "        inside = torch.stack([present[i] for i in subset]).all(0)\n",
        "        inside = torch.stack([present[i] for i in subset]).any(0)\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_mopoe_mixes_every_available_subset_of_three_modalities",),
        "a MoPoE subset counts as a component for an example that lacks one of its modalities",
    ),
    Mutation(
        "mixture-averaged-over-every-component",
        ("src/repscope/models/multimodal/models.py",),
        "        return total / count.clamp(min=1)\n",
        "        return total / c_mu.shape[0]\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_mopoe_mixes_every_available_subset_of_three_modalities",),
        "the stratified mixture bound divides by every component, not by those the example has",
    ),
    Mutation(
        "mixture-component-availability-ignored",
        ("src/repscope/models/multimodal/models.py",),
        "            total = total + value * available[c].to(value.dtype)\n",
        "            total = total + value\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_mopoe_mixes_every_available_subset_of_three_modalities",),
        "an example's stratified bound sums the components it does not have",
    ),
    Mutation(
        "dmvae-toolkit-private-kl-once",
        ("src/repscope/models/multimodal/dmvae.py",),
        "            total = -beta * sum(private_kls[n] * has[n] * (present_count - has[n]) for n in given)\n",
        "            total = -beta * sum(private_kls[n] * has[n] for n in given)\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_dmvae_counts_each_kl_term_by_hand_with_three_modalities",),
        "the toolkit's DMVAE counts each private KL once, not once per other modality (the same for two)",
    ),
    Mutation(
        "dmvae-toolkit-joint-kl-per-modality-given",
        ("src/repscope/models/multimodal/dmvae.py",),
        "            joint_weight = present_count\n",
        "            joint_weight = len(given)\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_dmvae_counts_each_kl_term_by_hand_with_three_modalities",),
        "the toolkit's joint KL counted once per modality given, also for an example that lacks one",
    ),
    Mutation(
        "dmvae-toolkit-single-source-kl-unmasked",
        ("src/repscope/models/multimodal/dmvae.py",),
        "                weight = joint_weight if index == 0 else available\n",
        "                weight = joint_weight if index == 0 else 1.0\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_dmvae_counts_each_kl_term_by_hand_with_three_modalities",),
        "the toolkit's DMVAE charges a missing modality's shared KL",
    ),
    Mutation(
        "dmvae-private-kl-of-a-missing-modality",
        ("src/repscope/models/multimodal/dmvae.py",),
        "        private_kl = sum(private_kls[n] * has[n] for n in given)\n",
        "        private_kl = sum(private_kls[n] for n in given)\n",
        ("tests/mmvae/test_toolkit_three_modalities.py::test_dmvae_counts_each_kl_term_by_hand_with_three_modalities",),
        "DMVAE charges the private KL of a modality the example lacks",
    ),
    Mutation(
        "mvae-all-subsets-singles-only",
        ("src/repscope/models/multimodal/models.py",),
        "        return [subset for subset in experts.subsets(count) if len(subset) < count]\n",
        "        return [subset for subset in experts.subsets(count) if len(subset) == 1]\n",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mvae_toolkit_sums_the_elbo_of_every_subset_of_three_modalities",
        ),
        "MVAE subsampling all trains the single modalities only: the pairs of three modalities are left out",
    ),
    Mutation(
        "mvae-all-subset-term-unmasked",
        ("src/repscope/models/multimodal/models.py",),
        "                term = term * only.any(0).to(term.dtype)",
        "                term = term",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mvae_toolkit_sums_the_elbo_of_every_subset_of_three_modalities",
        ),
        "MVAE reconstruct all counts a subset's term for an example with none of its modalities",
    ),
    Mutation(
        "mmvae-plus-missing-weight-log-scale-halved",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "torch.zeros_like(scale), 2.0 * torch.log(scale))",
        "torch.zeros_like(scale), torch.log(scale))",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mmvae_plus_weights_a_missing_modalitys_code_by_its_learned_auxiliary_scale",
        ),
        "the weight p(w)/r(w) of a missing modality's code reads the auxiliary log-scale as a log-variance",
    ),
    Mutation(
        "mmvae-plus-missing-weight-at-the-initial-scale",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "torch.zeros_like(scale), 2.0 * torch.log(scale))",
        "torch.zeros_like(scale), torch.zeros_like(scale))",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mmvae_plus_weights_a_missing_modalitys_code_by_its_learned_auxiliary_scale",
        ),
        "the weight of a missing modality's code takes r_n at its initial scale 1: right only before training",
    ),
    Mutation(
        "mmvae-plus-stratified-over-every-modality",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "        return -(total / mask.sum(0).to(total.dtype).clamp(min=1)).mean()\n",
        "        return -(total / len(self.modalities)).mean()\n",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mmvae_plus_stratifies_over_the_modalities_each_example_has",
        ),
        "MMVAE+ divides an example's bound by every modality, not by those it has",
    ),
    Mutation(
        "mmvae-plus-mixture-density-ignores-presence",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "MultimodalVAE._log_mixture_density(z, c_mu, c_logvar, mask, False)",
        "MultimodalVAE._log_mixture_density(z, c_mu, c_logvar, torch.ones_like(mask), False)",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mmvae_plus_stratifies_over_the_modalities_each_example_has",
        ),
        "MMVAE+'s q(z | X) mixes in the expert of a modality the example lacks",
    ),
    Mutation(
        "mmvae-plus-missing-modality-reconstructed",
        ("src/repscope/models/multimodal/mmvae_plus.py",),
        "            total = total + value * mask[index].to(value.dtype)\n        return total\n",
        "            total = total + value\n        return total\n",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mmvae_plus_stratifies_over_the_modalities_each_example_has",
        ),
        "MMVAE+ scores the reconstruction of a modality the example lacks",
    ),
    Mutation(
        "shift-offsets-truncated",
        ("src/repscope/data/invariance/transforms.py",),
        "    moves = torch.round(offsets.to(images.device, torch.float32)).long()",
        "    moves = offsets.to(images.device, torch.float32).long()",
        (
            "tests/invariance/test_shift_offsets.py::"
            "test_each_image_moves_by_its_offsets_rounded_to_the_nearest_even_on_halves",
        ),
        "offsets truncated toward zero: 2.7 moves 2, a draw over [-2, 2] never reaches 2 and stays put half the time",
    ),
    Mutation(
        "shift-offsets-half-up",
        ("src/repscope/data/invariance/transforms.py",),
        "    moves = torch.round(offsets.to(images.device, torch.float32)).long()",
        "    moves = torch.floor(offsets.to(images.device, torch.float32) + 0.5).long()",
        (
            "tests/invariance/test_shift_offsets.py::"
            "test_each_image_moves_by_its_offsets_rounded_to_the_nearest_even_on_halves",
        ),
        "halves rounded up: 0.5 moves right one pixel and -0.5 not at all, a shift family no longer symmetric",
    ),
    Mutation(
        "shift-offsets-floored",
        ("src/repscope/data/invariance/transforms.py",),
        "    moves = torch.round(offsets.to(images.device, torch.float32)).long()",
        "    moves = torch.floor(offsets.to(images.device, torch.float32)).long()",
        (
            "tests/invariance/test_shift_offsets.py::"
            "test_a_shift_drawn_over_a_range_reaches_its_ends_half_as_often_as_the_pixels_between",
        ),
        "offsets floored: every draw moves left and up by half a pixel on average",
    ),
    Mutation(
        "sprites-shift-one-draw-for-both-axes",
        ("src/repscope/data/multimodal/augment.py",),
        '    cy = factors["centre_y"] + a.shift_px * (2 * draws[:, 5] - 1)',
        '    cy = factors["centre_y"] + a.shift_px * (2 * draws[:, 4] - 1)',
        (
            "tests/sprites/test_shift_augment.py::test_each_sample_moves_by_its_own_shift_on_each_axis_in_both_directions",
        ),
        "the sprites' centre moves along the diagonal only",
    ),
    Mutation(
        "sprites-shift-one-sided",
        ("src/repscope/data/multimodal/augment.py",),
        '    cx = factors["centre_x"] + a.shift_px * (2 * draws[:, 4] - 1)',
        '    cx = factors["centre_x"] + a.shift_px * draws[:, 4]',
        (
            "tests/sprites/test_shift_augment.py::test_each_sample_moves_by_its_own_shift_on_each_axis_in_both_directions",
        ),
        "the sprites' centre only ever moves right: the classifiers learn a biased position",
    ),
    Mutation(
        "exact-spearman-observed-sign-kept",
        ("src/repscope/metrics/zeroshot.py",),
        "    observed = abs(int(centred_x.astype(np.int64) @ centred_y))",
        "    observed = int(centred_x.astype(np.int64) @ centred_y)",
        (
            "tests/zeroshot/test_permutation_pvalues.py::test_negative_correlations_get_the_two_sided_share_of_every_pairing",
        ),
        "every negative correlation gets p = 1: the absolute value of the observed statistic dropped",
    ),
    Mutation(
        "exact-spearman-one-sided-upper",
        ("src/repscope/metrics/zeroshot.py",),
        "    statistics = np.abs(centred_y[_permutations(n)] @ centred_x)",
        "    statistics = centred_y[_permutations(n)] @ centred_x",
        (
            "tests/zeroshot/test_permutation_pvalues.py::test_negative_correlations_get_the_two_sided_share_of_every_pairing",
        ),
        "the p-value counts only the pairings as extreme upwards: half the two-sided p-value",
    ),
    Mutation(
        "exact-spearman-ten-models-approximated",
        ("src/repscope/metrics/zeroshot.py",),
        "    exact = len(x) <= EXACT_MAX_N",
        "    exact = len(x) < EXACT_MAX_N",
        ("tests/zeroshot/test_permutation_pvalues.py::test_ten_models_still_get_the_exact_count",),
        "ten models get the t approximation (p 1e-7 where the exact count gives 20 / 10!)",
    ),
    Mutation(
        "exact-spearman-min-ranks",
        ("src/repscope/metrics/zeroshot.py",),
        "    centred_y = (2 * rankdata(b) - (n + 1)).astype(np.int16)",
        '    centred_y = (2 * rankdata(b, method="min") - (n + 1)).astype(np.int16)',
        (
            "tests/zeroshot/test_permutation_pvalues.py::test_negative_correlations_get_the_two_sided_share_of_every_pairing",
        ),
        "tied values of y take the lowest rank of their tie instead of the average: another statistic than rho",
    ),
    Mutation(
        "semi-supervised-validation-draws-training-rows",
        ("src/repscope/train/tasks/semi_supervised.py",),
        'data = getattr(getattr(trainer, "datamodule", None), "train_set" if stage == "train" else "val_set", None)',
        'data = getattr(getattr(trainer, "datamodule", None), "train_set", None)',
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "the validation steps' labelled batches are training examples: val_supervised measures fit, not generalisation",
    ),
    Mutation(
        "semi-supervised-label-seed-ignored",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "        images, factors = labelled_rows(data, hp.labelled_fraction, hp.label_seed)",
        "        images, factors = labelled_rows(data, hp.labelled_fraction)",
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "label_seed is recorded but every run labels the examples of seed 0",
    ),
    Mutation(
        "semi-supervised-fraction-ignored",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "        images, factors = labelled_rows(data, hp.labelled_fraction, hp.label_seed)",
        "        images, factors = labelled_rows(data, seed=hp.label_seed)",
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "labelled_fraction is recorded but the stream always labels 10% of the examples",
    ),
    Mutation(
        "semi-supervised-labelled-positions-as-rows",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "        rows = data.rows[mask]",
        "        rows = np.flatnonzero(mask)",
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "the labelled examples of a hold-out are read at their positions in it: the split's first rows, trained on",
    ),
    Mutation(
        "semi-supervised-mask-of-row-numbers",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "    mask = labelled_mask(_index_values(data), fraction, seed)",
        "    mask = labelled_mask(data.rows, fraction, seed)",
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "the labelled examples are chosen by row number, not by the dataset index that batch_share hashes",
    ),
    Mutation(
        "semi-supervised-validation-batch-of-the-eval-size",
        ("src/repscope/train/tasks/semi_supervised.py",),
        '        size = self._stream_size or len(batch["image"])',
        '        size = len(batch["image"])',
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "validation draws a labelled batch as large as its own (512) batch: a term on another scale than training's",
    ),
    Mutation(
        "semi-supervised-validation-stream-not-restarted",
        ("src/repscope/train/tasks/semi_supervised.py",),
        "            stream.position = 0",
        "            pass",
        (
            "tests/candle/test_semi_supervised_validation.py::"
            "test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start",
        ),
        "each validation epoch reads other labelled examples: val_supervised moves with no change in the model",
    ),
    Mutation(
        "pixel-attack-step-size",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "return initial, [lower, upper], PIXEL_STD / 4",
        "return initial, [lower, upper], PIXEL_STD / 2",
        ("tests/zeroshot/test_attacks.py::test_same_outcome_as_art_recorded",),
        "the pixel attack's CMA-ES starts with twice ART's step size: another search, other adversarial pixels",
    ),
    Mutation(
        "pixel-attack-box-one-short",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "upper = ([height, width] + [255] * channels) * threshold",
        "upper = ([height - 1, width - 1] + [255] * channels) * threshold",
        ("tests/zeroshot/test_attacks.py::test_same_outcome_as_art_recorded",),
        "the pixel attack's box stops one row and column short of ART's [0, H] x [0, W]",
    ),
    Mutation(
        "pixel-attack-start-one-pixel-on",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "row, col = divmod(count, width)",
        "row, col = divmod(count + 1, width)",
        ("tests/zeroshot/test_attacks.py::test_same_outcome_as_art_recorded",),
        "the pixel attack starts from pixels 1..th instead of ART's first th pixels in row-major order",
    ),
    Mutation(
        "pixel-attack-rows-by-width",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "rows, cols = genes[..., 0] % height, genes[..., 1] % width",
        "rows, cols = genes[..., 0] % width, genes[..., 1] % height",
        ("tests/zeroshot/test_attacks.py::test_same_outcome_as_art_recorded",),
        "a candidate's row wraps by the image's width and its column by its height (same on square images)",
    ),
    Mutation(
        "threshold-attack-step-size",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "return list(image.ravel()), [list(lower), list(upper)], threshold / 4",
        "return list(image.ravel()), [list(lower), list(upper)], threshold / 2",
        ("tests/zeroshot/test_attacks.py::test_same_outcome_as_art_recorded",),
        "the threshold attack's CMA-ES starts with twice ART's step th / 4",
    ),
    Mutation(
        "threshold-attack-upper-bound-one-short",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "upper = np.clip(values + threshold, 0, 255)",
        "upper = np.clip(values + threshold - 1, 0, 255)",
        ("tests/zeroshot/test_attacks.py::test_same_outcome_as_art_recorded",),
        "the threshold attack's box stops one short of x + th above: a change of +th is never tried",
    ),
    Mutation(
        "ml4ml-released-subsample-rounded",
        ("src/repscope/studies/invariance/testing.py",),
        "    size = int(count * fraction)\n",
        "    size = int(round(count * fraction))\n",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_released_codes_subsample_rows_are_pinned_by_count_fraction_and_seed",
        ),
        "the released code's sensitivity subsample of 0.9 x 15 examples holds round(13.5) = 14, not int(13.5) = 13",
    ),
    Mutation(
        "ml4ml-released-subsample-other-generator",
        ("src/repscope/studies/invariance/testing.py",),
        "np.random.RandomState(seed).choice(count, size, replace=False)",
        "np.random.default_rng(seed).choice(count, size, replace=False)",
        (
            "tests/invariance/test_feature_parameter_values.py::"
            "test_the_released_codes_subsample_rows_are_pinned_by_count_fraction_and_seed",
        ),
        "compat reference draws its sensitivity subsample from another generator than the released code's "
        "seeded legacy one",
    ),
    Mutation(
        "out-onto-input-links-not-followed",
        ("src/repscope/outputs.py",),
        "        status = os.stat(path)\n",
        "        status = os.lstat(path)\n",
        ("tests/test_out_onto_input.py::test_an_output_on_the_run_around_it_or_in_it_is_refused_and_a_sibling_is_not",),
        "an --out that is a link to the input (or runs through one) is not seen as the input: --overwrite replaces "
        "the run behind it",
    ),
    Mutation(
        "out-onto-input-unresolved-paths",
        ("src/repscope/outputs.py",),
        "    resolve = os.path.realpath\n",
        "    resolve = os.path.abspath\n",
        ("tests/test_out_onto_input.py::test_an_output_on_the_run_around_it_or_in_it_is_refused_and_a_sibling_is_not",),
        "paths compared as text: a '..' after a link (link/../run/new) lands in the run unnoticed",
    ),
    Mutation(
        "out-onto-input-holds-dropped",
        ("src/repscope/outputs.py",),
        '        return "holds"\n',
        "        return None\n",
        ("tests/test_out_onto_input.py::test_an_output_on_the_run_around_it_or_in_it_is_refused_and_a_sibling_is_not",),
        "only an --out inside an input is refused: --out on the folder holding the run, with --overwrite, deletes it",
    ),
    Mutation(
        "out-onto-input-string-prefix",
        ("src/repscope/outputs.py",),
        "            if _identity(parent) == source:\n",
        "            if str(place).startswith(os.path.realpath(given.path)):\n",
        ("tests/test_out_onto_input.py::test_an_output_on_the_run_around_it_or_in_it_is_refused_and_a_sibling_is_not",),
        "containment by string prefix: runs/run2 is refused as lying inside runs/run",
    ),
    Mutation(
        "out-onto-input-room-ignored",
        ("src/repscope/outputs.py",),
        'return None if below.name in given.room else "lies inside"',
        'return "lies inside"',
        ("tests/test_out_onto_input.py::test_the_command_s_own_room_inside_an_input_is_no_clash",),
        "mmvae evaluate's default output, RUN_DIR/evaluation, is refused as lying inside the run",
    ),
    Mutation(
        "out-onto-input-resume-refused",
        ("src/repscope/outputs.py",),
        "    if not resume:\n        refuse_output_onto_inputs(path, inputs, option)\n",
        "    if resume is not None:\n        refuse_output_onto_inputs(path, inputs, option)\n",
        (
            "tests/test_out_onto_input.py::test_prepare_output_refuses_before_the_exists_rule_and_resume_continues_its_own_run",
        ),
        "--resume of a run that holds its own config is refused as an output on its input",
    ),
    Mutation(
        "out-onto-input-path-keys-by-separator-only",
        ("src/repscope/outputs.py",),
        'if "/" in data or os.sep in data or name in _PATH_KEY_NAMES or name.endswith(_PATH_KEY_ENDINGS):',
        'if "/" in data or os.sep in data or name in _PATH_KEY_NAMES:',
        ("tests/test_out_onto_input.py::test_inputs_in_mapping_finds_the_paths_a_config_names",),
        "a config's data_dir given without a slash is not an input: --out inside it replaces the data",
    ),
    Mutation(
        "out-onto-input-config-undeclared",
        ("src/repscope/cli/studies.py",),
        "    inputs = config_inputs(entry, config, loaded, values)\n",
        "    inputs = []\n",
        ("tests/test_out_onto_input.py::test_out_on_the_command_s_input_is_refused_and_nothing_changes[train]",),
        "config-driven commands (train, studies, mmvae train/sweep, repo build) write over CONFIG and the folders "
        "their config names",
    ),
    Mutation(
        "out-onto-input-invariance-model-undeclared",
        ("src/repscope/cli/invariance.py",),
        '    found = [CommandInput(model, "--model", "the model")]\n',
        "    found = []\n",
        (
            "tests/test_out_onto_input.py::"
            "test_out_on_the_command_s_input_is_refused_and_nothing_changes[invariance test]",
        ),
        "invariance test --model RUN --out RUN --overwrite replaces the model's run with the test (issue 45)",
    ),
    Mutation(
        "out-onto-input-leaderboard-runs-undeclared",
        ("src/repscope/studies/multimodal/leaderboard.py",),
        'inputs = [CommandInput(path, "RUN_DIRS", "the runs") for path in paths]',
        "inputs = []",
        (
            "tests/test_out_onto_input.py::"
            "test_out_on_the_command_s_input_is_refused_and_nothing_changes[mmvae leaderboard]",
        ),
        "mmvae leaderboard --out on an evaluated run (or its sweep) replaces it with the leaderboard",
    ),
    Mutation(
        "exact-spearman-x-min-ranks",
        ("src/repscope/metrics/zeroshot.py",),
        "    centred_x = (2 * rankdata(a) - (n + 1)).astype(np.int16)",
        '    centred_x = (2 * rankdata(a, method="min") - (n + 1)).astype(np.int16)',
        (
            "tests/zeroshot/test_permutation_pvalues.py::test_negative_correlations_get_the_two_sided_share_of_every_pairing",
        ),
        "tied values of x take the lowest rank of their tie instead of the average: another statistic than rho",
    ),
    Mutation(
        "mopoe-sampled-draws-unavailable-subsets",
        ("src/repscope/models/multimodal/models.py",),
        "component = experts.choose_present(available, generator, check=True not in components_known)",
        "component = experts.choose_present(torch.ones_like(available), generator, check=True not in components_known)",
        (
            "tests/mmvae/test_toolkit_three_modalities.py::"
            "test_mopoe_sampled_estimator_draws_one_available_subset_per_example",
        ),
        "the sampled MoPoE estimator draws a subset holding a modality the example lacks",
    ),
    Mutation(
        "candle-rotation-in-degrees-for-blender",
        ("src/repscope/data/candle/scene.py",),
        '(0.0, 0.0, math.radians(float(point["rotation"])))',
        '(0.0, 0.0, float(point["rotation"]))',
        (
            "tests/candle/test_candle_pose.py::test_the_pose_is_blenders_rotation_in_radians_and_size_in_metres",
            "tests/candle/test_candle_pose.py::test_the_cubes_box_from_the_pose_is_the_one_blender_rendered",
        ),
        "the grid's degrees handed to Blender as radians: a cube at 45 turns to 58 degrees, its box moves",
    ),
    Mutation(
        "candle-light-side-mirrored",
        ("src/repscope/data/candle/scene.py",),
        "return (position[0] + offset[0], position[1] + offset[1], offset[2])",
        "return (position[0] - offset[0], position[1] + offset[1], offset[2])",
        ("tests/candle/test_candle_pose.py::test_the_light_stands_where_blender_put_it",),
        "the artificial light stands on the other side: the factor 'left' lights the object from the right",
    ),
    Mutation(
        "uc-reference-three-latents-not-sorted",
        ("src/repscope/metrics/disentanglement/irs.py",),
        "    if count <= 3:\n",
        "    if count < 3:\n",
        ("tests/candle/test_reference_modes.py::test_the_fork_selection_by_hand",),
        "three latents take numpy 1's max-swap path instead of its selection sort: rho 2 keeps the first "
        "latent, not the minimum",
    ),
    Mutation(
        "dataset-reserves-the-header-only",
        ("src/repscope/data/store.py",),
        "        reserve_space(images_file, images_out.offset + images_out.nbytes, name=out)\n",
        "        reserve_space(images_file, images_out.offset, name=out)\n",
        ("tests/test_disk_faults.py::test_a_full_disk_while_generating_is_one_line_and_leaves_nothing",),
        "the images' blocks are not taken before the memory map is written: a full disk ends in SIGBUS",
    ),
    Mutation(
        "dataset-free-space-counts-images-not-bytes",
        ("src/repscope/data/store.py",),
        '    check_free_space(out.parent, images_bytes, f"a dataset of',
        '    check_free_space(out.parent, count, f"a dataset of',
        ("tests/test_disk_faults.py::test_a_set_larger_than_the_disk_is_refused_before_any_sample",),
        "a set's size is checked as one byte an image: 12 PB of images pass on a disk of 2 TB",
    ),
    Mutation(
        "reserve-fallback-counts-a-sparse-file-as-written",
        ("src/repscope/fileio.py",),
        "    held = Path(path).stat().st_blocks * 512\n",
        "    held = Path(path).stat().st_size\n",
        ("tests/test_disk_faults.py::test_without_fallocate_the_free_space_decides_and_a_sparse_file_counts_as_empty",),
        "without posix_fallocate a sparse memory-mapped file looks fully allocated: nothing is checked",
    ),
    Mutation(
        "full-disk-removes-a-resumed-run",
        ("src/repscope/outputs.py",),
        "            if fresh and is_write_refusal(exc) and _occupied(path):\n",
        "            if is_write_refusal(exc) and _occupied(path):\n",
        ("tests/test_disk_faults.py::test_a_full_disk_in_a_new_output_removes_it_but_never_a_resumed_one",),
        "a full disk during --resume deletes the run being continued with all its trained epochs",
    ),
    Mutation(
        "checkpoint-error-names-the-temporary-copy",
        ("src/repscope/train/fitting.py",),
        "        raise output_error(path, OSError(exc.errno, exc.strerror)) from None\n",
        "        raise output_error(path, exc) from None\n",
        ("tests/test_disk_faults.py::test_a_checkpoint_save_on_a_full_disk_names_the_checkpoint",),
        "a full disk while saving a checkpoint names Lightning's temporary file in /tmp, not the checkpoint",
    ),
    Mutation(
        "seed-range-one-too-wide",
        ("src/repscope/validation.py",),
        "SEED_MAX = 2**32 - 1\n",
        "SEED_MAX = 2**32\n",
        ("tests/test_seed_range.py::test_anything_else_is_refused_naming_the_key",),
        "seed 2**32 is accepted, and Lightning's seed_everything silently trains with seed 0",
    ),
    Mutation(
        "seed-true-accepted-as-1",
        ("src/repscope/validation.py",),
        "Seed = Annotated[int, BeforeValidator(_not_bool), AfterValidator(_seed_field)]\n",
        "Seed = Annotated[int, AfterValidator(_seed_field)]\n",
        ("tests/test_seed_range.py::test_a_train_config_seed_out_of_range_is_refused_naming_the_key",),
        "--set seed=true trains with seed 1",
    ),
    Mutation(
        "texture-seed-option-unchecked",
        ("src/repscope/cli/sprites.py",),
        "    texture_seed: int = typer.Option(0, callback=check_seed_option, help=",
        "    texture_seed: int = typer.Option(0, help=",
        ("tests/test_seed_range.py::test_every_seed_option_is_refused_out_of_range_before_the_command_starts",),
        "sprites generate --texture-seed -1 is accepted by the CLI and fails later in numpy with a traceback",
    ),
    Mutation(
        "params-seed-rule-only-for-seed",
        ("src/repscope/config.py",),
        'if annotation is int and (parameter.name == "seed" or parameter.name.endswith("_seed")):',
        'if annotation is int and parameter.name == "seed":',
        ("tests/test_seed_range.py::test_a_params_mapping_seed_follows_the_same_rule",),
        "a data loader's texture_seed in data.params takes any integer",
    ),
    Mutation(
        "npz-member-size-read-compressed",
        ("src/repscope/data/npzfile.py",),
        "max(info.file_size - offset, 0)",
        "max(info.compress_size - offset, 0)",
        ("tests/test_array_headers.py::test_well_formed_files_read_as_before",),
        "a deflated npz member holds fewer bytes than its array: every savez_compressed file is 'truncated'",
    ),
    Mutation(
        "npz-budget-of-the-last-member-only",
        ("src/repscope/data/npzfile.py",),
        "                total += _check_npz_member(path, archive, info)\n",
        "                total = _check_npz_member(path, archive, info)\n",
        ("tests/test_array_headers.py::test_arrays_beyond_the_memory_budget_are_refused_one_by_one_and_together",),
        "an npz of many members each under the memory budget is read whole though together they exceed it",
    ),
    Mutation(
        "memory-map-held-to-the-memory-budget",
        ("src/repscope/data/npzfile.py",),
        "    check_array_file(path, in_memory=mmap_mode is None)\n",
        "    check_array_file(path)\n",
        ("tests/test_array_headers.py::test_arrays_beyond_the_memory_budget_are_refused_one_by_one_and_together",),
        "a memory-mapped array larger than the free memory is refused, though it is never read whole",
    ),
    Mutation(
        "dataset-images-header-unchecked",
        ("src/repscope/data/store.py",),
        "    check_npy_file(images_file, in_memory=False)",
        "    pass",
        ("tests/test_array_headers.py::test_a_dataset_whose_images_header_was_grown_is_refused_before_mapping",),
        "an images.npy whose header was grown is mapped by numpy: its message does not say truncated or corrupt",
    ),
    Mutation(
        "name-length-of-folders-only",
        ("src/repscope/fileio.py",),
        "    for part in full.relative_to(ancestor).parts:\n",
        "    for part in full.relative_to(ancestor).parts[:-1]:\n",
        ("tests/test_disk_faults.py::test_a_name_longer_than_the_file_system_allows_is_one_line",),
        "an --out whose own name is too long passes the early check and fails in the first stat, without --out",
    ),
    Mutation(
        "yaml-duplicate-key-seen-reset",
        ("src/repscope/config.py",),
        "            seen.add(key)\n",
        "            seen = {key}\n",
        ("tests/test_yaml_limits.py::test_a_key_given_twice_is_refused_naming_the_key_the_file_and_the_line",),
        "a key given twice with other keys between is kept silently: the last value trains",
    ),
    Mutation(
        "yaml-alias-limit-off-by-one",
        ("src/repscope/config.py",),
        "    if expanded[id(root)] - len(expanded) > MAX_ALIAS_VALUES:",
        "    if expanded[id(root)] - len(expanded) >= MAX_ALIAS_VALUES:",
        ("tests/test_yaml_limits.py::test_merges_and_aliases_within_the_limit_still_load",),
        "a document whose aliases add exactly the limit is refused",
    ),
    Mutation(
        "yaml-alias-count-one-level",
        ("src/repscope/config.py",),
        "            expanded[id(node)] = 1 + sum(expanded[id(child)] for child in _children(node))",
        "            expanded[id(node)] = 1 + len(_children(node))",
        (
            "tests/test_yaml_limits.py::test_merges_and_aliases_within_the_limit_still_load",
            "tests/test_yaml_limits.py::test_an_alias_bomb_in_a_config_value_is_refused_naming_the_file",
        ),
        "an alias counts its own items only, not what they expand to: a nested bomb passes the limit",
    ),
    Mutation(
        "set-value-read-by-safe-load",
        ("src/repscope/config.py",),
        '            value = load_yaml(raw, f"--set {shown(item)}", InvalidArgumentError) if raw.strip() else ""',
        '            value = yaml.safe_load(raw) if raw.strip() else ""',
        (
            "tests/test_yaml_limits.py::test_a_key_given_twice_in_a_set_value_is_refused",
            "tests/test_yaml_limits.py::test_an_alias_bomb_through_set_is_refused_naming_the_option",
        ),
        "--set values skip the checked loader: a key twice is kept, a bomb expands inside validation",
    ),
    Mutation(
        "config-pipe-read-twice",
        ("src/repscope/config.py",),
        "    regular = path.is_file()\n",
        "    regular = True\n",
        ("tests/test_yaml_limits.py::test_a_config_given_as_a_pipe_is_read_once",),
        "a config given as <(...) is read again by a second reader and found empty",
    ),
    Mutation(
        "config-fifo-no-such-file",
        ("src/repscope/config.py",),
        "    if given.exists() and not given.is_dir():  # a regular file, a named pipe, a shell's <(...)",
        "    if given.is_file():",
        ("tests/test_yaml_limits.py::test_a_config_given_as_a_named_pipe_is_read_by_the_command",),
        "a config given as a named pipe is reported as no such file",
    ),
    Mutation(
        "renamed-short-option-missing",
        ("src/repscope/cli/renamed_options.py",),
        '    "-j": "--workers",\n',
        "",
        ("tests/test_renamed_options.py::test_a_renamed_option_names_its_new_name_in_one_line",),
        "-j gets click's bare message without its new name",
    ),
    Mutation(
        "renamed-option-checked-by-old-name",
        ("src/repscope/cli/renamed_options.py",),
        '    if not any(new in getattr(param, "opts", ()) for param in context.command.params):',
        '    if not any(error.option_name in getattr(param, "opts", ()) for param in context.command.params):',
        ("tests/test_renamed_options.py::test_a_renamed_option_names_its_new_name_in_one_line",),
        "the command is searched for the old name, which it no longer has: no renamed option is ever named",
    ),
    Mutation(
        "factor-rows-per-class-two",
        ("src/repscope/validation.py",),
        "MIN_ROWS_PER_CLASS = 5\n",
        "MIN_ROWS_PER_CLASS = 2\n",
        ("tests/test_bad_values.py::test_two_rows_per_class_are_refused_before_noise_scores_as_disentangled",),
        "two rows per class pass and pure-noise codes score IRS 0.8",
    ),
    Mutation(
        "npz-factors-cast-unchecked",
        ("src/repscope/studies/candle/score_arrays.py",),
        "        factors = exact_factor_classes(factors, f\"{path}: 'factors'\")",
        "        factors = factors.astype(np.int64)",
        (
            "tests/test_bad_values.py::test_factor_classes_beyond_what_int64_holds_exactly_are_refused_naming_the_column",
        ),
        "1e30 and 2e30 overflow to one int64 and are reported as a single value",
    ),
    Mutation(
        "unsigned-factors-wrap",
        ("src/repscope/validation.py",),
        '        factor_array = exact_factor_classes(factor_array, "factors:")',
        "        factor_array = factor_array.astype(np.int64, copy=False)",
        ("tests/test_bad_values.py::test_an_unsigned_class_past_int64_is_refused_instead_of_wrapping_around",),
        "a uint64 class past 2**63 - 1 wraps around to a negative class",
    ),
    Mutation(
        "candle-scene-any-type",
        ("src/repscope/data/candle/dataset.py",),
        '        "scene": _name(record, "scene", path),',
        '        "scene": str(_field(record, "scene", path)).lower(),',
        ("tests/test_bad_values.py::test_a_candle_scene_that_is_a_long_list_is_refused_naming_the_file_and_the_key",),
        "a 200,000-item scene list becomes a scene class",
    ),
    Mutation(
        "sweep-resume-emptiness-flipped",
        ("src/repscope/studies/multimodal/run_commands.py",),
        "    if out.is_dir() and any(out.iterdir()) and not (out / SWEEP_FILE).is_file():",
        "    if out.is_dir() and not any(out.iterdir()) and not (out / SWEEP_FILE).is_file():",
        (
            "tests/test_bad_values.py::test_a_sweep_folder_or_an_empty_one_may_be_resumed",
            "tests/test_bad_values.py::test_a_sweep_resumed_into_a_folder_of_other_files_is_refused_and_the_folder_left_as_it_was",
        ),
        "a sweep resumed into the user's folder writes its points beside their files",
    ),
    Mutation(
        "caption-echoed-whole",
        ("src/repscope/studies/multimodal/coherency.py",),
        'f"{path}: line {k + 1} {shown(caption)} is not a level-{level} caption"',
        'f"{path}: line {k + 1} {caption!r} is not a level-{level} caption"',
        ("tests/test_bad_values.py::test_a_long_bad_caption_line_is_cut_in_the_error",),
        "a 10 MB caption line is repeated whole in the error",
    ),
    Mutation(
        "model-name-echoed-whole",
        ("src/repscope/train/registry.py",),
        "unknown model {shown(name)}; registered",
        "unknown model {name!r}; registered",
        ("tests/test_bad_values.py::test_a_long_model_name_is_cut_in_the_error",),
        "a megabyte model name is repeated in the error (the CLI's net cuts it without the name's quotes)",
    ),
    Mutation(
        "shown-never-cuts-strings",
        ("src/repscope/errors.py",),
        '        return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"',
        "        return repr(value)",
        ("tests/test_bad_values.py::test_shown_cuts_a_long_value_to_80_characters_with_its_length",),
        "every message that repeats a long string repeats it whole",
    ),
    Mutation(
        "one-line-net-cuts-nothing",
        ("src/repscope/errors.py",),
        '        word if len(word) <= LONGEST_WORD else f"{word[:ECHO_LIMIT]}… ({len(word)} characters)"'
        " for word in words",
        "        word for word in words",
        ("tests/test_bad_values.py::test_one_line_cuts_a_word_no_message_cut",),
        "a value no message cut reaches the terminal whole",
    ),
    Mutation(
        "interrupt-swallowed-exits-0",
        ("src/repscope/cli/__init__.py",),
        "            raise _interrupted_exit(finished=True) from None",
        "            raise",
        (
            "tests/test_interrupt_at_finish.py::test_an_interrupt_swallowed_while_the_command_finishes_still_gets_its_line_and_130",
        ),
        "a Ctrl-C swallowed by a clean-up callback ends with status 0 and no line",
    ),
    Mutation(
        "interrupt-at-exit-default-handler",
        ("src/repscope/cli/__init__.py",),
        "                signal.signal(signal.SIGINT, at_exit if argv is None else previous)",
        "                signal.signal(signal.SIGINT, previous)",
        ("tests/test_interrupt_at_finish.py::test_ctrl_c_after_the_command_ended_gets_its_line_and_130",),
        "a Ctrl-C while the interpreter exits ends in a traceback or a silent death by the signal",
    ),
    Mutation(
        "interrupt-in-teardown-not-ignored",
        ("src/repscope/cli/__init__.py",),
        "        signal.signal(signal.SIGINT, signal.SIG_IGN)\n    except ValueError:\n        pass\n\n\ndef _caused",
        "        signal.signal(signal.SIGINT, signal.default_int_handler)\n    except ValueError:\n"
        "        pass\n\n\ndef _caused",
        ("tests/test_interrupt_at_finish.py::test_ctrl_c_in_the_last_clean_up_is_ignored_instead_of_killing_silently",),
        "a Ctrl-C in the native clean-up kills the process by the signal without a word",
    ),
    Mutation(
        "resume-stored-setting-absent-now-unseen",
        ("src/repscope/resume_check.py",),
        "        for key in [*current, *(k for k in stored if k not in current)]:",
        "        for key in current:",
        ("tests/test_resume_refusals.py::test_a_stored_setting_absent_now_and_a_new_one_are_differences",),
        "a resume without a setting the run was trained with (its default then differs) is not refused",
    ),
    Mutation(
        "resume-new-setting-unseen",
        ("src/repscope/resume_check.py",),
        "    new_keys: bool = True,",
        "    new_keys: bool = False,",
        ("tests/test_resume_refusals.py::test_a_stored_setting_absent_now_and_a_new_one_are_differences",),
        "a resume that sets a parameter the run was trained without is not refused",
    ),
    Mutation(
        "resume-refusal-names-first-only",
        ("src/repscope/resume_check.py",),
        "with {describe(found)} (on resume only",
        "with {describe(found[:1])} (on resume only",
        ("tests/test_resume_refusals.py::test_a_changed_config_is_refused_naming_every_setting_with_both_values",),
        "a refused resume names only the first setting that differs",
    ),
    Mutation(
        "resume-trainer-placement-refused",
        ("src/repscope/train/fitting.py",),
        '    return key == "trainer.max_epochs" or where_the_work_runs(key)',
        '    return key == "trainer.max_epochs"',
        ("tests/test_resume_refusals.py::test_where_the_work_runs_may_change_and_the_run_goes_on",),
        "train --resume --logger none (or other devices, placement) is refused though the README lets it change",
    ),
    Mutation(
        "resume-checkpoint-schedulers-not-required",
        ("src/repscope/train/fitting.py",),
        'TRAINING_STATE_KEYS = ("epoch", "global_step", "loops", "optimizer_states", "lr_schedulers")',
        'TRAINING_STATE_KEYS = ("epoch", "global_step", "loops", "optimizer_states")',
        (
            "tests/test_resume_refusals.py::test_a_checkpoint_missing_part_of_its_state_is_refused_naming_it"
            "[lr_schedulers]",
        ),
        "a checkpoint without its schedulers' state resumes with a restarted schedule",
    ),
    Mutation(
        "resume-checkpoint-fit-loop-unchecked",
        ("src/repscope/train/fitting.py",),
        '        missing.append("loops.fit_loop")',
        "        pass",
        (
            "tests/test_resume_refusals.py::test_a_checkpoint_missing_part_of_its_state_is_refused_naming_it"
            "[loops.fit_loop]",
        ),
        "a checkpoint without the fit loop's state resumes from epoch 0",
    ),
    Mutation(
        "resume-checkpoint-random-states-unchecked",
        ("src/repscope/train/fitting.py",),
        "    absent = _absent_random_states(checkpoint)",
        "    absent = []",
        (
            "tests/test_resume_refusals.py::test_a_checkpoint_missing_part_of_its_state_is_refused_naming_it"
            "[callbacks.EpochCheckpoint.rng.torch]",
        ),
        "a checkpoint without the random states resumes as another run",
    ),
    Mutation(
        "resume-checkpoint-loader-state-not-required",
        ("src/repscope/train/fitting.py",),
        'RANDOM_STATE_KEYS = ("rng.torch", "rng.numpy", "rng.python", "loader_generators")',
        'RANDOM_STATE_KEYS = ("rng.torch", "rng.numpy", "rng.python")',
        (
            "tests/test_resume_refusals.py::test_a_checkpoint_missing_part_of_its_state_is_refused_naming_it"
            "[callbacks.EpochCheckpoint.loader_generators]",
        ),
        "a checkpoint without the shuffling generator's state resumes with another row order",
    ),
    Mutation(
        "resume-random-states-not-restored",
        ("src/repscope/train/fitting.py",),
        '            _set_random_states(restored["rng"])',
        "            pass",
        ("tests/test_resume_same_run.py::test_a_run_resumed_after_ctrl_c_ends_as_the_uninterrupted_run[beta-vae]",),
        "a resumed VAE draws other reparameterisation noise than the uninterrupted run",
    ),
    Mutation(
        "loader-iterator-started-eagerly",
        ("src/repscope/train/datamodule.py",),
        "        yield from super().__iter__()",
        "        return super().__iter__()",
        ("tests/test_resume_same_run.py::test_a_run_resumed_after_ctrl_c_ends_as_the_uninterrupted_run[beta-vae]",),
        "a run resumed on the loader path draws its first epoch's rows before the generator is restored",
    ),
    Mutation(
        "semi-supervised-stream-position-not-restored",
        ("src/repscope/train/tasks/semi_supervised.py",),
        '            stream.position = int(restored["position"]) % len(stream)',
        "            pass",
        (
            "tests/test_resume_same_run.py::test_a_run_resumed_after_ctrl_c_ends_as_the_uninterrupted_run"
            "[beta-vae-semi]",
        ),
        "a resumed semi-supervised run starts its labelled stream again",
    ),
    Mutation(
        "where-the-work-runs-at-any-depth",
        ("src/repscope/resume_check.py",),
        '    return parts[-1] in TRAINER_PLACEMENT_KEYS and len(parts) >= 2 and parts[-2] == "trainer"',
        "    return parts[-1] in TRAINER_PLACEMENT_KEYS",
        ("tests/test_resume_settings.py::test_where_the_work_runs_by_hand",),
        "a model parameter named like a trainer setting (devices, logger) may change on resume",
    ),
    Mutation(
        "sweep-resume-trainer-placement-refused",
        ("src/repscope/sweeps.py",),
        "        found = differences(recorded, current, where_the_work_runs, new_keys=False)",
        "        found = differences(recorded, current, new_keys=False)",
        (
            "tests/test_resume_settings.py::test_a_sweep_resumes_on_other_devices_and_refuses_other_settings_naming_each",
        ),
        "a sweep resumed with another logger or other devices is refused",
    ),
    Mutation(
        "mmvae-train-resume-unchecked",
        ("src/repscope/studies/multimodal/train.py",),
        "        check_same_run(Path(out), config)",
        "        pass",
        ("tests/test_resume_settings.py::test_mmvae_train_cli_refuses_a_changed_config_before_training",),
        "mmvae train --resume names a changed setting in the training config's keys, or not before loading data",
    ),
    Mutation(
        "mmvae-train-resume-evaluation-refused",
        ("src/repscope/studies/multimodal/train.py",),
        '    return top in ("epochs", "evaluation") or key == "trainer.max_epochs" or where_the_work_runs(key)',
        '    return top == "epochs" or key == "trainer.max_epochs" or where_the_work_runs(key)',
        ("tests/test_resume_settings.py::test_mmvae_train_resume_names_every_change_and_lets_the_trainer_move",),
        "mmvae train --resume with another evaluation (which runs after the training) is refused",
    ),
    Mutation(
        "morpho-resume-data-placement-refused",
        ("src/repscope/studies/morpho/resume.py",),
        "    return key in PLACEMENT_KEYS or where_the_work_runs(key)",
        "    return key in PLACEMENT_KEYS",
        ("tests/test_resume_settings.py::test_morpho_study_resume_lets_the_trainer_move_and_names_every_change",),
        "a morpho study resumed with another data placement is refused",
    ),
    Mutation(
        "zeroshot-resume-trainer-placement-refused",
        ("src/repscope/studies/zeroshot/study.py",),
        '    return key == "repscope_version" or where_the_work_runs(key)',
        '    return key == "repscope_version"',
        ("tests/test_resume_settings.py::test_zeroshot_resume_lets_the_trainer_move_and_names_every_change",),
        "zeroshot --resume with another logger or devices is refused",
    ),
    Mutation(
        "disentangle-resume-trainer-placement-refused",
        ("src/repscope/studies/candle/disentanglement.py",),
        '    return key == "repscope_version" or where_the_work_runs(key)',
        '    return key == "repscope_version"',
        ("tests/test_resume_settings.py::test_disentangle_study_resume_lets_the_trainer_move_and_names_every_change",),
        "disentangle study --resume with another logger or devices is refused",
    ),
    Mutation(
        "candle-box-y-not-flipped",
        ("src/repscope/data/candle/scene.py",),
        "return np.c_[(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height]",
        "return np.c_[(ndc[:, 0] + 1) / 2 * width, (1 + ndc[:, 1]) / 2 * height]",
        ("tests/candle/test_candle_pose.py::test_the_stages_projection_gives_the_boxes_blender_rendered",),
        "the object's box measured from the bottom of the image (Blender's y up): the record's box is mirrored",
    ),
    Mutation(
        "sweep-ray-missing-refused-after-writing",
        ("src/repscope/sweeps.py",),
        '    if backend == "ray" and importlib.util.find_spec("ray") is None:\n',
        "    if False:\n",
        ("tests/test_sweeps.py::test_the_ray_backend_without_ray_is_one_line_naming_the_extra",),
        "--backend ray without Ray writes the sweep's folder and records before it is refused",
    ),
    Mutation(
        "split-rows-unchecked",
        ("src/repscope/train/datamodule.py",),
        "        check_split_rows(dataset)\n",
        "",
        ("tests/test_disk_faults.py::test_a_generated_split_beyond_the_memory_is_refused_naming_its_rows",),
        "a generated split of 10**12 rows ends in numpy's MemoryError traceback instead of one line naming it",
    ),
    Mutation(
        "invariance-steps-memory-unchecked",
        ("src/repscope/data/invariance/transforms.py",),
        "    check_memory(8 * int(steps) ** 2,",
        "    check_memory(4 * int(steps) ** 2,",
        (
            "tests/test_disk_faults.py::"
            "test_invariance_steps_whose_variance_matrix_exceeds_the_memory_are_refused_before_listing_them",
        ),
        "the variance matrix counted at float32 (4 bytes) where it is float64: twice the steps fit the check",
    ),
    Mutation(
        "atomic-path-leaves-its-temporary",
        ("src/repscope/fileio.py",),
        "    except BaseException:\n        _remove_path(temporary)\n        raise\n",
        "    except BaseException:\n        raise\n",
        (
            "tests/test_one_way_to_write.py::"
            "test_atomic_path_keeps_the_old_file_and_leaves_nothing_when_the_writer_fails",
        ),
        "an interrupted writer leaves its .tmp- file beside the output, forever",
    ),
    Mutation(
        "atomic-path-folder-stays-private",
        ("src/repscope/fileio.py",),
        "            os.chmod(temporary, 0o777 & ~current_umask())\n",
        "            pass\n",
        ("tests/test_one_way_to_write.py::test_atomic_path_of_a_directory_replaces_the_old_folder_whole",),
        "a folder written through atomic_path keeps mkdtemp's 0700: other users cannot read a dataset",
    ),
    Mutation(
        "positive-int-lets-zero-through",
        ("src/repscope/validation.py",),
        "not isinstance(value, numbers.Integral) or value < 1:",
        "not isinstance(value, numbers.Integral) or value < 0:",
        ("tests/test_validation.py::test_a_count_given_to_a_function_is_refused_in_one_wording",),
        "a count of 0 passes the one rule: empty loops, divisions by zero further on",
    ),
    Mutation(
        "renamed-command-runs-silently",
        ("src/repscope/cli/renamed_options.py",),
        'raise RenamedOptionError(f"{ctx.command_path}: renamed',
        'return None and RenamedOptionError(f"{ctx.command_path}: renamed',
        ("tests/test_renamed_options.py::test_the_sprites_judges_command_answers_under_its_old_name_in_one_line",),
        "an old command name succeeds doing nothing: a script that trains judges thinks it did",
    ),
    Mutation(
        "coherency-truth-checked-after-the-images",
        ("src/repscope/studies/multimodal/coherency.py",),
        "    if truth is not None and level is not None:\n",
        "    if truth is not None and level is not None and False:\n",
        ("tests/test_bad_values.py::test_a_long_bad_caption_line_is_cut_in_the_error",),
        "a bad truth caption is reported as a missing images.npy of the same part",
    ),
    # ---- assess your own model (issue 47): models from outside, the role modules, the command, the facades
    Mutation(
        "contract-0-255-not-scaled",
        ("src/repscope/models/external/contract.py",),
        '        if self.input_range == "0-255":\n            return images * 255.0\n',
        '        if self.input_range == "0-255":\n            return images\n',
        (
            "tests/assess/test_external_models.py::test_prepare_maps_unit_images_to_the_models_range_by_hand",
            "tests/assess/test_external_models.py::test_every_source_kind_gives_the_same_codes",
        ),
        "a model trained on 0-255 pixels is fed [0, 1] images: every code and logit of such a model is wrong",
    ),
    Mutation(
        "contract-standardise-times-std",
        ("src/repscope/models/external/contract.py",),
        "        return (images - mean) / std\n",
        "        return (images - mean) * std\n",
        ("tests/assess/test_external_models.py::test_prepare_maps_unit_images_to_the_models_range_by_hand",),
        "standardised inputs multiplied by std instead of divided: torchvision-normalised models see shrunk pixels",
    ),
    Mutation(
        "pickle-zip-read-as-torchscript",
        ("src/repscope/models/external/torch_files.py",),
        'if any(name.startswith("code/") for name in inner) and "constants.pkl" in inner:',
        'if any(name.startswith("code/") for name in inner) or "data.pkl" in inner:',
        (
            "tests/assess/test_external_models.py::test_a_pickle_is_refused_without_running_its_payload",
            "tests/assess/test_assess_command.py::test_a_pickled_model_is_refused_without_being_unpickled",
            "tests/assess/test_outside_models_in_commands.py::"
            "test_a_pickled_model_is_refused_unopened_naming_the_state_dict_routes",
        ),
        "a torch.save pickle is taken for TorchScript (both hold data.pkl): no refusal naming the safe routes",
    ),
    Mutation(
        "weights-prefix-never-stripped",
        ("src/repscope/models/external/loading.py",),
        "    return candidate if set(candidate) == expected else state\n",
        "    return state\n",
        ("tests/assess/test_external_models.py::test_every_source_kind_gives_the_same_codes",),
        "a Lightning checkpoint (keys under model.) never fits the module: --weights of a .ckpt refused",
    ),
    Mutation(
        "weights-missing-keys-unchecked",
        ("src/repscope/models/external/loading.py",),
        "    if missing or unexpected:\n",
        "    if unexpected:\n",
        ("tests/assess/test_external_models.py::test_weights_that_do_not_fit_name_weights_and_the_first_key",),
        "weights missing a key are refused by torch's multi-line message, not one line naming the first key",
    ),
    Mutation(
        "probe-nan-check-any",
        ("src/repscope/models/external/tensors.py",),
        "    if not torch.isfinite(outputs).all():\n",
        "    if not torch.isfinite(outputs).any():\n",
        ("tests/assess/test_external_models.py::test_each_misfit_is_one_error_line_naming_the_option",),
        "outputs with some NaN pass the probe: the metrics fail half-way or come out NaN",
    ),
    Mutation(
        "probe-logits-count-flipped",
        ("src/repscope/models/external/probing.py",),
        "if num_classes is not None and logits.shape[1] != int(num_classes):",
        "if num_classes is not None and logits.shape[1] > int(num_classes):",
        ("tests/assess/test_external_models.py::test_each_misfit_is_one_error_line_naming_the_option",),
        "a classifier with fewer outputs than the data's classes passes the probe",
    ),
    Mutation(
        "probabilities-detected-by-any-non-negative",
        ("src/repscope/models/external/tensors.py",),
        "return bool((outputs >= 0).all() and torch.allclose(",
        "return bool((outputs >= 0).any() and torch.allclose(",
        ("tests/assess/test_external_models.py::test_classifier_probabilities_and_decoder_logits_are_recognised",),
        "logits that happen to sum to 1 are taken for probabilities and used without the softmax",
    ),
    Mutation(
        "encoder-takes-the-log-variance",
        ("src/repscope/models/external/tensors.py",),
        "        output = output[0]\n    elif isinstance(output, Mapping):\n        key = next(",
        "        output = output[-1]\n    elif isinstance(output, Mapping):\n        key = next(",
        ("tests/assess/test_external_models.py::test_every_source_kind_gives_the_same_codes",),
        "an encoder returning (mean, log_var) is scored on its log-variances",
    ),
    Mutation(
        "decoder-logits-not-squashed",
        ("src/repscope/models/external/adapters.py",),
        "return torch.sigmoid(images) if self.logits else images.clamp(0, 1)",
        "return images.clamp(0, 1)",
        ("tests/assess/test_external_models.py::test_classifier_probabilities_and_decoder_logits_are_recognised",),
        "a decoder's logits are clipped to [0, 1] instead of passed through the sigmoid: binary-looking images",
    ),
    Mutation(
        "classifier-softmax-twice",
        ("src/repscope/models/external/adapters.py",),
        "if self.probabilities else torch.softmax(outputs, 1)",
        "if self.probabilities else torch.softmax(torch.softmax(outputs, 1), 1)",
        ("tests/assess/test_external_models.py::test_classifier_probabilities_and_decoder_logits_are_recognised",),
        "soft-labels flattened by a second softmax: the zero-shot metrics and attacks see near-uniform rows",
    ),
    Mutation(
        "classifier-probabilities-softmaxed",
        ("src/repscope/models/external/adapters.py",),
        "probabilities = outputs / outputs.sum(1, keepdim=True) if self.probabilities else torch.softmax(outputs, 1)",
        "probabilities = torch.softmax(outputs, 1)",
        ("tests/assess/test_external_models.py::test_classifier_probabilities_and_decoder_logits_are_recognised",),
        "a model that returns probabilities has them softmaxed again instead of used as they are",
    ),
    Mutation(
        "prepared-network-probabilities-as-logits",
        ("src/repscope/models/external/adapters.py",),
        "return torch.log(outputs.clamp_min(torch.finfo(outputs.dtype).tiny)) if self.probabilities else outputs",
        "return outputs",
        ("tests/assess/test_external_models.py::test_classifier_probabilities_and_decoder_logits_are_recognised",),
        "the invariance test's network passes probabilities on as logits: its max@CONF is a softmax of softmax",
    ),
    Mutation(
        "generator-codes-unseeded",
        ("src/repscope/models/external/roles.py",),
        "generator = torch.Generator().manual_seed(check_seed(seed))",
        "generator = torch.Generator()",
        ("tests/assess/test_external_models.py::test_a_generator_samples_the_same_bytes_for_the_same_seed",),
        "every seed draws the same codes: a generator's samples do not change with --seed",
    ),
    Mutation(
        "classifier-robust-interval-of-the-accuracy",
        ("src/repscope/studies/assess/classifier.py",),
        'identity=identity).get("robust_accuracy", {})',
        'identity=identity).get("accuracy", {})',
        ("tests/assess/test_classifier_role.py::test_one_pixel_classifier_is_not",),
        "the robust accuracy's headline interval is the plain accuracy's: it need not hold the value",
    ),
    Mutation(
        "attack-draw-of-the-wrong-images",
        ("src/repscope/studies/assess/classifier.py",),
        "correct = np.flatnonzero(np.asarray(classifier.predict(data.images)) == data.labels)",
        "correct = np.flatnonzero(np.asarray(classifier.predict(data.images)) != data.labels)",
        (
            "tests/assess/test_classifier_role.py::test_one_pixel_decision_falls_to_l0_threshold_1",
            "tests/assess/test_classifier_role.py::test_attacks_skip_a_classifier_that_gets_nothing_right",
        ),
        "the attacks draw the images the classifier gets wrong: every attack a free success",
    ),
    Mutation(
        "table1-total-over-400-attacks",
        ("src/repscope/studies/assess/classifier.py",),
        'PAPER_TABLES[PAPER_ARCHITECTURE][norm], 800 if norm == "total" else 400',
        "PAPER_TABLES[PAPER_ARCHITECTURE][norm], 400",
        ("tests/assess/test_classifier_role.py::test_table1_rows_sit_beside_the_paper",),
        "the paper's total success rate counted over one norm's 400 attacks: above 1",
    ),
    Mutation(
        "label-data-draw-unsorted",
        ("src/repscope/studies/assess/label_data.py",),
        "rows = np.sort(np.random.default_rng(seed).choice(len(data), size=count, replace=False))",
        "rows = np.random.default_rng(seed).choice(len(data), size=count, replace=False)",
        ("tests/assess/test_classifier_role.py::test_npz_round_trip_channels_last",),
        "the drawn images come in random order, not the source's: rows and arrays do not line up with --data",
    ),
    Mutation(
        "label-data-channels-last-height-width-swapped",
        ("src/repscope/studies/assess/label_data.py",),
        "pixels = np.transpose(pixels, (0, 3, 1, 2))",
        "pixels = np.transpose(pixels, (0, 3, 2, 1))",
        ("tests/assess/test_classifier_role.py::test_npz_round_trip_channels_last",),
        "channels-last images are transposed (x and y swapped) on their way to channels-first",
    ),
    Mutation(
        "attack-progress-truthy",
        ("src/repscope/studies/zeroshot/attacks/pixel_threshold.py",),
        "    elif progress is True:\n",
        "    elif progress:\n",
        ("tests/assess/test_classifier_role.py::test_attack_accepts_progress_false",),
        "any truthy progress (a string) shows a bar instead of being refused",
    ),
    Mutation(
        "generator-correlation-chance-not-shuffled",
        ("src/repscope/studies/assess/generator.py",),
        "shuffled = code_partial_correlations({name: values[order] for name, values in named.items()}, factors)",
        "shuffled = code_partial_correlations({name: values for name, values in named.items()}, factors)",
        (
            "tests/assess/test_generator_role.py::"
            "test_the_code_that_thickens_correlates_with_thickness_and_the_idle_code_does_not",
        ),
        "the correlations' chance level is the correlation itself: codes never shuffled across rows",
    ),
    Mutation(
        "generator-code-dimension-off-by-one",
        ("src/repscope/studies/assess/generator.py",),
        "any(c < 0 or c >= latent_dim for c in chosen)",
        "any(c < 0 or c > latent_dim for c in chosen)",
        ("tests/assess/test_generator_role.py::test_codes_need_a_latent_size_and_dimensions_inside_it",),
        "--codes naming the dimension past the last passes the check and fails later with an IndexError",
    ),
    Mutation(
        "generator-mmd-interval-starts-at-the-value",
        ("src/repscope/studies/assess/generator.py",),
        'ci_low=found["mmd2"] - spread,',
        'ci_low=found["mmd2"],',
        (
            "tests/assess/test_generator_role.py::"
            "test_a_collapsed_generator_is_rejected_where_one_drawing_test_digits_is_not",
        ),
        "the MMD^2 interval is one-sided: its low end is the value itself",
    ),
    Mutation(
        "multimodal-chance-truth-not-permuted",
        ("src/repscope/studies/assess/multimodal.py",),
        "out[name] = dataclasses.replace(part, truth=[part.truth[i] for i in order])",
        "out[name] = dataclasses.replace(part, truth=list(part.truth))",
        ("tests/assess/test_multimodal_role.py::test_an_oracle_is_strictly_coherent_and_a_random_model_scores_chance",),
        "the cross-coherency chance level scores the outputs against their own truth: chance equals the value",
    ),
    Mutation(
        "multimodal-images-given-transposed",
        ("src/repscope/studies/assess/multimodal.py",),
        'given = np.ascontiguousarray(np.transpose(test["image"], (0, 2, 3, 1)))',
        'given = np.ascontiguousarray(np.transpose(test["image"], (0, 3, 2, 1)))',
        (
            "tests/assess/test_multimodal_role.py::"
            "test_letters_of_exact_captions_are_100_and_the_paper_value_is_the_named_models",
        ),
        "image_to_text gets the test images with x and y swapped: left and right read as top and bottom",
    ),
    Mutation(
        "multimodal-rules-swapped",
        ("src/repscope/studies/assess/multimodal.py",),
        'else "ours" if "repscope" in given else "toolkit"',
        'else "toolkit" if "repscope" in given else "ours"',
        ("tests/assess/test_multimodal_role.py::test_a_model_from_per_modality_encoders_and_decoders",),
        "rules=repscope scores by the toolkit's rules and rules=toolkit by ours",
    ),
    Mutation(
        "zeroshot-chance-not-shuffled",
        ("src/repscope/studies/assess/zeroshot.py",),
        "parts = np.split(pooled[order], np.cumsum([len(e) for e in soft.loo])[:-1])",
        "parts = np.split(pooled, np.cumsum([len(e) for e in soft.loo])[:-1])",
        ("tests/assess/test_zeroshot_role.py::test_a_folder_of_models_gives_the_metrics_of_their_soft_labels",),
        "the zero-shot chance level is the model's own score: soft-labels never dealt among the classes",
    ),
    Mutation(
        "zeroshot-folder-last-class-unchecked",
        ("src/repscope/studies/assess/zeroshot.py",),
        "missing = sorted(set(range(n)) - set(loo_paths))",
        "missing = sorted(set(range(n - 1)) - set(loo_paths))",
        ("tests/assess/test_zeroshot_role.py::test_a_folder_without_a_model_of_each_class_is_refused_by_name",),
        "a folder without the model of the last class fails with a KeyError instead of naming without-<k>",
    ),
    Mutation(
        "import-path-network-params-dropped",
        ("src/repscope/models/networks.py",),
        "    kwargs = {count: int(num_outputs), **params}\n",
        "    kwargs = {count: int(num_outputs)}\n",
        ("tests/assess/test_zeroshot_role.py::test_an_import_path_network_is_built_with_the_class_count",),
        "network_params are checked but never passed: the user's network is built with its defaults",
    ),
    Mutation(
        "import-path-network-image-shape-not-passed",
        ("src/repscope/models/networks.py",),
        '    if "image_shape" in accepted:\n',
        '    if "image_shape" in params:\n',
        ("tests/assess/test_zeroshot_role.py::test_an_import_path_network_is_built_with_the_class_count",),
        "a factory that takes image_shape is called without it",
    ),
    Mutation(
        "assess-arrays-not-written",
        ("src/repscope/studies/assess/writing.py",),
        "    if assessment.arrays:\n",
        "    if not assessment.arrays:\n",
        ("tests/assess/test_assess_command.py::test_encoder_from_a_factory_file_writes_a_run_directory",),
        "the run directory has no arrays.npz: codes, soft-labels and matrices are lost",
    ),
    Mutation(
        "assess-data-shape-unchecked-for-outside-models",
        ("src/repscope/models/external/loading.py",),
        "    if tuple(stated) != image_shape:\n",
        "    if tuple(stated) != image_shape and False:\n",
        (
            "tests/assess/test_assess_command.py::test_an_input_size_mismatch_names_the_option",
            "tests/assess/test_outside_models_in_commands.py::"
            "test_the_data_fills_an_open_input_shape_and_another_size_is_refused",
        ),
        "data of another size than the model's contract is not refused naming --input-size",
    ),
    Mutation(
        "metrics-all-without-the-registry",
        ("src/repscope/metrics/__init__.py",),
        "__all__ = sorted({*_EXPORTS, *METRICS})",
        "__all__ = sorted(_EXPORTS)",
        ("tests/test_public_api.py::test_every_registered_metric_is_public",),
        "repscope.metrics.__all__ lists no registered metric: from repscope.metrics import * gives no mig",
    ),
    Mutation(
        "metrics-submodule-binding-taken",
        ("src/repscope/metrics/__init__.py",),
        'and value.__name__ == f"{self.__name__}.{name}":',
        "and value.__name__ == name:",
        ("tests/test_public_api.py::test_metric_names_beat_submodule_names",),
        "once repscope.metrics.disentanglement.irs is imported, the name irs gives the module, not the metric",
    ),
    Mutation(
        "invariance-facade-contract-ignored",
        ("src/repscope/invariance.py",),
        "    if isinstance(model, nn.Module) and contract is None:\n",
        "    if isinstance(model, nn.Module):\n",
        ("tests/test_public_api.py::test_invariance_test_through_the_loader_applies_the_contract",),
        "repscope.invariance.test ignores contract= for a torch module: a 0-255 model sees [0, 1] images",
    ),
    Mutation(
        "zeroshot-facade-stacked-last-class-dropped",
        ("src/repscope/zeroshot.py",),
        "    return [array[classes == k] for k in range(count)]\n",
        "    return [array[classes == k] for k in range(count - 1)]\n",
        ("tests/test_public_api.py::test_soft_label_metrics_by_hand_and_stacked",),
        "stacked soft-labels lose their last class: DBI and AM averaged over n - 1 classes",
    ),
    Mutation(
        "weights-loaded-with-pickles",
        ("src/repscope/models/external/loading.py",),
        'stored = torch.load(str(path), map_location="cpu", weights_only=True)',
        'stored = torch.load(str(path), map_location="cpu", weights_only=False)',
        (
            "tests/assess/test_external_models.py::"
            "test_weights_that_hold_a_pickled_object_are_refused_without_running_it",
        ),
        "a --weights file is unpickled in full: a payload inside it runs as it loads",
    ),
    Mutation(
        "colour-images-height-width-swapped",
        ("src/repscope/models/external/tensors.py",),
        "chunk.permute(0, 3, 1, 2)).to(device)",
        "chunk.permute(0, 3, 2, 1)).to(device)",
        ("tests/assess/test_external_models.py::test_colour_images_reach_the_model_channels_first_as_stored",),
        "channels-last colour images reach the model with rows and columns swapped (every layout alike)",
    ),
    Mutation(
        "torch-save-zip-taken-for-torchscript",
        ("src/repscope/models/external/torch_files.py",),
        'if any(name.startswith("code/") for name in inner) and "constants.pkl" in inner:',
        'if any(name.startswith("code/") for name in inner) or "data.pkl" in inner:',
        ("tests/assess/test_external_models.py::test_a_pickle_is_refused_without_running_its_payload",),
        "a torch.save zip is handed to torch.jit.load: the user reads a loader's failure, not the pickle refusal",
    ),
    Mutation(
        "encoder-chance-of-unshuffled-codes",
        ("src/repscope/studies/assess/encoder.py",),
        "    shuffled = codes[np.random.default_rng(seed).permutation(len(codes))]\n",
        "    shuffled = codes\n",
        (
            "tests/assess/test_encoder_role.py::test_codes_that_are_the_factors_score_near_one_and_their_chance_near_zero",
        ),
        "the chance level is the model's own score: a perfect code looks no better than chance",
    ),
    Mutation(
        "factor-data-size-one-short",
        ("src/repscope/studies/assess/factor_data.py",),
        "int(classes[:, k].max()) + 1 for k, s",
        "int(classes[:, k].max()) for k, s",
        ("tests/assess/test_encoder_role.py",),
        "a factor's count of values misses its largest class (an npz without sizes)",
    ),
]


def copy_tree(destination: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
    shutil.copytree(ROOT / "src", destination / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", destination / "tests", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", destination / "benchmarks", ignore=ignore)  # scripts some tests load
    shutil.copy2(ROOT / "pyproject.toml", destination / "pyproject.toml")


def apply(mutation: Mutation, copy: Path) -> str | None:
    """Mutate the copy; None when done, else why not (the snippet is not there exactly once)."""
    found = [(name, (copy / name).read_text()) for name in mutation.files if (copy / name).is_file()]
    counts = {name: text.count(mutation.original) for name, text in found}
    total = sum(counts.values())
    if total != 1:
        where = ", ".join(f"{name}: {count}" for name, count in counts.items()) or "none of the files exists"
        return f"original snippet found {total} times ({where})"
    name, text = next((n, t) for n, t in found if counts[n] == 1)
    (copy / name).write_text(text.replace(mutation.original, mutation.mutated))
    return None


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(copy / "src"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    # -m "": the named tests run even where they are marked slow (make test leaves those out)
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-m", "", "-p", "no:cacheprovider", "-p", "no:xdist", *tests]
    try:
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timed out"
    return done.returncode, (done.stdout + done.stderr).strip()


def last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def check(mutation: Mutation, baseline: bool, timeout: float, verbose: bool) -> str:
    with tempfile.TemporaryDirectory(prefix=f"mutation-{mutation.name}-") as temp:
        copy = Path(temp)
        copy_tree(copy)
        if baseline:
            code, output = run_tests(copy, mutation.tests, timeout)
            if code != 0:
                return f"BASELINE-FAILS  ({last_line(output)})"
        problem = apply(mutation, copy)
        if problem:
            return f"snippet-not-found  ({problem})"
        code, output = run_tests(copy, mutation.tests, timeout)
        if verbose:
            print(output)
        if code == 1:
            return f"caught  ({last_line(output)})"
        if code == 0:
            return "MISSED  (the tests pass with the bug in)"
        # 2-5: interrupted, internal error, usage error, no tests collected; -1: timeout
        return f"ERROR  (pytest exit {code}: {last_line(output)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="mutations to check (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--baseline", action="store_true", help="first check that the tests pass unmutated")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run")
    parser.add_argument("--verbose", action="store_true", help="print pytest's output")
    args = parser.parse_args()
    known = {m.name: m for m in MUTATIONS}
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name}: {m.why}\n    {m.files[0]}\n    {' '.join(m.tests)}")
        return 0
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.error(f"unknown mutation(s) {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [known[name] for name in args.names] if args.names else MUTATIONS
    width = max(len(m.name) for m in chosen)
    failures = 0
    for mutation in chosen:
        started = time.perf_counter()
        verdict = check(mutation, args.baseline, args.timeout, args.verbose)
        print(f"{mutation.name:<{width}}  {verdict}  [{time.perf_counter() - started:.0f} s]", flush=True)
        failures += not verdict.startswith("caught")
    print(f"{len(chosen) - failures} of {len(chosen)} mutations caught")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
