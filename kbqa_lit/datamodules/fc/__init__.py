"""FC-KBQA's LightningDataModules: training groups of the relation and class extractors."""
