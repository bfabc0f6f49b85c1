"""scikit-learn's MultinomialNB and LinearSVC on a split that bench-classify wrote.

Usage: sklearn_baseline.py TRAIN.jsonl TEST.jsonl accuracy|micro-f1
Each line: {"labels": [...], "text": "..."}. Prints one JSON object per model:
{"model": ..., "score": ..., "seconds": ...}. Features: TfidfVectorizer with its defaults
(the configuration of the published figures); MultinomialNB(alpha=0.01), LinearSVC(C=1);
multi-label sets one-vs-rest.
"""
import json
import sys
import time

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score, f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import MultinomialNB
from sklearn.preprocessing import MultiLabelBinarizer
from sklearn.svm import LinearSVC


def load(path):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["text"] for r in rows], [r["labels"] for r in rows]


def main():
    train_path, test_path, metric = sys.argv[1:4]
    xtr, ytr = load(train_path)
    xte, yte = load(test_path)
    models = [
        ("sklearn MultinomialNB", lambda: MultinomialNB(alpha=0.01)),
        ("sklearn MultinomialNB a=1", lambda: MultinomialNB()),
        ("sklearn LinearSVC", lambda: LinearSVC(C=1.0)),
    ]
    for name, make in models:
        t = time.time()
        vec = TfidfVectorizer()
        a = vec.fit_transform(xtr)
        b = vec.transform(xte)
        if metric == "accuracy":
            clf = make().fit(a, [y[0] for y in ytr])
            score = accuracy_score([y[0] for y in yte], clf.predict(b))
        else:
            mlb = MultiLabelBinarizer().fit(ytr + yte)
            clf = OneVsRestClassifier(make()).fit(a, mlb.transform(ytr))
            score = f1_score(mlb.transform(yte), clf.predict(b), average="micro")
        print(json.dumps({"model": name, "score": score, "seconds": time.time() - t}), flush=True)


if __name__ == "__main__":
    main()
