"""One query's vector at the model's own speed: its transformer traced and frozen once, checked against `encode`.

sentence-transformers' `encode` spends about as long in Python (batching, device moves, per-module calls)
as the 6-layer model spends computing for a one-line prompt. For the models that are a transformer, mean
pooling and a normalisation (the default MiniLM among them), the warm service traces the transformer with
TorchScript once, freezes it for inference, and runs a single text through it: the same tokenizer, the
same pooling, the same vector (checked at start against `encode` on probe texts; any difference beyond
float rounding, any other architecture, or any failure leaves `encode` in charge).
"""

from __future__ import annotations

import warnings
from typing import Any

# Probe texts for the check: a short prompt, a long one (truncated at the model's limit), one with
# punctuation and an identifier. The traced model must give the vectors `encode` gives, within TOLERANCE.
PROBES = (
    "how did we fix the flaky integration tests last time",
    "Always pin exact versions in requirements files; KX-4471 broke the build. " * 40,
    "  Which   painting did he finish last summer?  ",
)
TOLERANCE = 1e-4


class QuickQuery:
    """`vector(text)`: a float32 numpy vector of `text`, L2-normalised, as `model.encode` gives it."""

    def __init__(self, model: Any) -> None:
        import torch

        self.torch = torch
        self.transformer = model[0]
        features = self._features(PROBES[0])
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python branches (checked below)
            traced = torch.jit.trace(
                self.transformer.auto_model.eval(),
                (features["input_ids"], features["attention_mask"]),
                strict=False,
            )
            self.traced = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))

    def _features(self, text: str) -> dict[str, Any]:
        # the module's own tokenizing (its stripping, casing and truncation): `preprocess` in sentence-transformers 5
        prepare = getattr(self.transformer, "preprocess", None) or self.transformer.tokenize
        return prepare([text])

    def vector(self, text: str) -> Any:
        torch = self.torch
        features = self._features(text)
        with torch.inference_mode():
            out = self.traced(features["input_ids"], features["attention_mask"])
            tokens = out[0] if isinstance(out, (tuple, list)) else out["last_hidden_state"]
            mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)[0].numpy()


def build(model: Any) -> QuickQuery | None:
    """A `QuickQuery` for `model` when it is a plain transformer + mean pooling + normalisation and the traced
    copy gives `encode`'s vectors on the probes; else None (the caller keeps using `encode`)."""
    try:
        import numpy as np

        modules = [type(module).__name__ for module in model]
        if modules != ["Transformer", "Pooling", "Normalize"]:
            return None
        pooling = model[1].get_config_dict()
        mode = pooling.get("pooling_mode") or ("mean" if pooling.get("pooling_mode_mean_tokens") else None)
        if mode != "mean":
            return None
        quick = QuickQuery(model)
        for text in PROBES:
            want = model.encode([text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)[0]
            if float(np.abs(quick.vector(text) - want).max()) > TOLERANCE:
                return None
        return quick
    except Exception:  # tracing is an optimisation: any failure leaves `encode` in charge
        return None
