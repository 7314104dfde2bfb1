"""Errors raised by the audio front-end (bad settings, bad frames)."""


class FrontendError(ValueError):
    """A front-end setting or input frame is invalid."""
