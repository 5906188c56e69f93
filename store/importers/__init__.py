"""Importers from the other memory systems: one module per system behind :class:`base.Importer`, all run by
:mod:`engram.store.importers.run` (preview, then the import through the write path)."""

from __future__ import annotations

from engram.store.errors import BadInput
from engram.store.importers.base import Importer
from engram.store.importers.codex import CodexImporter
from engram.store.importers.cognirelay import CogniRelayImporter
from engram.store.importers.eternego import EternegoImporter
from engram.store.importers.openrelix import OpenRelixImporter

IMPORTERS: dict[str, Importer] = {
    i.name: i for i in (OpenRelixImporter(), CogniRelayImporter(), CodexImporter(), EternegoImporter())
}


def importer(name: str) -> Importer:
    try:
        return IMPORTERS[name]
    except KeyError:
        raise BadInput(f"no importer {name!r}: choose one of {', '.join(IMPORTERS)}") from None
