"""Inference across trained parts, where models meet the knowledge base."""
