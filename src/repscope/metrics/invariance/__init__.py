"""Invariance testing (ML4ML): variance matrices and their features."""
