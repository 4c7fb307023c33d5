"""CoQ's LightningModules: the joint relation/entity classifier and the multitask generator."""
