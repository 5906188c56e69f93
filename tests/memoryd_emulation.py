"""memoryd's documented writes, emulated so the coexistence tests run on a machine without memoryd: its audit
append and verify rule, its status flip on a decision, its Codex mirror, and its ``rebuild-index``. Each follows
memoryd's code path as its source has it (checked against the real memoryd by the peer scripts)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from engram.migrations import migration_files
from engram.store.audit.chain import GENESIS
from engram.store.domain import MemoryType
from engram.store.frontmatter import Frontmatter, MemoryDoc, parse, serialize
from engram.store.paths import scope_hash_for
from engram.store.write.change import memory_row


def memoryd_hash_for_chain(event: dict) -> str:
    """memoryd's ``_hash_for_chain``, as its code has it (not engram's, which the tests hold to it)."""
    payload = {k: v for k, v in event.items() if k != "prev_hash"}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def memoryd_verify_chain(path: Path) -> tuple[bool, int]:
    """memoryd's ``verify_chain`` rule, as its code has it: blank lines skipped, prev_hash only, first break."""
    expected = GENESIS
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            return False, i
        if event.get("prev_hash") != expected:
            return False, i
        expected = memoryd_hash_for_chain(event)
    return True, -1


def memoryd_append(path: Path, event: dict) -> None:
    """memoryd's ``append_event``: flock, link to the last non-blank line (zeros when it cannot be read or
    hashed), write whatever dict it is given, right after whatever the file ends with (a torn tail included)."""
    with path.open("a+", encoding="utf-8") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        last = ""
        for line in fh:
            if line.strip():
                last = line.strip()
        try:
            prev = memoryd_hash_for_chain(json.loads(last)) if last else GENESIS
        except (json.JSONDecodeError, UnicodeEncodeError):  # memoryd: "corrupt prior line → reset chain"
            prev = GENESIS
        fh.seek(0, 2)
        fh.write(json.dumps({"ts": "2026-11-20T12:00:00+00:00", **event, "prev_hash": prev}, ensure_ascii=False) + "\n")


def memoryd_proposes(
    root: Path,
    scope: str = "710d5aaf7a15",
    dura: float = 0.75,
    title: str = "Deploys go out on Tuesdays",
    body: str = "body",
    triggers: tuple[str, ...] = (),
) -> int:
    """memoryd's hook proposing a promotion, on its own connection; returns its id."""
    con = sqlite3.connect(root / "index.db", timeout=30)
    session = con.execute("SELECT slug FROM memories LIMIT 1").fetchone()[0]
    score = json.dumps({"D": dura, "U": dura, "R": dura, "A": dura})
    cur = con.execute(
        "INSERT INTO promotions (source_session_slug, proposed_type, proposed_title, proposed_body, proposed_triggers,"
        " dura_score, scope_hash, created_at) VALUES (?, 'fact', ?, ?, ?, ?, ?, '2026-11-23T10:00:00+00:00')",
        (session, title, body, json.dumps(list(triggers)), score, scope),
    )
    con.commit()
    con.close()
    return cur.lastrowid or 0


def memoryd_decides(root: Path, pid: int, status: str) -> None:
    """memoryd's approve/reject: flips the status, no questions asked."""
    con = sqlite3.connect(root / "index.db", timeout=30)
    con.execute("UPDATE promotions SET status = ? WHERE id = ?", (status, pid))
    con.commit()
    con.close()


def memoryd_approve(root: Path, pid: int) -> None:
    """memoryd's ``approve_promotion``: flip the status to approved unconditionally, commit, then save the
    memory ``promoted-<id>-<session>`` (its file, then its index row)."""
    con = sqlite3.connect(root / "index.db")  # memoryd's default 5 s busy timeout
    row = con.execute(
        "SELECT source_session_slug, proposed_type, proposed_title, proposed_body, proposed_triggers, "
        "scope_hash FROM promotions WHERE id = ?",
        (pid,),
    ).fetchone()
    con.execute("UPDATE promotions SET status='approved' WHERE id = ?", (pid,))
    con.commit()
    con.close()
    session, mtype, title, body, triggers, scope = row
    slug = f"promoted-{pid}-{session}"
    fm = Frontmatter(
        title=title or slug,
        slug=slug,
        type=MemoryType(mtype) if mtype in MemoryType._value2member_map_ else MemoryType.DECISION,
        scope_hash=scope,
        triggers=[str(t) for t in json.loads(triggers)],
        source="promotion",
        created_at=datetime.now(UTC),
        promoted_from=session,
    )
    memoryd_saves(root, MemoryDoc(frontmatter=fm, body=body))


