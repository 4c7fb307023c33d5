"""CoQ's DataModules: the generator's (logical form + answer) and the classifier's."""
