#!/usr/bin/env python3
"""Makes the sample ad dictionaries (bind/dicts/*.tsv) from files committed in this repository.

    bind/dicts/make.py            # rewrites direct.tsv, market.tsv and media.tsv here

- media.tsv: every node of the IAB Content Taxonomy 3.1 (multidoc/catalog/), its name as the
  phrase, its id as the category;
- market.tsv: the product-like branches of the same catalog (the Google product taxonomy may
  not be redistributed: see README.md);
- direct.tsv: SYNTHETIC advertisers' phrases: the most frequent two- and three-word runs of
  content words in the sample corpus (multidoc/corpus/tgcontest/corpus.tsv), each with a
  made-up number of advertisers (a hash of the phrase) and the catalog id of the corpus label
  it occurs under most.

Deterministic: the same inputs give the same files. Phrases whose words would stem alike are
kept once (a crude stem, the first 4 letters of each word, so that the loader never sees
two phrases with the same stems).
"""
import collections
import hashlib
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CATALOG = os.path.join(ROOT, "multidoc/catalog/iab-content-taxonomy-3.1.tsv")
CORPUS = os.path.join(ROOT, "multidoc/corpus/tgcontest/corpus.tsv")
STOP_RS = os.path.join(ROOT, "multidoc/src/tokenize/stop.rs")
OUT = os.path.dirname(os.path.abspath(__file__))

# The catalog's tier-1 branches that are products one buys (market).
MARKET_BRANCHES = ["1", "210", "239", "274", "422", "473", "552", "596"]
DIRECT_PHRASES = 600
WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def stop_words():
    text = open(STOP_RS, encoding="utf-8").read()
    words = set()
    for const in re.findall(r'const (?:ENGLISH|RUSSIAN): &str =\s*"(.*?)";', text, re.S):
        words.update(const.replace("\\\n", " ").split())
    return words


def catalog():
    """id -> (parent, name, path)."""
    nodes = {}
    with open(CATALOG, encoding="utf-8") as f:
        for n, line in enumerate(f):
            cols = line.rstrip("\n").split("\t")
            if n < 2 or not cols[0]:
                continue
            tiers = [t for t in cols[3:7] if t]
            nodes[cols[0]] = (cols[1], cols[2], " > ".join(tiers))
    return nodes


def key(words, stop):
    """A crude stem set: the first 4 letters of each content word (hyphens and apostrophes
    split words, as the tokenizer does)."""
    parts = re.split(r"[\s'’-]+", " ".join(words).lower().replace("ё", "е"))
    return tuple(w[:4] for w in parts if len(w) > 1 and w not in stop)


def header(kind, what):
    return (
        f"#focuser-dictionary 1 kind={kind}\n"
        f"# {what}\n# Made by bind/dicts/make.py; see bind/dicts/README.md. Do not edit by hand.\n"
    )


def catalog_lines(nodes, stop, keep):
    seen, lines = set(), []
    for cid, (_, name, _) in nodes.items():
        if not keep(cid):
            continue
        words = WORD.findall(name)
        content = [w for w in words if w.lower() not in stop and len(w) > 1]
        k = key(content, stop)
        if not content or len(words) > 8 or k in seen:
            continue
        seen.add(k)
        lines.append(f"{name}\t{cid}\n")
    return lines


def in_branch(nodes, cid, branches):
    while cid:
        if cid in branches:
            return True
        cid = nodes[cid][0]
    return False


def direct_lines(nodes, stop):
    by_path = {path: cid for cid, (_, _, path) in nodes.items()}
    counts = collections.Counter()
    labels = collections.defaultdict(collections.Counter)
    with open(CORPUS, encoding="utf-8") as f:
        for line in f:
            label, _, text = line.rstrip("\n").partition("\t")
            for sentence in re.split(r"[.,!?;:«»\"()]", text):
                words = [w.lower() for w in WORD.findall(sentence)]
                for size in (2, 3):
                    for i in range(len(words) - size + 1):
                        run = words[i : i + size]
                        if any(w in stop or len(w) < 4 for w in run):
                            continue
                        phrase = " ".join(run)
                        counts[phrase] += 1
                        labels[phrase][label] += 1
    ranked = sorted(
        (p for p, c in counts.items() if c >= 2), key=lambda p: (-counts[p], p)
    )
    seen, lines = set(), []
    for phrase in ranked:
        k = key(phrase.split(), stop)
        if not k or k in seen:
            continue
        seen.add(k)
        advertisers = 1 + int(hashlib.md5(phrase.encode()).hexdigest()[:8], 16) % 40
        label = labels[phrase].most_common(1)[0][0]
        cid = by_path.get(label)
        lines.append(f"{phrase}\t{advertisers}" + (f"\t{cid}" if cid else "") + "\n")
        if len(lines) == DIRECT_PHRASES:
            break
    return lines


def write(name, text):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    stop = stop_words()
    nodes = catalog()
    media = catalog_lines(nodes, stop, lambda c: True)
    branches = set(MARKET_BRANCHES)
    market = catalog_lines(nodes, stop, lambda c: in_branch(nodes, c, branches))
    direct = direct_lines(nodes, stop)
    write("media.tsv", header("media", "IAB Content Taxonomy 3.1 (CC BY 3.0): every node") + "".join(media))
    write("market.tsv", header("market", "IAB Content Taxonomy 3.1 (CC BY 3.0): product-like branches") + "".join(market))
    write("direct.tsv", header("direct", "SYNTHETIC: corpus word runs with made-up advertiser counts") + "".join(direct))
    print(f"media {len(media)}, market {len(market)}, direct {len(direct)} phrases", file=sys.stderr)


if __name__ == "__main__":
    main()
