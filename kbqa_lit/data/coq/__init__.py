"""CoQ's input texts: the generator's inputs and targets, the classifier's item texts."""
