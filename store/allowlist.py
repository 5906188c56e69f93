"""The hosts a person trusts, kept as audited data in engram.db: a poisoning finding whose addresses are all on
the list (a company's own package mirror, an installer host engram does not know) is lowered to review, never
hidden. Hosts are matched with their subdomains (``example.com`` covers ``pkgs.example.com``)."""

from __future__ import annotations

import re

from engram.store.errors import BadInput, Conflict
from engram.store.models import AllowedHost
from engram.store.service import Store
from engram.store.write.change import Change

HOST = re.compile(r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


def allowed_hosts(store: Store) -> frozenset[str]:
    if not store.index.has(AllowedHost):
        return frozenset()
    return frozenset(h.host for h in AllowedHost.select())


def allow(store: Store, host: str, note: str | None = None) -> str:
    """Add ``host`` to the list (one ``allowlist_added`` event)."""
    host = _host(host)
    if host in allowed_hosts(store):
        raise Conflict(f"{host} is already allowed")
    now = store.now().isoformat()
    store.apply(
        Change(
            "allowlist_added",
            host,
            None,
            {},
            index_update=lambda: AllowedHost.insert(host=host, added_at=now, note=note).execute(),
        )
    )
    return host


def disallow(store: Store, host: str) -> str:
    """Take ``host`` off the list (one ``allowlist_removed`` event)."""
    host = _host(host)
    if host not in allowed_hosts(store):
        raise Conflict(f"{host} is not on the allowlist")
    store.apply(
        Change(
            "allowlist_removed",
            host,
            None,
            {},
            index_update=lambda: AllowedHost.delete().where(AllowedHost.host == host).execute(),
        )
    )
    return host


def _host(text: str) -> str:
    host = text.strip().lower().removeprefix("https://").removeprefix("http://").split("/")[0]
    if not HOST.match(host):
        raise BadInput(f"{text!r} is not a host name (example.com, pkgs.example.com)")
    return host
