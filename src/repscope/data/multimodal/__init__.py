"""Sprite datasets: dSprites (procedural, the full factor grid); CdSprites+ comes next."""
