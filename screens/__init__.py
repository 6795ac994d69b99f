"""k3tui's Textual UI: renders SessionState, sends operator intents; never touches SSH, Docker or HTTP."""
