"""The functional core: the RAGonite pipeline, one sub-package per stage, in the paper's order.

    types.py, protocols.py   the small shared types (Page, Evidence, Hit, Answer, …) and every interface
    ingest/     page → evidence: storage format, macros, table linearization, contextualization, extraction
    complete/   a follow-up becomes a self-contained question (offline history rewrite, or an LLM), from
                the history one builder makes
    retrieve/   BM25 terms, hybrid retrieval: lexical + dense + page-level, weighted RRF, optional re-ranking
    answer/     cited answers or an honest "not found": the LLM answerer, the offline extractive one, citations
    attribute/  counterfactual attribution (Explain) and its result
    pipeline.py complete → retrieve → answer, with a trace;  chat.py, prompts.py: what the LLM stages share

Pure: no storage, network or model library is imported here (tests/test_layout.py checks). The adapters that
meet the Protocols live beside it: `threadwise.index` (Chroma, bm25s), `threadwise.models` (embedders,
re-rankers, the OpenAI client).
"""
