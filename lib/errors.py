"""The project's own errors: each names the file, row and field (or the setting) that is wrong."""
from __future__ import annotations


class DataError(ValueError):
    """Bad input data; the message names the file, row and field."""


class ProfileError(ValueError):
    """A profile file, a setting or a parameter override is missing or malformed."""


class ModelUnavailable(RuntimeError):
    """A profile's model cannot be loaded (no network, no package); never silently replaced."""


class EngineError(RuntimeError):
    """A search engine (``retriever: milvus``) cannot be reached, does not answer in time, or holds a
    collection that does not fit the study; the message names the setting."""
