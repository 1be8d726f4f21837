"""agentic-rag-evidence: does an agent that can search again find better evidence than plain search?"""
