"""FC-KBQA's inference parts: entity linking with relation-aware pruning, KB-connected pairs."""
