"""LightningDataModules, one per task family, with their samplers, collators and caches."""
