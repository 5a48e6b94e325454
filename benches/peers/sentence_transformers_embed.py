"""Embed texts with sentence-transformers, the reference implementation, and time it.

Used by crates/embed/benches/embed_throughput.rs as the peer: same model folder, same texts,
same thread count. Prints one JSON line: {"seconds", "chunks", "tokens", "threads", "batch_size"}.
Tokens are counted with the model's tokenizer after truncation, special tokens included.

    python sentence_transformers_embed.py --model DIR --texts FILE.jsonl --threads 2 --batch-size 32
"""

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="sentence-transformers model folder")
    parser.add_argument("--texts", required=True, help="JSON lines, one {\"text\": ...} each")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dump", help="write the embeddings of the first --dump-count texts here")
    parser.add_argument("--dump-count", type=int, default=64)
    args = parser.parse_args()

    import torch

    # Threads must be fixed before the first op creates torch's pools.
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from sentence_transformers import SentenceTransformer

    with open(args.texts, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]

    model = SentenceTransformer(args.model, device="cpu")
    model.eval()
    # `preprocess` replaced `tokenize` in sentence-transformers 6; accept either.
    tokenize = getattr(model, "preprocess", None) or model.tokenize
    tokens = int(tokenize(texts)["attention_mask"].sum())
    with torch.inference_mode():
        model.encode(texts[: args.batch_size], batch_size=args.batch_size)  # warm-up
        start = time.perf_counter()
        vectors = model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
        seconds = time.perf_counter() - start

    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            json.dump([v.tolist() for v in vectors[: args.dump_count]], f)

    print(
        json.dumps(
            {
                "seconds": seconds,
                "chunks": len(texts),
                "tokens": tokens,
                "threads": torch.get_num_threads(),
                "batch_size": args.batch_size,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
