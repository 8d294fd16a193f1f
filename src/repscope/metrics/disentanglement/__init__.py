"""Disentanglement metrics on ground-truth factors and learned codes."""
