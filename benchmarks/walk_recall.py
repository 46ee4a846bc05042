"""How often the HNSW walk misses on real embeddings: SciFact's judged queries.

    .venv/bin/python benchmarks/walk_recall.py [--data ../shared/data/scifact]

On the channel `make bench-scifact` ingested (reused, or ingested first), each
judged query's vector leg without a filter, as searches walk it (the iterative
HNSW scan at WALK_EF_SEARCH), against an exact ranking of every chunk: recall@50
mean, worst query, and how many queries' walks found under a tenth of the exact
50, at a few ef_search values. benchmarks/scale.py measures the same on a
synthetic corpus; this says whether real questions miss as its queries do.
"""

import argparse
from pathlib import Path

import scifact  # sets up Django on the benchmark database
from django.core.management import call_command

from documents.ingestion import embeddings
from documents.models import Document
from documents.search import legs

CHECK = 50
EF_SEARCHES = (40, 100, 200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=scifact.ROOT.parent / "shared" / "data" / "scifact"
    )
    args = parser.parse_args()
    call_command("migrate", verbosity=0, interactive=False)
    corpus, queries, qrels = scifact.load_beir(args.data)
    channel = scifact.prepare_channel(corpus)
    embedder = embeddings.get_embedder()
    scope = legs.Scope(channel, Document.objects.for_channel(channel).ready(), False)
    walk = legs.plan_vector_leg(scope, CHECK)
    exact = legs.VectorPlan(exact=True)
    judged = [queries[qid] for qid in sorted(qrels) if qid in queries]
    vectors = [embedder.embed_query(text) for text in judged]
    expected = [
        {c for c, _ in legs._nearest(scope, v, embedder.model_name, CHECK, exact)}
        for v in vectors
    ]
    print(
        f"SciFact: {len(judged)} judged queries over {scope.size} chunks; vector leg "
        f"unfiltered, recall@{CHECK} of the walk against an exact ranking"
    )
    shipped = legs.WALK_EF_SEARCH
    try:
        for ef_search in EF_SEARCHES:
            legs.WALK_EF_SEARCH = ef_search
            recalls = []
            for vector, exact_ids in zip(vectors, expected, strict=True):
                found = legs._nearest(scope, vector, embedder.model_name, CHECK, walk)
                recalls.append(len({c for c, _ in found} & exact_ids) / len(exact_ids))
            mark = " (shipped)" if ef_search == shipped else ""
            print(
                f"ef_search {ef_search}{mark}: mean {sum(recalls) / len(recalls):.3f} "
                f"worst {min(recalls):.2f}, under 0.1 for "
                f"{sum(r < 0.1 for r in recalls)} queries"
            )
    finally:
        legs.WALK_EF_SEARCH = shipped


if __name__ == "__main__":
    main()
