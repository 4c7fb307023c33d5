"""LightningModules: shared ones here (cross-encoder retriever, training set-up), each system's in its folder."""
