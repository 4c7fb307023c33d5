"""FC-KBQA's LightningModules: the relation and class extractors (cross-encoders)."""
