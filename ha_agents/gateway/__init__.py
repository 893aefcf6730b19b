"""An OpenAI-compatible gateway that records token-faithful episodes of a harness the user already has."""
