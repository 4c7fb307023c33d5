"""The `kbqa pipeline` runner: a YAML chain of `kbqa` commands, each in its own process, resumable."""
