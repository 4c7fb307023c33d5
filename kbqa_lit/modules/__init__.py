"""LightningModules (one per model family) and the backbone factory (:mod:`.backbones`)."""
