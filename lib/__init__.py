"""agentic-rag-evidence: does an agent that can search again find better evidence than plain search?"""

import warnings as _warnings

# notebooks render to static HTML: text progress bars are what we want, not widgets
_warnings.filterwarnings("ignore", message="IProgress not found")
