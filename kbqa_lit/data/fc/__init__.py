"""FC-KBQA's input texts: extractor items, question and logical skeletons, composer inputs."""
