"""Physics of a skeleton's motion (Tak & Ko 2005): its mass model and dynamics."""

from .body import DE_LEVA_MALE, Body, body_model

__all__ = ["DE_LEVA_MALE", "Body", "body_model"]
