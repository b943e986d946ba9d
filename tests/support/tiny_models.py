"""Tiny BGE-M3-shaped model folders (random XLM-RoBERTa weights, a small WordPiece vocabulary), built on the
spot: the real weights cannot be downloaded here, but FlagEmbedding's loaders and our adapters can be driven
through the same `from_pretrained(folder)` path a production model folder takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPUS = ["the tpm version is 2.0", "dell optiplex bios 1.14.0", "vacation days per year", "on call policy"]


def build_tiny_models(folder: Path) -> tuple[Path, Path]:
    """Write an embedding model folder and a re-ranker folder under `folder`; returns (embedder, reranker)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        XLMRobertaConfig,
        XLMRobertaForSequenceClassification,
        XLMRobertaModel,
    )

    torch.manual_seed(0)
    tokenizer = Tokenizer(models.WordPiece(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tokenizer.train_from_iterator(
        CORPUS * 10, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials)
    )
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
    )
    config: dict[str, Any] = dict(
        vocab_size=fast.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    embedder_dir, reranker_dir = folder / "tiny-bge-m3", folder / "tiny-bge-reranker"
    XLMRobertaModel(XLMRobertaConfig(**config)).save_pretrained(embedder_dir)
    XLMRobertaForSequenceClassification(XLMRobertaConfig(**{**config, "num_labels": 1})).save_pretrained(
        reranker_dir
    )
    for target in (embedder_dir, reranker_dir):
        fast.save_pretrained(target)
    return embedder_dir, reranker_dir
