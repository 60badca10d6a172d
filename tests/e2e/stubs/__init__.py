"""Local stand-ins for the agents' model APIs (127.0.0.1 only): each logs every request and answers from a script."""
