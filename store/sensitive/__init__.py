"""Sensitive scopes: memoryd's encryption, proving a key before use, marking and unmarking, rekeying, the binding
manifest, and agents' read grants."""
