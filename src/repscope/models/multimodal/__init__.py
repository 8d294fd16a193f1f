"""Multimodal VAEs: how experts are combined (:mod:`.experts`), the objectives (:mod:`.objectives`), the
per-modality likelihoods and priors (:mod:`.likelihoods`)."""
