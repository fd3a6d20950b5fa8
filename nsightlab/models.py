"""The base of nsightlab's pydantic models.

A command imports the result models of many commands (through the renderers and the run
store) and uses a few. `defer_build` leaves a model's validator and serializer unbuilt
until its first use: the others cost only their class statement.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """A pydantic model whose validator is built when it is first used."""

    model_config = ConfigDict(defer_build=True)
