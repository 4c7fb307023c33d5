"""The ground floor: S-expressions, SPARQL conversion, IRIs and knowledge-base stores."""
