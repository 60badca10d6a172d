"""What the UserPromptSubmit hook does on its 300 ms path, as one fresh process: recall top-5, print the hook JSON.

Usage: python scripts/prompt_probe.py INDEX_FILE PROMPT [--keyword-only]
Like the hook, it asks the warm service to run the recall (the service holds the model and an
in-memory copy of the vectors) and falls back to a keyword-only recall here. Used by
bench_latency.py; it imports only what a hook may import (no click, rich, yaml or model).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memvault.recall import client


def main(argv: list[str]) -> int:
    started = time.monotonic()
    index_file, prompt = Path(argv[0]), argv[1]
    result = None
    if "--keyword-only" not in argv:
        result = client.recall(str(index_file), prompt, {"k": 5, "budget_ms": 230}, timeout=0.25)
    if result is None:
        from memvault.recall import search

        result = search.recall_file(index_file, prompt, search.Options(k=5, budget_ms=300), None).as_dict()
    context = "\n".join(f"- {h['title']} ({h['path']}): {h['snippet']}" for h in result["hits"])
    output = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context},
        "probe": {"mode": result["mode"], "ms": round((time.monotonic() - started) * 1000, 1),
                  "hits": len(result["hits"]), "reason": result["reason"]},
    }  # fmt: skip
    sys.stdout.write(json.dumps(output) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
