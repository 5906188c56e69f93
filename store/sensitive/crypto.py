"""memoryd's ``.md.enc`` format and the per-scope keys that open it.

File = base64(nonce[12] || AES-256-GCM ciphertext || tag[16]), AAD = scope hash (UTF-8), plaintext = the
whole memory file. Keys are derived once per scope per session and held only in this process's memory
(memoryd re-derives it for every file). They are never written, logged or cached on disk.

The cipher (the ``cryptography`` package) is imported by the first encryption or decryption, not with this module:
the console's first frame only asks which scopes are locked.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from engram.store.errors import DecryptionFailed, KeyUnavailable, WrongKey

NONCE_LEN = 12
TAG_LEN = 16
DEFAULT_KDF_ITERS = 600_000
PASSPHRASE_ENV = "MEMORYD_MASTER_PASSPHRASE"
CONFIRM_ENV = "ENGRAM_CONFIRM_PASSPHRASE"  # the passphrase a second time: a script's "type it again"
PASSPHRASE_SERVICE, PASSPHRASE_USER = "memoryd-master-passphrase", "default"  # memoryd's keyring entry
RANDOM_KEY_SERVICE = "memoryd-scope-key"  # user = scope hash


def derive_passphrase_key(passphrase: str, scope_hash: str, iterations: int = DEFAULT_KDF_ITERS) -> bytes:
    """memoryd's passphrase mode: PBKDF2-HMAC-SHA256, salt = scope hash, 32-byte key."""
    return hashlib.pbkdf2_hmac("sha256", passphrase.encode("utf-8"), scope_hash.encode("utf-8"), iterations, 32)


def encrypt(plaintext: bytes, key: bytes, scope_hash: str, nonce: bytes | None = None) -> bytes:
    """The ``.md.enc`` bytes for ``plaintext``; ``nonce`` is only fixed by known-answer tests."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = nonce if nonce is not None else os.urandom(NONCE_LEN)
    sealed = AESGCM(key).encrypt(nonce, plaintext, scope_hash.encode("utf-8"))
    return base64.b64encode(nonce + sealed)


def decrypt(data: bytes, key: bytes, scope_hash: str, path: str = "") -> bytes:
    """Plaintext of a ``.md.enc``; any damage, wrong key or wrong scope is one clean error, no partial output."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    where = f"{path}: " if path else ""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise DecryptionFailed(f"{where}not valid base64 (truncated or altered)") from None
    if len(raw) < NONCE_LEN + TAG_LEN:
        raise DecryptionFailed(f"{where}too short to be an encrypted memory")
    try:
        return AESGCM(key).decrypt(raw[:NONCE_LEN], raw[NONCE_LEN:], scope_hash.encode("utf-8"))
    except InvalidTag:
        raise DecryptionFailed(
            f"{where}does not authenticate: wrong key, altered, or moved from another scope"
        ) from None


