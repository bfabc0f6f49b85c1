#!/usr/bin/env python3
"""Makes corpus.tsv from the tgcontest category set (Apache-2.0, see README.md):
one document a line, `IAB path <TAB> title. text`, each label mapped by labels.tsv,
text cut to MAX_CHARS at a word boundary. Usage: make.py [train.jsonl.gz] > corpus.tsv"""
import gzip
import json
import os
import re
import sys

MAX_CHARS = 600
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/classify/tgcontest/train.jsonl.gz"


def mapping():
    out = {}
    with open(os.path.join(HERE, "labels.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            label, _id, path, _why = line.rstrip("\n").split("\t")
            out[label] = None if path == "-" else path
    return out


def clean(text):
    return re.sub(r"\s+", " ", text).strip()


def cut(text):
    if len(text) <= MAX_CHARS:
        return text
    at = text.rfind(" ", 0, MAX_CHARS)
    return text[: at if at > 0 else MAX_CHARS]


def main():
    paths = mapping()
    with gzip.open(SOURCE, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            path = paths[d["label"]]
            if path is None:
                continue
            title, text = clean(d["title"]), clean(d["text"])
            body = f"{title}. {text}" if title and not text.startswith(title) else text
            sys.stdout.write(f"{path}\t{cut(body)}\n")


main()
