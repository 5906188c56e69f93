"""memoryd's .md.enc format: known answers, the fixture decrypts, damage and wrong keys are clean errors."""

from __future__ import annotations

import base64

import pytest

from engram.store.errors import DecryptionFailed, KeyUnavailable
from engram.store.models import Memory
from engram.store.paths import scope_hash_for
from engram.store.sensitive.crypto import KeyRing, decrypt, derive_passphrase_key, encrypt

SCOPE = "35998c22af79"


def test_known_answer_vector():
    """Fixed key and nonce give fixed bytes: base64(nonce || AES-256-GCM(plaintext, AAD=scope) || tag)."""
    key = bytes(range(32))
    data = encrypt(b"---\ntitle: x\n", key, SCOPE, nonce=bytes(12))
    assert data == b"AAAAAAAAAAAAAAAAI5GY1MFF99FtkolNEmRCOTiqLIC0Cmv8vtxxmCY="
    assert decrypt(data, key, SCOPE) == b"---\ntitle: x\n"
    assert derive_passphrase_key("pw", SCOPE, 1000).hex()[:16] == "7705e86e129b8777"


def test_fixture_files_decrypt(store):
    rows = list(Memory.select().where(Memory.scope_sensitive == 1))
    assert len(rows) == 38
    for row in rows:
        assert store.read_doc(row.body_path).frontmatter.slug == row.slug


def test_damage_wrong_scope_and_wrong_key_are_clean_errors(store, fixture_root):
    """Every bit flipped, every truncation, garbage appended, another scope: one clean error, no plaintext."""
    row = min(
        Memory.select().where(Memory.scope_sensitive == 1), key=lambda r: (fixture_root / r.body_path).stat().st_size
    )
    data = (fixture_root / row.body_path).read_bytes()
    key = store.keys.key_for(row.scope_hash)
    raw = base64.b64decode(data)
    for bit in range(len(raw) * 8):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(DecryptionFailed):
            decrypt(base64.b64encode(bytes(flipped)), key, row.scope_hash)
    for cut in range(len(data)):
        with pytest.raises(DecryptionFailed):
            decrypt(data[:cut], key, row.scope_hash)
    with pytest.raises(DecryptionFailed):
        decrypt(data + b"garbage", key, row.scope_hash)
    with pytest.raises(DecryptionFailed, match="another scope"):
        decrypt(data, key, "91c2073b561e")


def test_wrong_passphrase_is_reported_as_such(fixture_root):
    data = next(fixture_root.glob(f"scopes/{SCOPE}/*/*.md.enc")).read_bytes()
    ring = KeyRing(passphrase="not-the-passphrase")
    with pytest.raises(KeyUnavailable, match="wrong passphrase"):
        ring.verify(SCOPE, lambda key: decrypt(data, key, SCOPE))
    ring.set_passphrase("engram-fixture-passphrase-2026")
    ring.verify(SCOPE, lambda key: decrypt(data, key, SCOPE))


def test_no_passphrase_means_locked_not_fallback():
    with pytest.raises(KeyUnavailable, match="MEMORYD_MASTER_PASSPHRASE"):
        KeyRing().key_for(SCOPE)


def test_scope_hash_is_memoryds_rule(tmp_path):
    import hashlib

    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "src").mkdir()
    expected = hashlib.sha1(str((tmp_path / "proj").resolve()).encode()).hexdigest()[:12]
    assert scope_hash_for(tmp_path / "proj" / "src") == expected
