"""LightningDataModules: each system's in its folder; shared collate, samplers, resumable loader, caches here."""
