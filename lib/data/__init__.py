"""The data's first steps: papers (snapshot, arXiv API), the drawn collection, the questions
(read, checked, and written by an LLM on the live path) and which documents answer them (relevance)."""