def memoryd_saves(root: Path, doc: MemoryDoc) -> None:
    """memoryd's ``save``: the file in its scope's type folder, then its index row."""
    folder = root / "scopes" / doc.frontmatter.scope_hash / doc.frontmatter.type.dir_name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{doc.frontmatter.slug}.md"
    path.write_bytes(serialize(doc))
    index_row = memory_row(doc, str(path.relative_to(root)))
    con = sqlite3.connect(root / "index.db")
    con.execute(
        f"INSERT OR REPLACE INTO memories ({', '.join(index_row)}) VALUES ({', '.join('?' * len(index_row))})",
        list(index_row.values()),
    )
    con.commit()
    con.close()


def memoryd_mirrors_codex_summary(root: Path, summary: Path) -> str:
    """memoryd's Codex mirror (``transcode_rollout``) on one rollout summary: the ``key: value`` header kept as a
    fenced block above the body, the title from the first heading, the slug from the date and the sanitised
    file stem. Returns the slug."""
    head, _, body = summary.read_text(encoding="utf-8").partition("\n\n")
    header = dict(line.split(": ", 1) for line in head.splitlines())
    updated = datetime.fromisoformat(header["updated_at"].replace("Z", "+00:00"))
    slug = f"{updated:%Y-%m-%d}-{re.sub(r'[^A-Za-z0-9_-]', '_', summary.stem)[:80]}"
    title = re.search(r"^#\s+(.+)$", body, re.MULTILINE)
    fm = Frontmatter(
        title=title.group(1).strip() if title else summary.stem,
        slug=slug,
        type=MemoryType.SESSION,
        scope_hash=scope_hash_for(header["cwd"]),
        source="codex-rollout",
        created_at=updated,
    )
    block = "\n".join(f"{k}: {v}" for k, v in header.items())
    memoryd_saves(root, MemoryDoc(frontmatter=fm, body=f"```codex-rollout-header\n{block}\n```\n\n{body}"))
    return slug


def memoryd_reject(root: Path, pid: int) -> None:
    """memoryd's ``reject_promotion`` (the digest's path): the status flipped, whatever it was."""
    con = sqlite3.connect(root / "index.db")
    con.execute("UPDATE promotions SET status='rejected' WHERE id = ?", (pid,))
    con.commit()
    con.close()


def memoryd_sweeps(root: Path, slugs: list[str], state: str) -> None:
    """memoryd's decay sweep (``governance/decay.py``) as it moves a memory on: ``update_decay_state`` on the
    index row, never the frontmatter."""
    con = sqlite3.connect(root / "index.db")
    con.executemany("UPDATE memories SET decay_state = ? WHERE slug = ?", [(state, slug) for slug in slugs])
    con.commit()
    con.close()


def memoryd_forgets(root: Path, slug: str) -> None:
    """The last step of memoryd's sweep: ``shutil.move`` of the file to ``scopes/<scope>/forgotten/``, then the
    row's ``body_path`` updated (the frontmatter is not touched)."""
    con = sqlite3.connect(root / "index.db")
    (rel, scope) = con.execute("SELECT body_path, scope_hash FROM memories WHERE slug = ?", (slug,)).fetchone()
    src = root / rel
    dest = root / "scopes" / scope / "forgotten" / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(src, dest)
    con.execute("UPDATE memories SET body_path = ? WHERE slug = ?", (dest.relative_to(root).as_posix(), slug))
    con.commit()
    con.close()


