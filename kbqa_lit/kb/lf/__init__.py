"""The logical-form language: S-expressions, SPARQL, normalisation, answer semantics, literals, IRIs, ontology."""
