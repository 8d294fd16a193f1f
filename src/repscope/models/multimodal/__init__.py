"""Multimodal VAEs: how experts are combined (:mod:`.experts`) and the objectives (:mod:`.objectives`)."""