def memoryd_rebuild_index(root: Path) -> None:
    """memoryd's ``rebuild_index``: unlink index.db, open a new one with its migrations, index every ``*.md``."""
    (root / "index.db").unlink()  # only index.db: its -wal and -shm stay where they are
    con = sqlite3.connect(root / "index.db")
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("CREATE TABLE IF NOT EXISTS _schema_migrations (filename TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, sql in migration_files(engram=False):
        con.executescript(sql + ("\nPRAGMA journal_mode = WAL;" if name.startswith("001") else ""))  # as memoryd's 001
        con.execute("INSERT INTO _schema_migrations VALUES (?, datetime('now'))", (name,))
    for md in sorted((root / "scopes").rglob("*.md")):
        rel = str(md.relative_to(root))
        try:
            doc = parse(md.read_bytes(), rel)
        except Exception:  # memoryd counts it as an error and goes on
            continue
        row = memory_row(doc, rel)
        row["scope_sensitive"] = 0
        con.execute(
            f"INSERT OR REPLACE INTO memories ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
        for trigger in doc.frontmatter.triggers:
            con.execute("INSERT OR IGNORE INTO triggers VALUES (?, ?)", (doc.frontmatter.slug, trigger))
    con.commit()
    con.close()


def memoryd_load_failures(root: Path, passphrase: str, kdf_iters: int = 600_000) -> list[str]:
    """memoryd's ``load_session`` on every memory file: a ``.md`` is read as UTF-8 and parsed; a ``.md.enc`` needs
    an index row naming it (memoryd looks its scope up there) and must decrypt under the passphrase-mode key of
    that scope. Returns what would fail, with why."""
    import base64

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from engram.store.sensitive.crypto import derive_passphrase_key

    failures, keys = [], {}
    con = sqlite3.connect(root / "index.db")
    for path in sorted((root / "scopes").glob("*/*/*")):
        rel = str(path.relative_to(root))
        if ".engram-tmp-" in path.name or not path.name.endswith((".md", ".md.enc")):
            continue
        try:
            if path.name.endswith(".md.enc"):
                row = con.execute(
                    "SELECT scope_hash FROM memories WHERE body_path LIKE ?", (f"%{path.name}",)
                ).fetchone()
                if row is None:
                    raise LookupError("no index row names it")
                key = keys.setdefault(row[0], derive_passphrase_key(passphrase, row[0], kdf_iters))
                raw = base64.b64decode(path.read_bytes())
                data = AESGCM(key).decrypt(raw[:12], raw[12:], row[0].encode())
            else:
                data = path.read_bytes()
            parse(data, rel)
        except Exception as exc:  # memoryd reports any failure to load the file
            failures.append(f"{rel}: {exc}")
    con.close()
    return failures


def memoryd_updates(
    root: Path, slug: str, *, body: str | None = None, title: str | None = None, at: datetime | None = None
) -> None:
    """memoryd's ``mem_update`` (``memory_tools.update``): the file rewritten in place with the new fields, then
    its index row; nothing of the old text is kept."""
    con = sqlite3.connect(root / "index.db")
    (rel,) = con.execute("SELECT body_path FROM memories WHERE slug = ?", (slug,)).fetchone()
    con.close()
    doc = parse((root / rel).read_bytes(), rel)
    when = at or datetime.now(UTC)
    fm = doc.frontmatter.model_copy(update={"title": title or doc.frontmatter.title, "updated_at": when})
    memoryd_saves(root, MemoryDoc(frontmatter=fm, body=doc.body if body is None else body))


def memoryd_merges(root: Path, keep: str, drops: list[str]) -> None:
    """memoryd's ``merge_memories``: each dropped memory's body appended to the kept one under ``## merged-from``,
    the dropped files unlinked and their rows deleted, then the kept one saved."""
    con = sqlite3.connect(root / "index.db")
    marks = ", ".join("?" * (1 + len(drops)))
    rows = dict(con.execute(f"SELECT slug, body_path FROM memories WHERE slug IN ({marks})", [keep, *drops]))
    kept = parse((root / rows[keep]).read_bytes(), rows[keep])
    parts, triggers = [kept.body.rstrip()], list(kept.frontmatter.triggers)
    for drop in drops:
        dropped = parse((root / rows[drop]).read_bytes(), rows[drop])
        parts.append(f"\n\n## merged-from {drop}\n\n{dropped.body}")
        triggers += [t for t in dropped.frontmatter.triggers if t not in triggers]
        (root / rows[drop]).unlink()
        con.execute("DELETE FROM memories WHERE slug = ?", (drop,))
    con.commit()
    con.close()
    fm = kept.frontmatter.model_copy(update={"triggers": triggers})
    memoryd_saves(root, MemoryDoc(frontmatter=fm, body="\n".join(parts)))


def memoryd_sync_imports(root: Path, sync_dir: Path) -> int:
    """memoryd's ``sync import``: each file of the sync folder copied over the local one; a local file that
    differs is first copied to ``scopes/_conflicts/<name>-<fp8>``; then ``rebuild_index``. Returns the conflicts."""
    conflicts = 0
    for src in sorted((sync_dir / "scopes").rglob("*")):
        if not src.is_file() or not (src.name.endswith(".md") or src.name.endswith(".md.enc")):
            continue
        rel = src.relative_to(sync_dir / "scopes")
        local = root / "scopes" / rel
        if local.exists() and local.read_bytes() != src.read_bytes():
            aside = root / "scopes" / "_conflicts" / f"{rel.name}-{hashlib.sha256(local.read_bytes()).hexdigest()[:8]}"
            aside.parent.mkdir(parents=True, exist_ok=True)
            aside.write_bytes(local.read_bytes())
            conflicts += 1
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(src.read_bytes())
    memoryd_rebuild_index(root)
    return conflicts
