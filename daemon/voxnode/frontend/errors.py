"""Errors raised by the audio front-end (bad settings, bad frames)."""

from voxnode.errors import VoxnodeError


class FrontendError(VoxnodeError):
    """A front-end setting or input frame is invalid."""