@dataclass
class KeyRing:
    """Scope keys held in memory for this session, derived on first use from memoryd's key source.

    ``key_source`` and ``kdf_iters`` come from memoryd's ``config.toml`` ``[sensitive]``. A passphrase comes
    from ``$MEMORYD_MASTER_PASSPHRASE`` or from :meth:`set_passphrase` (the TUI's masked prompt); there is no
    silent fallback from one source to another.
    """

    key_source: str = "passphrase"
    kdf_iters: int = DEFAULT_KDF_ITERS
    passphrase: str | None = field(default=None, repr=False)
    confirmed: bool = False  # the passphrase was given twice, the same both times (see store.keyproof)
    problem: str | None = None  # memoryd's config cannot be trusted to derive keys: nothing opens (see from_config)
    _keys: dict[str, bytes] = field(default_factory=dict, repr=False)
    _proven: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def from_config(cls, config: object, environ: dict[str, str] | None = None) -> KeyRing:
        """memoryd's ``[sensitive]`` settings, and the passphrase from the environment: given twice
        (``$ENGRAM_CONFIRM_PASSPHRASE`` the same) it counts as typed twice, for scripts.

        A setting of the wrong kind (``kdf_iters = 0``, a string, a table) is never guessed at: a key derived
        with another iteration count than memoryd's would encrypt files memoryd cannot open. The key ring is
        then locked with the reason (``problem``), and everything that needs no key works as usual."""
        env = os.environ if environ is None else environ
        passphrase = env.get(PASSPHRASE_ENV) or None
        confirmed = passphrase is not None and env.get(CONFIRM_ENV) == passphrase
        sensitive = config.get("sensitive", {}) if isinstance(config, dict) else None
        source = sensitive.get("key_source", "passphrase") if isinstance(sensitive, dict) else None
        iters = sensitive.get("kdf_iters", DEFAULT_KDF_ITERS) if isinstance(sensitive, dict) else None
        problem = None
        if not isinstance(sensitive, dict):
            problem = "memoryd's config.toml: [sensitive] is not a table"
        elif not isinstance(source, str):
            problem = f"memoryd's config.toml: [sensitive] key_source = {source!r} is not a name"
        elif not isinstance(iters, int) or isinstance(iters, bool) or iters < 1:
            problem = f"memoryd's config.toml: [sensitive] kdf_iters = {iters!r} is not a positive whole number"
        if problem is not None:
            return cls.locked_by(f"{problem}: sensitive scopes stay locked until it is fixed", passphrase)
        assert isinstance(source, str) and isinstance(iters, int)
        return cls(key_source=source, kdf_iters=iters, passphrase=passphrase, confirmed=confirmed)

    @classmethod
    def locked_by(cls, problem: str, passphrase: str | None = None) -> KeyRing:
        """A key ring that opens nothing, and says why (memoryd's config cannot be read)."""
        return cls(passphrase=passphrase, problem=problem)

    def set_passphrase(self, passphrase: str, *, confirmed: bool = False) -> None:
        """Use ``passphrase`` from now on (``confirmed``: it was typed twice); keys derived from an earlier one are
        forgotten, and nothing is proven under it yet."""
        self.passphrase = passphrase
        self.confirmed = confirmed
        self._keys.clear()
        self._proven.clear()

    def forget(self) -> None:
        """Drop the passphrase and every derived key (lock all scopes again)."""
        self.passphrase = None
        self.confirmed = False
        self._keys.clear()
        self._proven.clear()

    def adopt(self, scope_hash: str, key: bytes) -> None:
        """Use ``key`` for the scope from now on (after a rekey, the scope no longer opens with the old one): a key
        chosen on purpose needs no further proof."""
        self._keys[scope_hash] = key
        self._proven.add(scope_hash)

    def proven(self, scope_hash: str) -> bool:
        """Whether the scope's key was shown this session to be the one its files are under."""
        return scope_hash in self._proven and scope_hash in self._keys

    def mark_proven(self, scope_hash: str) -> None:
        self._proven.add(scope_hash)

    def can_open(self, scope_hash: str) -> bool:
        """Whether this session can read the scope without asking: its key is derived or derivable."""
        if self.problem is not None:
            return False
        return scope_hash in self._keys or (self.key_source == "passphrase" and self.passphrase is not None)

    def key_for(self, scope_hash: str) -> bytes:
        """The scope's key, derived once; raises :class:`KeyUnavailable` when its source has nothing."""
        key = self._keys.get(scope_hash)
        if key is None:
            key = self._load(scope_hash)
            self._keys[scope_hash] = key
        return key

    def verify(self, scope_hash: str, probe: Callable[[bytes], object]) -> None:
        """Check the scope's key against one of its files: a failure means a wrong passphrase, not damage."""
        key = self.key_for(scope_hash)
        try:
            probe(key)
        except DecryptionFailed:
            self._keys.pop(scope_hash, None)
            self._proven.discard(scope_hash)
            raise WrongKey(
                f"wrong passphrase for scope {scope_hash}"
                if self.key_source == "passphrase"
                else f"the OS keyring's key for scope {scope_hash} does not open its files"
            ) from None
        self._proven.add(scope_hash)

    def _stored_passphrase(self, scope_hash: str) -> str:
        """memoryd's second passphrase source, the OS keyring; without either, say what would open the scope."""
        needs = f"scope {scope_hash} needs its key: set {PASSPHRASE_ENV} or unlock it with the passphrase"
        try:
            stored = keyring_password(PASSPHRASE_SERVICE, PASSPHRASE_USER)
        except KeyUnavailable:
            stored = None  # no keyring here: the environment or the prompt are the sources left
        if not stored:
            raise KeyUnavailable(needs)
        return stored

    def _load(self, scope_hash: str) -> bytes:
        if self.problem is not None:
            raise KeyUnavailable(self.problem)
        if self.key_source == "passphrase":
            if self.passphrase is None:
                self.passphrase = self._stored_passphrase(scope_hash)
            return derive_passphrase_key(self.passphrase, scope_hash, self.kdf_iters)
        if self.key_source == "random":
            return _keyring_scope_key(scope_hash)
        raise KeyUnavailable(f"memoryd key_source {self.key_source!r} is not one engram knows")


