"""Searching the collection: the embedder and exact dense index, rank fusion, the cross-encoder
and its offline training."""
