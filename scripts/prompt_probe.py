"""What the UserPromptSubmit hook does on its 300 ms path, as one fresh process: recall top-5, print the hook JSON.

Usage: python scripts/prompt_probe.py INDEX_FILE PROMPT [--keyword-only]
Used by bench_latency.py; it imports only what a hook may import (no click, rich, yaml or model).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memvault import client, recall


def main(argv: list[str]) -> int:
    index_file, prompt = Path(argv[0]), argv[1]
    embed = None if "--keyword-only" in argv else client.query_vector
    result = recall.recall_file(index_file, prompt, recall.Options(k=5, budget_ms=300), embed)
    context = "\n".join(f"- {h.title} ({h.path}): {h.snippet}" for h in result.hits)
    output = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context},
        "probe": {"mode": result.mode, "ms": round(result.ms, 1), "hits": len(result.hits), "reason": result.reason},
    }
    sys.stdout.write(json.dumps(output) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
