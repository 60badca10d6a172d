"""The offline miner's rules, one module per kind of capture, and the headless-Claude miner."""
