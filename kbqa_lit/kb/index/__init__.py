"""Indexes over a knowledge base: entity names, the relation inventory, connectivity checks, KB paths."""