VERIFIER_TEXT = b"engram: memoryd master passphrase verifier v1"


def seal_verifier(passphrase: str, iterations: int) -> tuple[str, str]:
    """``(salt, sealed)`` proving ``passphrase`` later (see :mod:`engram.store.sensitive.keyproof`): a constant
    encrypted under a key derived with a fresh random salt, which opens under that passphrase only."""
    salt = "engram-verifier-" + os.urandom(16).hex()
    key = derive_passphrase_key(passphrase, salt, iterations)
    return salt, encrypt(VERIFIER_TEXT, key, salt).decode("ascii")


def opens_verifier(passphrase: str, salt: str, iterations: int, sealed: str) -> bool:
    try:
        return (
            decrypt(sealed.encode("ascii"), derive_passphrase_key(passphrase, salt, iterations), salt) == VERIFIER_TEXT
        )
    except (DecryptionFailed, UnicodeEncodeError):
        return False


KEYRING_HELP = (
    "options: install and unlock an OS keyring (GNOME Keyring / KWallet via Secret Service, macOS "
    "Keychain, Windows Credential Locker), set PYTHON_KEYRING_BACKEND to a keyring backend you use, or, "
    "for the passphrase mode, set " + PASSPHRASE_ENV
)


def keyring_password(service: str, user: str) -> str | None:
    """A secret from the OS keyring, or None when it holds none; no usable keyring backend is a
    :class:`KeyUnavailable` naming the options, never a traceback."""
    import keyring
    from keyring.errors import KeyringError

    try:
        return keyring.get_password(service, user)
    except (KeyringError, RuntimeError) as exc:  # NoKeyringError is both
        raise KeyUnavailable(f"no usable OS keyring on this machine ({exc}); {KEYRING_HELP}") from None


NEXT_KEY_SERVICE = "engram-next-scope-key"  # user = scope hash; a rekey's new key until every file is under it


def next_random_scope_key(scope_hash: str) -> bytes:
    """The new random key a rekey moves the scope to, saved in the OS keyring before anything is encrypted with
    it, beside (not over) memoryd's entry, which keeps opening the files not yet done. A key already saved there
    (an interrupted rekey) is reused, so a rerun finishes under the same key."""
    import keyring
    from keyring.errors import KeyringError

    saved = keyring_password(NEXT_KEY_SERVICE, scope_hash)
    if not saved:
        saved = base64.b64encode(os.urandom(32)).decode("ascii")
        try:
            keyring.set_password(NEXT_KEY_SERVICE, scope_hash, saved)
        except (KeyringError, RuntimeError) as exc:
            raise KeyUnavailable(f"could not save the new key in the OS keyring ({exc}); {KEYRING_HELP}") from None
    return _decode_key(keyring_password(NEXT_KEY_SERVICE, scope_hash), scope_hash)  # read back: what is kept


def install_random_scope_key(scope_hash: str, key: bytes) -> None:
    """Make ``key`` the one memoryd reads for the scope (every file is under it now), then drop the rekey's
    own entry; in that order, so a crash between them leaves the key in both places, never in neither."""
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    try:
        keyring.set_password(RANDOM_KEY_SERVICE, scope_hash, base64.b64encode(key).decode("ascii"))
        if _keyring_scope_key(scope_hash) != key:
            raise KeyUnavailable(f"the OS keyring did not keep the new key for scope {scope_hash}")
        try:
            keyring.delete_password(NEXT_KEY_SERVICE, scope_hash)
        except PasswordDeleteError:
            pass  # already gone: an earlier run got this far
    except (KeyringError, RuntimeError) as exc:
        raise KeyUnavailable(f"could not save the new key in the OS keyring ({exc}); {KEYRING_HELP}") from None


def _keyring_scope_key(scope_hash: str) -> bytes:
    """memoryd's random mode keeps each scope's key, base64, in the OS keyring."""
    value = keyring_password(RANDOM_KEY_SERVICE, scope_hash)
    if not value:
        raise KeyUnavailable(f"no key for scope {scope_hash} in the OS keyring (service {RANDOM_KEY_SERVICE!r})")
    return _decode_key(value, scope_hash)


def _decode_key(value: str | None, scope_hash: str) -> bytes:
    try:
        key = base64.b64decode(value or "", validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != 32:
        raise KeyUnavailable(f"the OS keyring's key for scope {scope_hash} is not 32 bytes of base64")
    return key
