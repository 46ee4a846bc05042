"""In-process look at the answerer over benchmarks/answers.py's questions (no
server, no MCP): for each question the evidence gathered, scored, and what
select() would quote with a threshold fitted on the fit half, as answers.py
fits it. Faster to iterate on than the benchmark; the benchmark's figures are
the ones that count.

    .venv/bin/python benchmarks/answers_probe.py [--show misses|notcited|offtopic|all]

Each shown question is marked A (answered), F (first quote gold), C (cited
right), T (gold in the retriever's top 5), with the indexes of the units
select() chose.
"""

import argparse
import json
import pickle
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answers  # noqa: E402
import stack  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--show", default="none")
    parser.add_argument("--dump")
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--ask", nargs=2, metavar=("CHANNEL", "QUESTION"))
    args = parser.parse_args()
    stack.boot("answers", EMBEDDING_THREADS="0")
    from documents.generation import evidence
    from documents.generation.extractive import ExtractiveGenerator
    from documents.generation.service import evidence_chunks

    channels = answers.build_channels(False)
    questions = json.loads(answers.QUESTIONS.read_text())["questions"]
    if args.ask:
        question = args.ask[1]
        chunks = evidence_chunks(channels[args.ask[0]], question)
        for index, item in enumerate(evidence.gather(question, chunks)[:12]):
            print(
                f"#{index:<2} {item.score:.3f} rel {evidence.relevance(item):.2f}"
                f" sem {item.semantic:.2f} lex {item.lexical:.2f}"
                f" tit {item.title:.2f} typ {item.typed:.2f} r{item.rank:<2}"
                f" {item.sentence.kind[:4]} {item.text[:160]!r}"
            )
        return 0
    answers.gold_pages(channels, questions)
    answers.retriever_top5(channels, questions)
    rows = []
    for q in questions:
        chunks = evidence_chunks(channels[q["channel"]], q["question"])
        items = evidence.gather(q["question"], chunks)
        gold = [answers.normalise(g) for g in q.get("gold", [])]
        for item in items:
            item.gold = any(g in answers.normalise(item.text) for g in gold)
            item.gold_page = item.key in q.get("gold_pages", set())
        rows.append((q, chunks, items))
    threshold = (
        args.threshold
        if args.threshold is not None
        else answers.fit_threshold(channels, questions)
    )
    print(f"threshold {threshold:.3f}")
    generator = ExtractiveGenerator(min_score=threshold)
    for name in (answers.HELD_OUT, answers.FIT):
        on = off = answered = first = cited = top5 = refused = 0
        lengths = []
        for q, _, items in rows:
            if answers.half(q) != name:
                continue
            chosen = evidence.select(
                items, min_score=threshold, max_chars=generator.max_chars
            )
            if q.get("off_topic"):
                off += 1
                refused += not chosen
                continue
            on += 1
            top5 += q["top5"]
            picked = [i for i, it in enumerate(items) if any(it is c for c in chosen)]
            q["_marks"] = (
                ("A" if any(c.gold for c in chosen) else "-")
                + ("F" if chosen and chosen[0].gold else "-")
                + ("C" if any(c.gold_page for c in chosen) else "-")
                + ("T" if q["top5"] else "-")
                + f" chose {picked}"
            )
            answered += any(c.gold for c in chosen)
            first += bool(chosen) and chosen[0].gold
            cited += any(c.gold_page for c in chosen)
            lengths.append(
                sum(len(c.text) + evidence.LABEL_CHARS for c in chosen) or 60
            )
        print(
            f"{name:9} answered {answered}/{on} first {first}/{on} cited {cited}/{on}"
            f" top5 {top5}/{on} refused {refused}/{off}"
            f" median {statistics.median(lengths):.0f}"
        )
    for label, offtopic in (("off-topic", True), ("on-topic", False)):
        for name in (answers.FIT, answers.HELD_OUT):
            best = sorted(
                max((evidence.relevance(i) for i in items), default=0.0)
                for q, _, items in rows
                if bool(q.get("off_topic")) == offtopic and answers.half(q) == name
            )
            shown = best[-6:] if offtopic else best[:8]
            print(f"{label} {name}: " + " ".join(f"{b:.3f}" for b in shown))
    for q, _, items in rows:
        if args.show == "none" or (args.show == "offtopic") != bool(q.get("off_topic")):
            if args.show != "all":
                continue
        if args.show == "misses" and items and items[0].gold:
            continue
        if args.show == "notcited" and q.get("_marks", "---C")[2] == "C":
            continue
        print(
            f"\n[{q['channel']} {answers.half(q)}] {q['question']}"
            f"  {q.get('_marks', '')}"
        )
        golds = [(i, it) for i, it in enumerate(items) if it.gold]
        shown = list(enumerate(items[:6]))
        if golds and golds[0][0] >= 6:
            shown.append(golds[0])
        for index, item in shown:
            print(
                f"  {'G' if item.gold else ' '}#{index:<2} {item.score:.3f}"
                f" rel {evidence.relevance(item):.2f} sem {item.semantic:.2f}"
                f" lex {item.lexical:.2f} tit {item.title:.2f} typ {item.typed:.2f}"
                f" r{item.rank:<2} {item.sentence.kind[:4]} {item.text[:140]!r}"
            )
    if args.dump:
        for _, _chunks, items in rows:
            for item in items:
                item.page = None
        with open(args.dump, "wb") as handle:
            pickle.dump(
                [
                    (q, [(c.chunk_id, c.text[:200]) for c in ch], items)
                    for q, ch, items in rows
                ],
                handle,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
